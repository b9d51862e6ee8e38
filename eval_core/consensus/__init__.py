"""One graded label per (query, fragment) from several annotators' grades, by an explicit recorded rule: a rule
over each pair's own grades (median, majority, mean, min) or an annotator model over all of them (Dawid–Skene,
MACE, GLAD: eval_core.consensus.models), which also gives each pair's posterior over the grades."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np
import pandas as pd

from eval_core.consensus.models import MODELS, NO_TRUTH, Crowd, Fit
from eval_core.io.judgments import check_judgments
from eval_core.thresholds import DOUBT_THRESHOLD
from eval_core.vocab import RULES as _RULES
from eval_core.vocab import AnnotatorKind

RULES = _RULES  # eval_core.vocab.ConsensusRule, the one source (light: the store's CHECK reads it)
# Rules over each pair's own grades, then the annotator models (fitted on every grade at once).
MODEL_RULES = tuple(MODELS)
PAIR_RULES = tuple(r for r in RULES if r not in MODELS)
# How a model rule turns a posterior into a grade: the most probable grade (crowd-kit's label), or the ordinal
# choice, the grade with the least expected absolute error (the posterior's lower median).
DECISIONS = ("most-probable", "least-abs-error")
DECISION_HELP = {
    "most-probable": "the grade with the highest posterior (crowd-kit's label; grades as unordered classes)",
    "least-abs-error": "the grade with the smallest expected absolute error under the posterior (its lower "
    "median): grades as ordered, so a posterior split between 1 and 3 gives 2, not the slightly likelier end",
}
# A release's labels come from people only (default) or, by eval_core.vocab.ReleasePolicy.MODEL_FILLS_GAPS, from a
# model judge's grade where no person graded, allowed only when the model agrees well enough with the humans.
# Where each released label came from (recorded on every label and counted on the card).
PROVENANCES = ("human consensus", "adjudication", "reference", "model")
PAIR = ["query_id", "fragment_id"]
DOUBT_LISTED = 1000  # doubtful pairs listed by name (all are counted)
COLUMNS = ["query_id", "fragment_id", "grade", "n_grades", "grades", "rule", "adjudicated", "posterior"]


def _lower_median(grade: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Lower median of each group of a (pair, grade)-sorted array: the pessimistic middle on ties."""
    return grade[starts + (counts - 1) // 2]


def _majority(pair: np.ndarray, grade: np.ndarray, n_pairs: int) -> np.ndarray:
    """Most frequent grade per pair; a tie goes to the lower grade (rows are sorted by pair, then grade)."""
    keys = pd.DataFrame({"pair": pair, "grade": grade})
    votes = keys.groupby(["pair", "grade"], sort=True).size().rename("votes").reset_index()
    votes = votes.sort_values(["pair", "votes", "grade"], ascending=[True, False, True], kind="stable")
    first = votes.drop_duplicates("pair", keep="first")
    out = np.empty(n_pairs, dtype=np.int64)
    out[first["pair"].to_numpy()] = first["grade"].to_numpy()
    return out


def _mean_half_up(grade_sum: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Mean rounded half up, in exact integer arithmetic: floor(sum/n + 1/2) = floor((2·sum + n) / 2n)."""
    return (2 * grade_sum + counts) // (2 * counts)


def combine_grades(pair: np.ndarray, grade: np.ndarray, n_pairs: int, rule: str) -> tuple[np.ndarray, np.ndarray]:
    """`rule`'s label and the grade count per pair code 0…n_pairs−1, from grades sorted by (pair, grade): one
    implementation for `consensus` and the robustness bootstrap's replicates (label undefined at count 0)."""
    if rule not in PAIR_RULES:
        raise ValueError(
            f"{rule} is fitted over every pair at once, not per pair (rules per pair: {', '.join(PAIR_RULES)})"
        )
    counts = np.bincount(pair, minlength=n_pairs)
    value = np.zeros(n_pairs, dtype=np.int64)
    has = counts > 0
    if not has.any():
        return value, counts
    if rule == "median":
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        value[has] = _lower_median(grade, starts[has], counts[has])
    elif rule == "majority":
        value[has] = _majority(pair, grade, n_pairs)[has]
    elif rule == "mean":
        sums = np.bincount(pair, weights=grade, minlength=n_pairs).round().astype(np.int64)
        value[has] = _mean_half_up(sums[has], counts[has])
    else:
        mins = np.full(n_pairs, np.iinfo(np.int64).max)
        np.minimum.at(mins, pair, grade)
        value[has] = mins[has]
    return value, counts


def _provenance(pair: np.ndarray, annotators: np.ndarray, grades: list, n_pairs: int) -> list[dict]:
    """Every annotator's grade per pair (None for can't judge), rows already sorted by pair."""
    bounds = np.searchsorted(pair, np.arange(n_pairs + 1))
    names = annotators.tolist()
    return [dict(zip(names[s:e], grades[s:e], strict=True)) for s, e in pairwise(bounds)]


def _adjudication_table(adjudications: pd.DataFrame | None, scale: tuple[int, int]) -> pd.DataFrame:
    """Lead decisions as (query_id, fragment_id) → grade, checked for scale and one decision per pair."""
    if adjudications is None or len(adjudications) == 0:
        return pd.DataFrame({"query_id": [], "fragment_id": [], "adjudicated_grade": []})
    missing = [c for c in (*PAIR, "grade") if c not in adjudications.columns]
    if missing:
        raise ValueError(f"adjudications lack column(s): {', '.join(missing)}")
    adj = adjudications[[*PAIR, "grade"]].copy()
    try:
        grades = pd.array(adj["grade"], dtype="Int64")
    except (TypeError, ValueError):
        raise ValueError(f"adjudication grades must be integers in {scale[0]}-{scale[1]}") from None
    low, high = scale
    bad = grades.isna() | (grades < low) | (grades > high)
    bad = np.asarray(bad.fillna(True), dtype=bool)
    if bad.any():
        row = adj.iloc[int(np.flatnonzero(bad)[0])]
        raise ValueError(
            f"adjudication of ({row['query_id']}, {row['fragment_id']}): grade {row['grade']!r} "
            f"is not an integer in {low}-{high}"
        )
    adj["query_id"] = adj["query_id"].astype(str)
    adj["fragment_id"] = adj["fragment_id"].astype(str)
    dup = adj.duplicated(PAIR, keep=False)
    if dup.any():
        row = adj[dup].iloc[0]
        raise ValueError(f"more than one adjudication of ({row['query_id']}, {row['fragment_id']})")
    return pd.DataFrame(
        {"query_id": adj["query_id"], "fragment_id": adj["fragment_id"], "adjudicated_grade": grades.astype("int64")}
    )


def decide(posterior: np.ndarray, decision: str) -> np.ndarray:
    """Column index per row of a posterior matrix: the most probable (first on ties) or the lower median."""
    if decision == "most-probable":
        return posterior.argmax(axis=1)
    cumulative = np.cumsum(posterior, axis=1) / posterior.sum(axis=1, keepdims=True)
    return (cumulative < 0.5 - 1e-12).sum(axis=1)


@dataclass(frozen=True)
class ModelConsensus:
    """A model rule's fit over a project's grades: the fit, which pair code each task is, the grades its label
    codes stand for, and the annotators its worker codes stand for."""

    fit: Fit
    pairs: np.ndarray  # task code → pair code
    grades: np.ndarray  # label code → grade
    annotators: list[str]
    crowd: Crowd


def fit_model(
    rule: str, pair: np.ndarray, annotator: np.ndarray, grade: np.ndarray, truth: dict[int, int] | None = None
) -> ModelConsensus:
    """Fit a model rule on real grades (pair code, annotator name, grade per row); `truth` maps pair codes to
    settled grades (controls, adjudications), fixed in the model as known truth."""
    task, tasks = pd.factorize(pair, sort=True)
    worker, names = pd.factorize(annotator.astype(str), sort=True)
    tasks = np.asarray(tasks)
    settled = truth or {}
    grades = np.unique(np.concatenate([grade, np.fromiter(settled.values(), dtype=np.int64, count=len(settled))]))
    label = np.searchsorted(grades, grade)
    crowd = Crowd.of(task, worker, label, len(tasks), len(names), len(grades))
    if settled:
        known = np.full(len(tasks), NO_TRUTH, dtype=np.int64)
        where = np.searchsorted(tasks, list(settled))
        hit = (where < len(tasks)) & (tasks[np.minimum(where, len(tasks) - 1)] == list(settled))
        known[where[hit]] = np.searchsorted(grades, np.fromiter(settled.values(), dtype=np.int64))[hit]
        crowd = crowd.with_truth(known)
    return ModelConsensus(MODELS[rule](crowd), tasks, grades, names.tolist(), crowd)


def _truth(
    codes: np.ndarray, keys: pd.DataFrame, controls: pd.DataFrame | None, n_frame: int, adj: pd.DataFrame
) -> dict[int, int]:
    """Pair code → settled grade: control pairs, then adjudications (a lead's decision wins)."""
    out: dict[int, int] = {}
    if controls is not None and len(controls):
        lookup = pd.DataFrame(
            {"query_id": keys["query_id"].astype(str), "fragment_id": keys["fragment_id"].astype(str)}
        )
        lookup["code"] = codes
        lookup = lookup.drop_duplicates(PAIR)
        known = controls.assign(
            query_id=controls["query_id"].astype(str), fragment_id=controls["fragment_id"].astype(str)
        ).merge(lookup, on=PAIR)
        out.update(zip(known["code"].astype(int), known["grade"].astype(int), strict=True))
    if len(adj):
        out.update(
            zip(codes[n_frame:].astype(int).tolist(), adj["adjudicated_grade"].astype(int).tolist(), strict=True)
        )
    return out


def consensus(
    judgments: pd.DataFrame,
    rule: str = "median",
    adjudications: pd.DataFrame | None = None,
    min_grades: int = 1,
    scale: tuple[int, int] = (0, 3),
    controls: pd.DataFrame | None = None,
    decision: str = "most-probable",
) -> pd.DataFrame:
    """Graded qrels with provenance: adjudicated grade if any, else the rule over real (non-can't-judge) grades.

    Pairs with fewer than `min_grades` real grades are left out unless adjudicated. Columns:
    query_id, fragment_id, grade, n_grades, grades (annotator → grade, None = can't judge), rule, adjudicated,
    posterior (a model rule's {grade: probability} over the scale as strings, else None). A model rule fits
    every real grade at once, takes adjudications and `controls` (query_id, fragment_id, grade) as known truth
    and turns each posterior into a grade by `decision`.
    """
    if rule not in RULES:
        raise ValueError(f"rule must be one of {', '.join(RULES)}, got {rule!r}")
    if decision not in DECISIONS:
        raise ValueError(f"decision must be one of {', '.join(DECISIONS)}, got {decision!r}")
    if min_grades < 1:
        raise ValueError(f"min_grades must be at least 1, got {min_grades}")
    frame = check_judgments(judgments, scale)
    adj = _adjudication_table(adjudications, scale)
    keys = pd.concat([frame[PAIR], adj[PAIR]], ignore_index=True)
    if len(keys) == 0:
        return pd.DataFrame({c: pd.Series(dtype="int64" if c in ("grade", "n_grades") else object) for c in COLUMNS})
    codes = keys.groupby(PAIR, sort=True).ngroup().to_numpy()
    n_pairs = int(codes.max()) + 1
    first = np.empty(n_pairs, dtype=np.int64)
    first[codes[::-1]] = np.arange(len(codes))[::-1]
    pairs = keys.iloc[first].reset_index(drop=True)
    pair_all = codes[: len(frame)]
    order = np.argsort(pair_all, kind="stable")
    sentinel = np.iinfo(np.int64).min
    coded = frame["grade"].to_numpy(dtype=np.int64, na_value=sentinel)[order].tolist()
    grades_list = [None if g == sentinel else g for g in coded]
    provenance = _provenance(pair_all[order], frame["annotator"].to_numpy()[order], grades_list, n_pairs)

    real = frame["grade"].notna().to_numpy()
    pair = pair_all[real]
    grade = frame["grade"].to_numpy(dtype="float64", na_value=np.nan)[real].astype(np.int64)
    sort = np.lexsort((grade, pair))
    posteriors: list[dict[str, float] | None] = [None] * n_pairs
    if rule in MODEL_RULES:
        counts = np.bincount(pair, minlength=n_pairs)
        value = np.zeros(n_pairs, dtype=np.int64)
        truth = _truth(codes, keys, controls, len(frame), adj)
        if len(pair):
            model = fit_model(rule, pair, frame["annotator"].to_numpy()[real], grade, truth)
            value[model.pairs] = model.grades[decide(model.fit.posterior, decision)]
            posteriors = _posteriors(model, n_pairs, scale)
    else:
        value, counts = combine_grades(pair[sort], grade[sort], n_pairs, rule)

    adjudicated = np.zeros(n_pairs, dtype=bool)
    if len(adj):
        where = codes[len(frame) :]
        adjudicated[where] = True
        value[where] = adj["adjudicated_grade"].to_numpy()
        if rule in MODEL_RULES:
            for code, g in zip(where.tolist(), value[where].tolist(), strict=True):
                posteriors[code] = {str(s): float(s == g) for s in range(scale[0], scale[1] + 1)}
    keep = adjudicated | (counts >= min_grades)
    out = pairs.assign(
        grade=value,
        n_grades=counts.astype(np.int64),
        grades=provenance,
        rule=rule,
        adjudicated=adjudicated,
        posterior=posteriors,
    )
    return out[keep].reset_index(drop=True)[COLUMNS]


def _posteriors(model: ModelConsensus, n_pairs: int, scale: tuple[int, int]) -> list[dict[str, float] | None]:
    """Each pair's posterior over every grade of the scale (0 for a grade nobody gave), None for pairs the
    model did not see."""
    low, high = scale
    full = np.zeros((len(model.pairs), high - low + 1))
    full[:, model.grades - low] = model.fit.posterior
    names = [str(g) for g in range(low, high + 1)]
    out: list[dict[str, float] | None] = [None] * n_pairs
    for code, row in zip(model.pairs.tolist(), full.tolist(), strict=True):
        out[code] = dict(zip(names, row, strict=True))
    return out


def reference_base(judged: pd.DataFrame, rule: str, scale: tuple[int, int]) -> tuple[pd.DataFrame | None, list[str]]:
    """The reference annotators' real grades (annotator_kind "reference", e.g. an imported NIST qrels), one per pair
    by `rule`, as the base `fill_gaps` gives every pair no person labelled (its `annotator`: their names, comma
    separated); and their names. (None, []) when the judgments hold no reference grade."""
    if "annotator_kind" not in judged.columns:
        return None, []
    refs = judged[
        judged["annotator_kind"].astype(str).eq(AnnotatorKind.REFERENCE).to_numpy() & judged["grade"].notna().to_numpy()
    ]
    if refs.empty:
        return None, []
    names = sorted(refs["annotator"].astype(str).unique())
    one = consensus(refs[["query_id", "fragment_id", "annotator", "grade"]], rule=rule, scale=scale)
    return one.assign(annotator=", ".join(names))[["query_id", "fragment_id", "annotator", "grade"]], names


def over_reference(
    people: pd.DataFrame,
    rule: str,
    adjudications: pd.DataFrame | None,
    scale: tuple[int, int],
    references: pd.DataFrame | None,
    **options: Any,
) -> pd.DataFrame:
    """What a humans-only release made by `rule` holds: the consensus of `people`'s grades (`options`: consensus'
    min_grades, decision…), adjudications winning, and on each pair no person labelled the `references`' grade
    (rows of annotator_kind reference, e.g. an imported NIST qrels; `reference_base`), with fill_gaps' columns
    (`reference` names it on those pairs)."""
    labels = consensus(people, rule, adjudications, scale=scale, **options)
    base = None if references is None else reference_base(references, rule, scale)[0]
    return fill_gaps(labels, None, rule, base)


def fill_gaps(
    labels: pd.DataFrame, model_grades: pd.DataFrame | None, rule: str, reference: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Consensus labels with `provenance`, `model_judge` and `reference` columns, plus, for every pair no person
    labelled, the reference's grade (e.g. NIST's qrels: the base, people's grades on top), else the model's.

    `model_grades`, `reference`: query_id, fragment_id, annotator (the model judge, the reference), grade (real
    grades only; one per pair for the reference); `rule` is the release's consensus rule, recorded on filled
    pairs too. A filled pair has n_grades 0 and an empty grades map (the map holds people's grades only),
    provenance "reference" or "model", and the reference's or the model judge's name in its column (None on
    every other label).
    """
    human, adjudication, by_reference, model = PROVENANCES
    out = labels.assign(
        provenance=np.where(labels["adjudicated"].to_numpy(dtype=bool), adjudication, human),
        model_judge=None,
        reference=None,
    )
    for grades, provenance, column in ((reference, by_reference, "reference"), (model_grades, model, "model_judge")):
        if grades is None or grades.empty:
            continue
        fresh = grades.merge(out[PAIR], on=PAIR, how="left", indicator=True)
        fresh = fresh[fresh["_merge"] == "left_only"]
        if not len(fresh):
            continue
        filled = pd.DataFrame(
            {
                "query_id": fresh["query_id"].astype(str).to_numpy(),
                "fragment_id": fresh["fragment_id"].astype(str).to_numpy(),
                "grade": fresh["grade"].to_numpy(dtype=np.int64),
                "n_grades": 0,
                "grades": [{} for _ in range(len(fresh))],
                "rule": rule,
                "adjudicated": False,
                "provenance": provenance,
                "model_judge": None,
                "reference": None,
                "posterior": None,
            }
        )
        filled[column] = fresh["annotator"].astype(str).to_numpy()
        out = pd.concat([out, filled], ignore_index=True)
    return out.sort_values(PAIR, kind="stable", ignore_index=True)


def doubt(labels: pd.DataFrame, threshold: float = DOUBT_THRESHOLD, listed: int = DOUBT_LISTED) -> dict:
    """A model rule's doubtful pairs: those whose most probable grade has a posterior below `threshold`, least
    sure first (the first `listed` of them), for the card and the CLI."""
    rows = [
        (max(p.values()), q, f, int(g))
        for q, f, g, p in zip(
            labels["query_id"], labels["fragment_id"], labels["grade"], labels["posterior"], strict=True
        )
        if p is not None and max(p.values()) < threshold
    ]
    rows.sort(key=lambda r: (r[0], r[1], r[2]))
    return {
        "threshold": threshold,
        "pairs": len(rows),
        "listed": [
            {"query_id": q, "fragment_id": f, "grade": g, "top_posterior": top} for top, q, f, g in rows[:listed]
        ],
    }
