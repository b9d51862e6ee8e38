"""Versioned, immutable golden sets: consensus over the judgments, a card, files, and diffs between versions."""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from json.encoder import encode_basestring
from pathlib import Path
from typing import Any

import pandas as pd
from sqlalchemy import func, insert, select
from sqlalchemy.engine import Engine
from sqlmodel import Session, col

from db.accounts.permissions import Actor, require_lead
from db.control import control_frames
from db.evaluations import (
    HEADLINE,
    load_release,
    qrels_of,
    run_frame,
    score_run,
    store_evaluation,
)
from db.model_judges import trust_card
from db.projects import project_row, project_scale
from db.reliability import pool_contributions, reliability_card
from db.store.engine import session_scope
from db.store.frames import project_adjudications, project_judgments
from db.store.models import Evaluation as EvaluationRow
from db.store.models import (
    Fragment,
    Guideline,
    Project,
    Query,
    Release,
    Run,
    User,
    pk,
    table_of,
    utcnow,
)
from eval_core.agreement.report import agreement_report
from eval_core.consensus import (
    DECISION_HELP,
    DECISIONS,
    MODEL_RULES,
    PROVENANCES,
    consensus,
    doubt,
    fill_gaps,
    reference_base,
)
from eval_core.io.spreadsheet import escape_cell
from eval_core.io.writers import QrelsGrades, write_atomically
from eval_core.judges.calibration import HumanBaseline, calibration
from eval_core.ranking.evaluation import averaging
from eval_core.thresholds import MODEL_THRESHOLD
from eval_core.vocab import RELEASE_POLICIES, AnnotatorKind

# The release export formats: format → file of the release.
EXPORT_FORMATS = {
    "trec": "qrels.trec",
    "beir": "qrels.tsv",
    "jsonl": "judgments.jsonl",
    "csv": "qrels.csv",
    "card": "card.json",
}


# The TREC and BEIR files written with the grades as judged (release_files keeps both variants).
AS_JUDGED_FILES = {"qrels.trec": "qrels.as-judged.trec", "qrels.tsv": "qrels.as-judged.tsv"}
BOOTSTRAP = 200
DIFF_LISTED = 1000
RELEASE_STEPS = 6


@dataclass(frozen=True)
class ReleaseInfo:
    """A release as callers see it (never a live ORM object)."""

    id: int
    project: str
    version: int
    rule: str
    min_grades: int
    content_hash: str
    card: dict
    created_by: str | None
    created_at: datetime


def render_files(labels: pd.DataFrame, adjudications: pd.DataFrame) -> tuple[str, str]:
    """The canonical TREC qrels and per-pair JSONL of a consensus frame (sorted by query, fragment; `provenance`
    and a model-filled label's `model_judge`, when there, are written last on each line). Lines are
    assembled from C-escaped strings and memoised grade maps, byte-identical to json.dumps(ensure_ascii=False)
    with annotators sorted, and several times faster on a million judgments."""
    adj = {
        (q, f): json.dumps({"grade": int(g), "reason": r, "by": b}, ensure_ascii=False)
        for q, f, g, r, b in adjudications.itertuples(index=False)
    }
    quoted: dict[str, str] = {}
    grade_maps: dict[tuple, str] = {}

    def quote(text: str) -> str:
        out = quoted.get(text)
        if out is None:
            out = quoted[text] = encode_basestring(text)
        return out

    def grade_map(grades: dict) -> str:
        key = tuple(grades.items())
        out = grade_maps.get(key)
        if out is None:
            out = grade_maps[key] = ", ".join(f"{quote(a)}: {'null' if v is None else int(v)}" for a, v in sorted(key))
        return out

    trec, lines = [], []
    columns = (labels[c].tolist() for c in ("query_id", "fragment_id", "grade", "grades", "rule", "adjudicated"))
    sources = labels["provenance"].tolist() if "provenance" in labels.columns else [None] * len(labels)
    posteriors = labels["posterior"].tolist() if "posterior" in labels.columns else [None] * len(labels)
    judges = labels["model_judge"].tolist() if "model_judge" in labels.columns else [None] * len(labels)
    bases = labels["reference"].tolist() if "reference" in labels.columns else [None] * len(labels)
    for q, f, g, grades, rule, adjudicated, source, judge, base, posterior in zip(
        *columns, sources, judges, bases, posteriors, strict=True
    ):
        trec.append(f"{q} 0 {f} {g}\n")
        extra = f', "posterior": {json.dumps(posterior)}' if posterior is not None else ""
        extra += f', "adjudication": {adj[(q, f)]}' if adjudicated else ""
        if source is not None:
            extra += f', "provenance": {quote(source)}'
        if judge is not None:
            extra += f', "model_judge": {quote(judge)}'
        if base is not None:
            extra += f', "reference": {quote(base)}'
        lines.append(
            f'{{"query_id": {quote(q)}, "fragment_id": {encode_basestring(f)}, "grade": {g}, '
            f'"grades": {{{grade_map(grades)}}}, "rule": {quote(rule)}{extra}}}\n'
        )
    return "".join(trec), "".join(lines)


def _content_hash(qrels_trec: str, judgments_jsonl: str) -> str:
    """sha256 over the canonical qrels then the JSONL: equal golden sets have equal hashes."""
    digest = hashlib.sha256(qrels_trec.encode("utf-8"))
    digest.update(judgments_jsonl.encode("utf-8"))
    return digest.hexdigest()


def _agreement(judged: pd.DataFrame, scale: tuple[int, int]) -> dict:
    """Ordinal α with a query-clustered bootstrap CI, plus raw agreement, for the card."""
    report = agreement_report(
        judged[["query_id", "fragment_id", "annotator", "grade"]], scale=scale, bootstrap=BOOTSTRAP, seed=0
    )
    return {
        "alpha_ordinal": report.alpha["ordinal"].to_dict(),
        "raw_agreement": report.raw_agreement.value,
        "n_units": report.n_units,
        "n_annotators": report.n_annotators,
        "bootstrap": BOOTSTRAP,
    }


def _card(
    project: Project, labels: pd.DataFrame, judged: pd.DataFrame, rule: str, min_grades: int, humans: pd.DataFrame
) -> dict:
    """Counts, grade distributions, agreement and guideline versions of the judgments behind the labels; the
    can't-judge count and the pairs left out are over every person's judgment, since a pair whose only
    judgment is a can't-judge gets no label and would vanish from counts over the released pairs."""
    scale = project_scale(project)
    keys = ["query_id", "fragment_id"]
    left_out = humans[keys].drop_duplicates().merge(labels[keys], on=keys, how="left", indicator=True)
    dist = labels["grade"].value_counts()
    individual = judged["grade"].value_counts()
    return {
        "project": project.name,
        "rule": rule,
        "min_grades": min_grades,
        "scale": list(scale),
        "counts": {
            "queries": int(labels["query_id"].nunique()),
            "pairs": len(labels),
            "judgments": len(judged),
            "annotators": int(judged["annotator"].nunique()),
            "adjudicated": int(labels["adjudicated"].sum()),
            "cant_judge": int(humans["grade"].isna().sum()),
            "pairs_left_out": int((left_out["_merge"] == "left_only").sum()),
        },
        "grade_distribution": {str(g): int(dist.get(g, 0)) for g in range(scale[0], scale[1] + 1)},
        "judgment_grade_distribution": {str(g): int(individual.get(g, 0)) for g in range(scale[0], scale[1] + 1)},
        "agreement": _agreement(judged, scale),
        "guideline_versions": sorted(int(v) for v in judged["guideline"].dropna().unique()),
        "qrels_grades": grade_mapping(scale),
    }


def grade_mapping(scale: tuple[int, int]) -> dict:
    """The card's statement of how the exported files write grades: TREC and BEIR as gains (grade − low, every
    grade's gain listed), JSONL and CSV as judged on the named scale."""
    low, high = scale
    return {
        "scale": f"{low}-{high}",
        "trec_beir": "gain = grade - " + str(low),
        "gains": {str(g): g - low for g in range(low, high + 1)},
        "relevant_from_gain": 1,
        "jsonl_csv": f"grades as judged on the scale {low}-{high}",
        "as_judged_files": sorted(AS_JUDGED_FILES.values()),
        "note": f"TREC and BEIR qrels hold gains, so trec_eval, pytrec_eval, ranx and ir-measures with default "
        f"options read grade {low} as not relevant and compute what qrelkit stored; "
        f"{' and '.join(sorted(AS_JUDGED_FILES.values()))} (`qrelkit export --grades as-judged`) keep "
        f"the grades {low}-{high}: evaluate those with `qrelkit eval --scale {low}-{high}`",
    }


def label_diff(old: pd.DataFrame, new: pd.DataFrame, listed: int = DIFF_LISTED) -> dict:
    """Added / removed / changed labels (old → new grade) between two qrels frames, counts and the first few."""
    merged = old.merge(new, on=["query_id", "doc_id"], how="outer", suffixes=("_old", "_new"), indicator=True)
    added = merged[merged["_merge"] == "right_only"]
    removed = merged[merged["_merge"] == "left_only"]
    both = merged[merged["_merge"] == "both"]
    changed = both[both["grade_old"] != both["grade_new"]]

    def items(frame: pd.DataFrame, cols: dict[str, str]) -> list[dict]:
        ordered = frame.sort_values(["query_id", "doc_id"], kind="stable")
        out = ordered[list(cols)].head(listed).rename(columns=cols)
        return [
            {k: (int(v) if k in ("grade", "old", "new") else v) for k, v in r.items()}
            for r in out.to_dict(orient="records")
        ]

    return {
        "counts": {
            "added": len(added),
            "removed": len(removed),
            "changed": len(changed),
            "unchanged": len(both) - len(changed),
        },
        "added": items(added, {"query_id": "query_id", "doc_id": "fragment_id", "grade_new": "grade"}),
        "removed": items(removed, {"query_id": "query_id", "doc_id": "fragment_id", "grade_old": "grade"}),
        "changed": items(
            changed, {"query_id": "query_id", "doc_id": "fragment_id", "grade_old": "old", "grade_new": "new"}
        ),
    }


def _moves(old: dict[str, float], new: dict[str, float], metrics: tuple[str, ...] = HEADLINE) -> dict:
    """How a run's headline means moved between two releases."""
    return {m: {"old": old[m], "new": new[m], "delta": new[m] - old[m]} for m in metrics if m in old and m in new}


def _model_policy(
    policy: str,
    judged: pd.DataFrame,
    humans: pd.DataFrame,
    adjudications: pd.DataFrame,
    scale: tuple[int, int],
    rule: str,
    in_force: int | None,
    threshold: float,
) -> tuple[pd.DataFrame | None, dict]:
    """The policy's card entry (with the best model judge's quadratic κ against the human consensus on the
    guideline version in force, its query-clustered CI, and the humans' own agreement on the same pairs,
    whenever model judges graded) and, under model-fills-gaps, that model's grades (under the version in force)
    for the pairs no person graded. model-fills-gaps needs the CI's lower bound to clear the threshold: it is
    refused below it, and on too few shared queries for an interval, with the reason."""
    entry: dict = {
        "name": policy,
        "model": None,
        "model_kappa_quadratic": None,
        "model_kappa_ci": None,
        "calibration_pairs": 0,
        "calibration_queries": 0,
        "humans_kappa_quadratic": None,
        "humans_alpha_ordinal": None,
        "guideline_version": in_force,
        "threshold": threshold if policy == "model-fills-gaps" else None,
    }
    models = judged[judged["annotator_kind"].eq("model").to_numpy()]
    if models.empty:
        if policy == "model-fills-gaps":
            raise ValueError(
                "model-fills-gaps refused: no model judge has graded this project "
                "(prejudge or import a model's grades first, or release with humans-only)"
            )
        return None, entry
    version = None if in_force is None else str(in_force)
    report = calibration(
        judged,
        scale=scale,
        adjudications=adjudications[["query_id", "fragment_id", "grade"]],
        rule=rule,
        bootstrap=BOOTSTRAP,
        seed=0,
    )
    scored = []
    for m in report.models:
        group = m.guideline(version) if version is not None else None
        comp, baseline = (
            (m.vs_consensus, m.humans)
            if version is None
            else ((group.vs_consensus, group.humans) if group else (None, None))
        )
        kappa = comp.kappa["quadratic"] if comp else None
        lower = kappa.ci[0] if kappa is not None and kappa.ci else None
        scored.append((m.model, kappa, lower, comp, baseline))
    name, kappa, lower, comp, baseline = max(
        scored,
        key=lambda r: (
            r[2] is not None,
            r[2] or 0.0,
            r[1] is not None and r[1].value is not None,
            (r[1].value if r[1] else None) or 0.0,
        ),
    )
    entry.update(
        model=name,
        model_kappa_quadratic=kappa.value if kappa else None,
        model_kappa_ci=list(kappa.ci) if kappa is not None and kappa.ci else None,
        calibration_pairs=comp.n if comp else 0,
        calibration_queries=comp.n_queries if comp else 0,
        humans_kappa_quadratic=baseline.kappa["quadratic"].to_dict() if baseline else None,
        humans_alpha_ordinal=baseline.alpha.to_dict() if baseline else None,
    )
    if policy != "model-fills-gaps":
        return None, entry
    where = "on all its grades" if version is None else f"on guideline version {version} (in force)"
    n, queries = entry["calibration_pairs"], entry["calibration_queries"]
    humans_there = _humans_text(baseline)
    if kappa is None or kappa.value is None:
        raise ValueError(
            f"model-fills-gaps refused: model judge {name}'s quadratic-weighted κ with the human "
            f"consensus {where} is undefined on {n} shared pairs; release with humans-only or "
            "improve the model"
        )
    if lower is None:
        status = comp.ci_status if comp is not None else "no shared pairs"
        raise ValueError(
            f"model-fills-gaps refused: model judge {name}'s quadratic-weighted κ with the human "
            f"consensus {where} is {kappa.value:.2f} on {n} shared pairs, but over {queries} "
            f"quer{'y' if queries == 1 else 'ies'} it has no confidence interval ({status}); "
            f"the gate reads the interval's lower bound, so judge more queries by people and the "
            f"model{humans_there}"
        )
    if lower < threshold:
        assert kappa is not None and kappa.ci is not None  # lower is kappa.ci's first bound
        raise ValueError(
            f"model-fills-gaps refused: model judge {name}'s quadratic-weighted κ with the human "
            f"consensus {where} is {kappa.value:.2f} on {n} shared pairs ({queries} queries), 95% CI "
            f"[{kappa.ci[0]:.2f}, {kappa.ci[1]:.2f}]: its lower bound {lower:.2f} is below the "
            f"threshold {threshold:g}{humans_there}; release with humans-only or improve the model"
        )
    mine = models[(models["annotator"] == name).to_numpy() & models["grade"].notna().to_numpy()]
    if version is not None:
        mine = mine[mine["guideline"].eq(version).to_numpy()]
    graded = humans.loc[humans["grade"].notna(), ["query_id", "fragment_id"]].drop_duplicates()
    gaps = mine.merge(graded, on=["query_id", "fragment_id"], how="left", indicator=True)
    gaps = gaps[(gaps["_merge"] == "left_only").to_numpy()]
    return gaps[["query_id", "fragment_id", "annotator", "grade"]], entry


def _reference_base(judged: pd.DataFrame, rule: str, scale: tuple[int, int]) -> tuple[pd.DataFrame | None, dict]:
    """The reference annotators' grades (e.g. an imported NIST qrels), one per pair by the release's rule, as the
    base every pair no person graded takes; and the card's sentence saying so."""
    base, names = reference_base(judged, rule, scale)
    entry: dict = {"annotators": names, "note": None}
    if base is not None:
        entry["note"] = (
            f"base: the reference grades of {', '.join(names)}; people's grades (and adjudications) are on top — a "
            "pair any person graded takes their consensus, every other pair the reference's grade"
        )
    return base, entry


def _humans_text(baseline: HumanBaseline | None) -> str:
    """`; people on the same pairs: mean pairwise quadratic κ 0.71 [0.52, 0.85], ordinal α 0.69 …` or ""."""
    if baseline is None:
        return ""
    return (
        f"; people on the same pairs: mean pairwise quadratic κ {baseline.kappa['quadratic'].text(2)}, "
        f"ordinal α {baseline.alpha.text(2)} ({baseline.n_pairable} pairs with two human grades)"
    )


def create_release(
    engine: Engine,
    project: str,
    rule: str = "median",
    min_grades: int = 1,
    progress: Callable[[str], None] | None = None,
    *,
    actor: Actor,
    policy: str = "humans-only",
    model_threshold: float = MODEL_THRESHOLD,
    decision: str = "most-probable",
) -> ReleaseInfo:
    """Snapshot the consensus labels as the next version, with card, files, the diff against the previous release,
    and every stored run evaluated against it; the card's `reliability` holds the release's sentence and the
    numbers behind it against the stored runs (db.reliability.reliability_card, resamples bounded). Leads and
    the operator only (a lead is recorded as the author). Reads and computes first; writes in one short
    transaction, refusing if another release appeared meanwhile or the actor lost the right. `progress` is
    called after each of the RELEASE_STEPS stages. The consensus is over people's grades only; `policy`
    model-fills-gaps adds a model judge's grade where no person graded, only when its κ clears `model_threshold`
    (see _model_policy); every label records its provenance. A model rule (dawid-skene, mace, glad) takes the
    control pairs and adjudications as known truth, turns each posterior into a grade by `decision`, writes each
    pair's posterior in the JSONL and names the doubtful pairs on the card."""
    if policy not in RELEASE_POLICIES:
        raise ValueError(f"policy must be one of {', '.join(RELEASE_POLICIES)}, got {policy!r}")
    if decision not in DECISIONS:
        raise ValueError(f"decision must be one of {', '.join(DECISIONS)}, got {decision!r}")
    step = progress or (lambda _label: None)
    with session_scope(engine) as session:
        require_lead(session, actor)
        proj = project_row(session, project)
        scale = project_scale(proj)
        judged = project_judgments(session, pk(proj))
        adjudications = project_adjudications(session, pk(proj))
        in_force = session.execute(
            select(func.max(col(Guideline.version))).where(col(Guideline.project_id) == pk(proj))
        ).scalar()
        humans = judged[judged["annotator_kind"].eq(AnnotatorKind.HUMAN).to_numpy()]
        base, base_entry = _reference_base(judged, rule, scale)
        fills, policy_entry = _model_policy(
            policy, judged, humans, adjudications, scale, rule, in_force, model_threshold
        )
        controls = control_frames(session, pk(proj))[1] if rule in MODEL_RULES else None
        labels = consensus(
            humans,
            rule=rule,
            adjudications=adjudications[["query_id", "fragment_id", "grade"]],
            min_grades=min_grades,
            scale=scale,
            controls=controls,
            decision=decision,
        )
        labels = fill_gaps(labels, fills, rule, base)
        if labels.empty:
            raise ValueError(
                f"project {project!r} has no judged pairs to release "
                f"(rule {rule}, at least {min_grades} grade(s) per pair)"
            )
        previous = session.execute(
            select(Release).where(col(Release.project_id) == pk(proj)).order_by(col(Release.version).desc()).limit(1)
        ).scalar_one_or_none()
        runs = session.execute(
            select(col(Run.id), col(Run.name)).where(col(Run.project_id) == pk(proj)).order_by(col(Run.name))
        ).all()
        run_frames = {r.id: (r.name, run_frame(session, r.id)) for r in runs}
        pooled = pool_contributions(session, pk(proj), [r.name for r in runs])
        text_hashes = _text_hashes(session, pk(proj), labels)
    step("read")
    judged_released = humans
    if len(labels) < len(humans[["query_id", "fragment_id"]].drop_duplicates()):
        judged_released = humans.merge(labels[["query_id", "fragment_id"]], on=["query_id", "fragment_id"])
    qrels_trec, judgments_jsonl = render_files(labels, adjudications)
    step("consensus")
    provenance = labels["provenance"].value_counts()
    card = {
        **_card(proj, labels, judged_released, rule, min_grades, humans),
        "policy": policy_entry,
        "reference": {**base_entry, "pairs": int((labels["provenance"] == "reference").sum())},
        "provenance": {
            p: {"pairs": int(provenance.get(p, 0)), "share": float(provenance.get(p, 0) / len(labels))}
            for p in PROVENANCES
        },
        "model": None
        if rule not in MODEL_RULES
        else {
            "rule": rule,
            "decision": decision,
            "decision_means": DECISION_HELP[decision],
            "known_truth": {
                "adjudications": len(adjudications),
                "control_pairs": 0 if controls is None else len(controls),
            },
            "doubt": doubt(labels),
        },
        "text_hashes": {
            "queries": len(text_hashes["queries"]),
            "fragments": len(text_hashes["fragments"]),
            "note": "the text of every judged query and fragment is hashed; exporting this "
            "release later lists the pairs whose text changed since",
        },
        # how the run metrics below (reliability, how the stored runs moved) were averaged: score_run's defaults
        "averaging": {**averaging(), "applies_to": "the run metrics on this card (reliability, runs moved)"},
    }
    step("card")
    qrels = labels[["query_id", "fragment_id", "grade"]].rename(columns={"fragment_id": "doc_id"})
    results = {rid: score_run(qrels, frame, name, project_scale(proj)) for rid, (name, frame) in run_frames.items()}
    diff: dict[str, Any] = {"previous": None}
    old_results: dict = {}
    if previous is not None:
        old_qrels = qrels_of(previous)
        old_results = {
            rid: score_run(old_qrels, frame, name, project_scale(proj)) for rid, (name, frame) in run_frames.items()
        }
        diff = {
            "previous": previous.version,
            **label_diff(old_qrels, qrels),
            "runs": {run_frames[rid][0]: _moves(old_results[rid].mean, results[rid].mean) for rid in results},
        }
    content_hash = _content_hash(qrels_trec, judgments_jsonl)
    step("evaluate runs")
    number = (previous.version if previous is not None else 0) + 1  # checked again when written
    card["reliability"] = reliability_card(
        qrels, {name: frame for name, frame in run_frames.values()}, pooled, scale, f"release {number} of {project}"
    )
    if policy == "model-fills-gaps":  # judge-trust's verdict on the model whose grades filled the gaps
        card["judge_trust"] = trust_card(engine, project, policy_entry["model"])
    step("reliability")
    with session_scope(engine, write=True) as session:
        author = require_lead(session, actor)
        project_row(session, project, lock=True)
        latest = session.execute(
            select(func.max(col(Release.version))).where(col(Release.project_id) == pk(proj))
        ).scalar()
        if latest != (previous.version if previous is not None else None):
            raise RuntimeError(f"release {latest} of {project!r} was created meanwhile; run the release again")
        version = (latest or 0) + 1
        now = utcnow()
        username = None if author is None else str(actor)
        card = {
            **card,
            "version": version,
            "content_hash": content_hash,
            "created_by": username,
            "created_at": now.isoformat(),
            "diff": diff,
        }
        table = table_of(Release)
        release_id = session.execute(
            insert(table).returning(table.c.id),
            {
                "project_id": pk(proj),
                "version": version,
                "rule": rule,
                "min_grades": min_grades,
                "content_hash": content_hash,
                "card": card,
                "qrels_trec": qrels_trec,
                "judgments_jsonl": judgments_jsonl,
                "text_hashes": text_hashes,
                "created_by_id": author,
                "created_at": now,
            },
        ).scalar_one()
        for rid, result in results.items():
            store_evaluation(session, rid, release_id, result)
        if previous is not None:
            stored = set(
                session.execute(
                    select(col(EvaluationRow.run_id)).where(col(EvaluationRow.release_id) == previous.id)
                ).scalars()
            )
            for rid in old_results.keys() - stored:
                store_evaluation(session, rid, previous.id, old_results[rid])
    step("write")
    return ReleaseInfo(release_id, project, version, rule, min_grades, content_hash, card, username, now)


def _info(session: Session, project: Project, release: Release) -> ReleaseInfo:
    """ReleaseInfo from a row, resolving the author's name."""
    author = None
    if release.created_by_id is not None:
        author = session.execute(select(col(User.username)).where(col(User.id) == release.created_by_id)).scalar_one()
    return ReleaseInfo(
        pk(release),
        project.name,
        release.version,
        release.rule,
        release.min_grades,
        release.content_hash,
        release.card,
        author,
        release.created_at,
    )


def list_releases(engine: Engine, project: str) -> list[ReleaseInfo]:
    """Every release of the project, oldest first."""
    with session_scope(engine) as session:
        proj = project_row(session, project)
        rows = (
            session.execute(select(Release).where(col(Release.project_id) == pk(proj)).order_by(col(Release.version)))
            .scalars()
            .all()
        )
        return [_info(session, proj, r) for r in rows]


def get_release(engine: Engine, project: str, version: int | str = "latest") -> ReleaseInfo:
    """One release by number, or the newest with 'latest'."""
    with session_scope(engine) as session:
        proj = project_row(session, project)
        return _info(session, proj, load_release(session, proj, version))


def _trec(qrels_trec: str, shift: int) -> str:
    """The stored TREC qrels (grades as judged) with every grade lowered by `shift`."""
    if not shift:
        return qrels_trec
    out = []
    for line in qrels_trec.splitlines():
        head, _, grade = line.rpartition(" ")
        out.append(f"{head} {int(grade) - shift}\n")
    return "".join(out)


def _beir(judgments_jsonl: str, shift: int) -> str:
    """BEIR qrels TSV (with its header) from the stored JSONL, which holds any id exactly; grades lowered by
    `shift`."""
    out = ["query-id\tcorpus-id\tscore\n"]
    for line in judgments_jsonl.splitlines():
        r = json.loads(line)
        out.append(f"{r['query_id']}\t{r['fragment_id']}\t{r['grade'] - shift}\n")
    return "".join(out)


def _jsonl(judgments_jsonl: str, scale: tuple[int, int]) -> str:
    """The stored JSONL with the scale named on every line (`"scale": "low-high"`, last), grades as judged."""
    tail = f', "scale": "{scale[0]}-{scale[1]}"}}\n'
    return "".join(line[:-1] + tail for line in judgments_jsonl.splitlines() if line)


def _csv(judgments_jsonl: str, scale: tuple[int, int]) -> str:
    """CSV qrels with the number of grades, whether a lead adjudicated, every annotator's grade (a JSON object,
    so `qrelkit agreement` can read it) and the scale the grades are on, from the stored JSONL; text cells go
    through the spreadsheet escaper (a cell a spreadsheet would run as a formula starts with `'`)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["query_id", "fragment_id", "grade", "n_grades", "adjudicated", "grades", "scale"])
    named = f"{scale[0]}-{scale[1]}"
    for line in judgments_jsonl.splitlines():
        r = json.loads(line)
        n = sum(v is not None for v in r["grades"].values())
        writer.writerow(
            [
                escape_cell(r["query_id"]),
                escape_cell(r["fragment_id"]),
                r["grade"],
                n,
                int("adjudication" in r),
                json.dumps(r["grades"], ensure_ascii=False, sort_keys=True),
                named,
            ]
        )
    return buf.getvalue()


def _query_hash(text: str) -> str:
    """A query text's hash, whitespace-normalised like a fragment's content hash."""
    return hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()


def _current_hashes(session: Session, project_id: int) -> tuple[dict[str, str], dict[str, str]]:
    """Every query's text hash and every fragment's content hash as they are now, by external id."""
    queries = {
        q: _query_hash(t)
        for q, t in session.execute(
            select(col(Query.external_id), col(Query.text)).where(col(Query.project_id) == project_id)
        )
    }
    fragments = dict(
        session.execute(
            select(col(Fragment.external_id), col(Fragment.content_hash)).where(col(Fragment.project_id) == project_id)
        ).all()
    )
    return queries, fragments


def _text_hashes(session: Session, project_id: int, labels: pd.DataFrame) -> dict[str, dict[str, str]]:
    """The text hashes of the queries and fragments a release labels, kept with it."""
    queries, fragments = _current_hashes(session, project_id)
    return {
        "queries": {q: queries[q] for q in sorted(set(labels["query_id"]))},
        "fragments": {f: fragments[f] for f in sorted(set(labels["fragment_id"]))},
    }


def changed_texts(engine: Engine, project: str, version: int | str = "latest") -> dict | None:
    """Which labelled pairs of a release point at a query or fragment whose text changed (or vanished) since it
    was made: {"pairs": [[query_id, fragment_id, "query"|"fragment"|"query+fragment"], …], "queries": [...],
    "fragments": [...]}; None for a release made before text hashes were kept."""
    with session_scope(engine) as session:
        proj = project_row(session, project)
        release = load_release(session, proj, version)
        if not release.text_hashes:
            return None
        queries, fragments = _current_hashes(session, pk(proj))
        then, lines = release.text_hashes, release.judgments_jsonl.splitlines()
    moved_q = sorted(q for q, h in then["queries"].items() if queries.get(q) != h)
    moved_f = sorted(f for f, h in then["fragments"].items() if fragments.get(f) != h)
    q_set, f_set = set(moved_q), set(moved_f)
    labelled: Iterator[dict[str, Any]] = (json.loads(line) for line in lines) if q_set or f_set else iter(())
    pairs = [
        [
            r["query_id"],
            r["fragment_id"],
            "+".join(
                w for w, hit in (("query", r["query_id"] in q_set), ("fragment", r["fragment_id"] in f_set)) if hit
            ),
        ]
        for r in labelled
        if r["query_id"] in q_set or r["fragment_id"] in f_set
    ]
    return {"pairs": pairs, "queries": moved_q, "fragments": moved_f}


def release_files(engine: Engine, project: str, version: int | str = "latest") -> dict[str, bytes]:
    """The release's files by name, derived from the stored immutable text, so they never change: TREC and BEIR
    qrels as gains (grade − low) and, under AS_JUDGED_FILES, as judged; JSONL and CSV as judged, naming the
    scale. Only card.json adds `changed_since_release` once a labelled pair's query or fragment text has
    changed (and, for a release made before cards said it, how the files write grades)."""
    with session_scope(engine) as session:
        proj = project_row(session, project)
        release = load_release(session, proj, version)
        trec, jsonl, card, scale = release.qrels_trec, release.judgments_jsonl, release.card, project_scale(proj)
    changed = changed_texts(engine, project, version)
    card = {"qrels_grades": grade_mapping(scale), **card}
    if changed and changed["pairs"]:
        card = {**card, "changed_since_release": changed}
    low = scale[0]
    return {
        "qrels.trec": _trec(trec, low).encode(),
        "qrels.tsv": _beir(jsonl, low).encode(),
        "judgments.jsonl": _jsonl(jsonl, scale).encode(),
        "qrels.csv": _csv(jsonl, scale).encode(),
        "card.json": (json.dumps(card, ensure_ascii=False, indent=2, sort_keys=True) + "\n").encode(),
        AS_JUDGED_FILES["qrels.trec"]: trec.encode(),
        AS_JUDGED_FILES["qrels.tsv"]: _beir(jsonl, 0).encode(),
    }


def export(
    engine: Engine, project: str, version: int | str, fmt: str, out: str | Path, grades: QrelsGrades = QrelsGrades.GAINS
) -> Path:
    """Write one release file (trec, beir, jsonl, csv or card) to `out`, the TREC and BEIR qrels with `grades`
    as gains (default) or as judged; returns the path written."""
    if fmt not in EXPORT_FORMATS:
        raise ValueError(f"format must be one of {', '.join(EXPORT_FORMATS)}, got {fmt!r}")
    name = EXPORT_FORMATS[fmt]
    if grades == QrelsGrades.AS_JUDGED:
        name = AS_JUDGED_FILES.get(name, name)
    data = release_files(engine, project, version)[name]
    path = Path(out)
    write_atomically(path, [data.decode("utf-8")])  # all or nothing, like every other writer
    return path


def diff_releases(engine: Engine, project: str, old: int | str, new: int | str = "latest") -> dict:
    """Labels added / removed / changed between two releases, and how each stored run's headline metrics moved
    (from stored evaluations, computed here when one is missing)."""
    with session_scope(engine) as session:
        proj = project_row(session, project)
        a, b = load_release(session, proj, old), load_release(session, proj, new)
        qa, qb = qrels_of(a), qrels_of(b)
        out = {"old": a.version, "new": b.version, **label_diff(qa, qb), "runs": {}}
        runs = session.execute(
            select(col(Run.id), col(Run.name)).where(col(Run.project_id) == pk(proj)).order_by(col(Run.name))
        ).all()
        for run_id, name in runs:
            means: list[dict[str, float]] = []
            for release, qrels in ((a, qa), (b, qb)):
                stored = session.execute(
                    select(col(EvaluationRow.means)).where(
                        col(EvaluationRow.run_id) == run_id, col(EvaluationRow.release_id) == release.id
                    )
                ).scalar()
                means.append(
                    stored
                    if stored is not None
                    else score_run(qrels, run_frame(session, run_id), name, project_scale(proj)).mean
                )
            out["runs"][name] = _moves(means[0], means[1])
    return out
