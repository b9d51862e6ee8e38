"""Releases-page helpers: releases and cards as readable tables (headers for people, rounded values, "—" for
missing, user strings literal), the diff, and the downloads (CSV escaped against spreadsheet formulas)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import streamlit as st

from annotator.app.views import MISSING, literal, table
from db import releases
from eval_core.consensus import DECISION_HELP, DECISIONS
from eval_core.ranking.evaluation import averaging

# How each export format is offered; a format the store adds without an entry here is offered by file name.
FORMAT_LABELS = {
    "trec": ("TREC qrels (gains)", "text/plain"),
    "beir": ("BEIR qrels (TSV, gains)", "text/tab-separated-values"),
    "jsonl": ("JSONL (every grade)", "application/x-ndjson"),
    "csv": ("CSV", "text/csv"),
    "card": ("Card (JSON)", "application/json"),
}
# The TREC and BEIR qrels with the grades as judged, offered after the formats.
AS_JUDGED_LABELS = {
    "qrels.as-judged.trec": ("TREC qrels (grades as judged)", "text/plain"),
    "qrels.as-judged.tsv": ("BEIR qrels (TSV, grades as judged)", "text/tab-separated-values"),
}
RELEASE_HEADERS = {
    "version": "Version",
    "rule": "Consensus rule",
    "min_grades": "Min. grades per pair",
    "queries": "Queries",
    "pairs": "Pairs",
    "adjudicated": "Adjudicated",
    "hash": "Content hash",
    "created_by": "Created by",
    "created_at": "Created at",
}


def downloads() -> list[tuple[str, str, str]]:
    """(file name, button label, MIME type) of every release file, in the store's export-format order, then
    the TREC and BEIR qrels with the grades as judged (the default files hold gains: grade − lowest grade)."""
    offered = []
    for fmt, name in releases.EXPORT_FORMATS.items():
        label, mime = FORMAT_LABELS.get(fmt, (name, "application/octet-stream"))
        offered.append((name, label, mime))
    for name in releases.AS_JUDGED_FILES.values():
        label, mime = AS_JUDGED_LABELS.get(name, (name, "application/octet-stream"))
        offered.append((name, label, mime))
    return offered


def _hash(value: Any) -> str:
    """The first 12 hex digits of a content hash (enough to tell releases apart), or "—"."""
    return str(value)[:12] if value else MISSING


def show_releases(listed: Sequence[Any]) -> None:
    """Every release as one readable row: version, rule, size, hash, who and when."""
    rows = []
    for release in listed:
        counts = (release.card or {}).get("counts", {})
        rows.append(
            {
                "version": release.version,
                "rule": release.rule,
                "min_grades": release.min_grades,
                "queries": counts.get("queries"),
                "pairs": counts.get("pairs"),
                "adjudicated": counts.get("adjudicated"),
                "hash": _hash(release.content_hash),
                "created_by": release.created_by,
                "created_at": release.created_at,
            }
        )
    table(pd.DataFrame(rows), RELEASE_HEADERS, {"queries": 0, "pairs": 0, "adjudicated": 0}, width="stretch")


def card_headline(card: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The card's headline figures for metric tiles: size and ordinal α with its CI ("—" when missing)."""
    counts = card.get("counts", {})
    alpha = (card.get("agreement") or {}).get("alpha_ordinal") or {}
    value, ci = alpha.get("value"), alpha.get("ci")

    def count(key: str) -> str:
        return MISSING if counts.get(key) is None else f"{counts[key]:,}"

    return [
        ("Queries", count("queries")),
        ("Pairs", count("pairs")),
        ("Judgments", count("judgments")),
        (
            f"Ordinal α · 95% CI {ci[0]:.2f}–{ci[1]:.2f}" if ci else "Ordinal α",
            "undefined" if value is None else f"{value:.2f}",
        ),
    ]


def grade_distribution(card: Mapping[str, Any], labels: Mapping[int, str]) -> pd.DataFrame:
    """Released labels and individual grades per grade of the scale, each grade with its name."""
    released = card.get("grade_distribution", {})
    grades = card.get("judgment_grade_distribution", {})
    return pd.DataFrame(
        {
            "Grade": [f"{g} · {labels.get(int(g), '')}".rstrip(" ·") for g in released],
            "Released labels": list(released.values()),
            "Individual grades": [grades.get(g, 0) for g in released],
        }
    )


def card_caption(card: Mapping[str, Any], release: Any) -> str:
    """Rule, threshold, guideline versions, author and hash in one Markdown-safe line."""
    versions = ", ".join(map(str, card.get("guideline_versions") or [])) or MISSING
    author = literal(release.created_by) if release.created_by else MISSING
    when = release.created_at.strftime("%Y-%m-%d %H:%M UTC")
    return (
        f"Rule {literal(card.get('rule', release.rule))} · at least {card.get('min_grades', release.min_grades)} "
        f"grade(s) per pair · guideline versions {versions} · created by {author} on {when} · content hash "
        f"{literal(card.get('content_hash', release.content_hash))}"
    )


def averaging_line(card: Mapping[str, Any]) -> str:
    """How the card's run metrics (reliability, how the stored runs moved) were averaged, as plain text; a card
    cut before cards named it used the only averaging there was then: missing queries as zero, trec_eval 10."""
    entry = card.get("averaging")
    if entry:
        return f"Run metrics on this card. {entry['sentence']}"
    return (
        "Run metrics on this card (not recorded: cut before cards named their averaging, when it was always "
        f"this one). {averaging()['sentence']}"
    )


CHANGED_HEADERS = {"query_id": "Query", "fragment_id": "Fragment", "what": "Text changed"}


def show_changed_texts(changed: Mapping[str, Any] | None) -> None:
    """Warn when labelled pairs of the release point at query or fragment text that changed since it was cut
    (its labels judged the old text), listing those pairs; nothing for a release made before hashes were kept."""
    if not changed or not changed.get("pairs"):
        return
    pairs = changed["pairs"]
    st.warning(
        f"{len(pairs):,} labelled pair(s) of this release point at text that changed since it was cut "
        f"({len(changed.get('queries', [])):,} quer(y/ies), {len(changed.get('fragments', [])):,} "
        "fragment(s)): their labels judged the old text. Re-judge them and cut a new release.",
        icon=":material/difference:",
    )
    with st.expander("Pairs whose text changed"):
        frame = pd.DataFrame(pairs, columns=list(CHANGED_HEADERS))
        table(frame, CHANGED_HEADERS)


DIFF_HEADERS = {
    "query_id": "Query",
    "fragment_id": "Fragment",
    "grade": "Grade",
    "old": "Old grade",
    "new": "New grade",
}
MOVE_HEADERS = {"run": "Run", "metric": "Metric", "old": "Old release", "new": "New release", "delta": "Change"}


def show_release_diff(diff: Mapping[str, Any]) -> None:
    """Added / removed / changed labels and how each stored run's headline metrics moved."""
    counts = diff.get("counts", {})
    cols = st.columns(4)
    for col, key in zip(cols, ("added", "removed", "changed", "unchanged"), strict=True):
        col.metric(f"Labels {key}", f"{counts.get(key, 0):,}")
    for key in ("added", "removed", "changed"):
        if diff.get(key):
            shown = len(diff[key])
            with st.expander(f"{key.capitalize()} labels (first {shown:,} of {counts.get(key, shown):,})"):
                frame = pd.DataFrame(diff[key])
                table(frame, {c: h for c, h in DIFF_HEADERS.items() if c in frame.columns})
    moves = [
        {"run": run, "metric": metric, **move}
        for run, metrics in (diff.get("runs") or {}).items()
        for metric, move in metrics.items()
    ]
    if moves:
        st.markdown("**How the stored runs moved**")
        table(pd.DataFrame(moves), MOVE_HEADERS, {"old": 4, "new": 4, "delta": 4})


PROVENANCE_HEADERS = {"provenance": "Labels from", "pairs": "Labels", "share": "Share (%)"}


def policy_line(card: Mapping[str, Any]) -> str:
    """The release's label policy and the model judge's κ with the human consensus, as plain text."""
    policy = card.get("policy")
    if not policy:
        return "Label policy: not recorded (a release made before label policies; its labels are the consensus)."
    words = f"Label policy: {policy['name']}"
    if policy.get("model") is not None:
        kappa = policy.get("model_kappa_quadratic")
        version = policy.get("guideline_version")
        words += (
            f" · model judge {policy['model']}: quadratic κ "
            f"{MISSING if kappa is None else f'{kappa:.2f}'} with the human consensus "
            f"{'on all its grades' if version is None else f'on guideline version {version}'} "
            f"({policy.get('calibration_pairs', 0):,} pairs)"
        )
    if policy.get("threshold") is not None:
        words += f" · threshold {policy['threshold']:.2f}"
    return words + "."


def provenance_frame(card: Mapping[str, Any]) -> pd.DataFrame:
    """Labels per provenance (human consensus, adjudication, reference, model) with their share in %."""
    rows = [
        {
            "provenance": name,
            "pairs": entry.get("pairs"),
            "share": None if entry.get("share") is None else 100 * entry["share"],
        }
        for name, entry in (card.get("provenance") or {}).items()
    ]
    return pd.DataFrame(rows, columns=list(PROVENANCE_HEADERS))


def show_policy(card: Mapping[str, Any]) -> None:
    """The policy line (literal text: a model's name came from a user), the reference base when there is one,
    and the share of each provenance."""
    st.text(policy_line(card))
    base = (card.get("reference") or {}).get("note")
    if base:
        st.text(f"Reference: {base} ({card['reference'].get('pairs', 0)} pairs from the reference).")
    trust = card.get("judge_trust")
    if trust:
        st.text(f"Judge trust ({trust['model']}): {trust['verdict'] or trust.get('reason')}")
    frame = provenance_frame(card)
    if len(frame):
        table(frame, PROVENANCE_HEADERS, {"pairs": 0, "share": 1})


def decision_input(column: Any) -> str:
    """The decision a model rule uses (eval_core.consensus.DECISIONS), chosen in `column` of the release form."""
    return column.selectbox(
        "Model rule's decision",
        DECISIONS,
        help=" · ".join(f"{name}: {text}" for name, text in DECISION_HELP.items()),
    )


def doubt_frame(doubt: Mapping[str, Any]) -> pd.DataFrame:
    """The card's doubtful pairs as a table, least sure first."""
    return pd.DataFrame(
        [(d["query_id"], d["fragment_id"], d["grade"], d["top_posterior"]) for d in doubt["listed"]],
        columns=["Query", "Fragment", "Grade", "Top posterior"],
    )


def show_model_card(card: Mapping[str, Any]) -> None:
    """A model rule's part of the card: the decision, the known truth it used and the doubtful pairs."""
    model = card.get("model")
    if not model:
        return
    doubt, known = model["doubt"], model["known_truth"]
    st.text(
        f"Annotator model {model['rule']}, decision {model['decision']} ({model['decision_means']}); known truth: "
        f"{known['adjudications']} adjudicated pair(s), {known['control_pairs']} control pair(s). "
        f"{doubt['pairs']} pair(s) had a top posterior below {doubt['threshold']:g}"
        + (f" (the first {len(doubt['listed'])} listed)" if doubt["pairs"] > len(doubt["listed"]) else "")
        + "."
    )
    if doubt["listed"]:
        table(doubt_frame(doubt), {c: c for c in ("Query", "Fragment", "Grade", "Top posterior")}, {"Top posterior": 3})
