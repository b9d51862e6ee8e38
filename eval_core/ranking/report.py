"""Diagnostics over an evaluation: where a retriever loses its relevant fragments, and whether to trust the numbers.

The checks: the recall curve's shape, the two-depth diagnosis (recall at the candidate depth against recall
and nDCG at the context depth), the low-recall diagnosis (per query: relevant fragments missed, ranked deep,
junk on top), query coverage and the incomplete-annotation check (kept apart: a missing query is not an
unjudged fragment), and the per-category breakdown. Every verdict states the rule and thresholds it applied,
and none calls anything healthy below them. Everything here is pure: inputs are `Evaluation`s plus qrels/run
DataFrames, outputs are dataclasses with `to_dict()` for the CLI, the app and the store.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from eval_core.io.formats import qrels_scale, read_qrels, read_run
from eval_core.io.writers import ranked
from eval_core.ranking.evaluation import EvalOptions, Evaluation, evaluate
from eval_core.thresholds import Thresholds

__all__ = [
    "Diagnosis",
    "Thresholds",
    "category_breakdown",
    "coverage_check",
    "diagnose",
    "judged_check",
    "low_recall_queries",
    "ranked",
    "recall_curve",
    "two_depth_diagnosis",
    "unjudged_pairs",
]

CURVE_K = (1, 3, 5, 10, 20, 50, 100)
_RECALL_AT = re.compile(r"^recall@(\d+)$")


def snippet(text: str | None, chars: int) -> str | None:
    """The first `chars` characters of a fragment, marked when cut (50 characters by default)."""
    if text is None:
        return None
    return text if len(text) <= chars else text[:chars].rstrip() + "…"


def curve_ks(evaluation: Evaluation) -> list[int]:
    """The cutoffs k for which the evaluation holds recall@k, ascending."""
    return sorted(int(m[1]) for c in evaluation.per_query.columns if (m := _RECALL_AT.match(c)))


def _need(evaluation: Evaluation, metric: str) -> float:
    """A mean the diagnosis needs, with a clear error naming how to get it."""
    if metric not in evaluation.mean:
        raise ValueError(
            f"evaluation {evaluation.name!r} lacks {metric}; evaluate with that metric "
            f"(e.g. metrics=[{metric!r}]) or use report.diagnose()"
        )
    return float(evaluation.mean[metric])


def recall_curve(
    evaluation: Evaluation,
    *,
    fast_k: int = 10,
    share: float = 0.8,
    min_gain: float = 0.02,
    min_recall: float = 0.8,
    run_depth: int | None = None,
) -> RecallCurve:
    """Check the curve: healthy only if it rises fast (recall@fast_k ≥ share × the deepest) AND gets high enough.
    A run only `run_depth` deep (its longest list) retrieves nothing below that rank, so a low recall at a deeper k
    says nothing about retrieval: the verdict is then undetermined, not "too low"."""
    ks = curve_ks(evaluation)
    if not ks:
        raise ValueError(f"evaluation {evaluation.name!r} has no recall@k; evaluate with metrics=['recall@k']")
    values = [float(evaluation.mean[f"recall@{k}"]) for k in ks]
    deepest, top = ks[-1], values[-1]
    rule = (
        f"healthy when recall@{fast_k} ≥ {share:g} × recall@{deepest} (rises fast) and recall@{deepest} ≥ "
        f"{min_recall:g} (high enough); flat from the first k after which deeper cutoffs add less than "
        f"{min_gain:g} recall"
    )
    flat_from = next((k for k, v in zip(ks, values, strict=True) if top - v < min_gain), deepest)
    early = [(k, v) for k, v in zip(ks, values, strict=True) if k <= fast_k]
    if run_depth is not None and run_depth < deepest and top < min_recall:
        return RecallCurve(
            ks,
            values,
            None,
            None,
            f"undetermined: the run is only {run_depth} deep, so recall@{deepest} = {top:.3f} is recall@{run_depth} "
            f"and the curve is flat beyond k = {run_depth} because nothing is retrieved there; produce "
            f"{deepest} candidates per query to see whether retrieval finds the rest",
            rule,
        )
    if top == 0:
        return RecallCurve(
            ks,
            values,
            False,
            flat_from,
            f"no relevant fragment is retrieved up to k = {deepest}: "
            "the curve never rises; look at the index, chunking and embeddings",
            rule,
        )
    if deepest <= fast_k or not early:
        return RecallCurve(
            ks,
            values,
            None,
            flat_from,
            f"cannot judge the shape: measure recall beyond "
            f"k = {fast_k} (deepest measured: {deepest}) and at or below it",
            rule,
        )
    k_fast, at_fast = early[-1]  # fast_k itself, or the deepest measured cutoff below it
    flat_text = (
        f"it stops improving appreciably from k = {flat_from}, so a candidate window deeper than "
        f"{flat_from} only costs latency"
        if flat_from < deepest
        else f"it is still rising at k = {deepest}: measure deeper before choosing the candidate window"
    )
    low = (
        f"recall@{deepest} = {top:.3f} < {min_recall:g}, so {1 - top:.0%} of the relevant fragments are "
        f"still missing at k = {deepest}"
    )
    if at_fast >= share * top and top < min_recall:
        verdict = (
            f"too low: it reaches {at_fast / top:.0%} of its height by k = {k_fast}, but {low}; look at "
            f"the index, chunking and embeddings before the ranking"
        )
        return RecallCurve(ks, values, False, flat_from, verdict, rule)
    if at_fast >= share * top:
        verdict = (
            f"rises fast and flattens (healthy): recall@{k_fast} = {at_fast:.3f} is "
            f"{at_fast / top:.0%} of recall@{deepest} = {top:.3f} ≥ {min_recall:g}; {flat_text}"
        )
        return RecallCurve(ks, values, True, flat_from, verdict, rule)
    verdict = (
        f"rises slowly: recall@{k_fast} = {at_fast:.3f} is only {at_fast / top:.0%} of recall@{deepest} = "
        f"{top:.3f}; the ranking does not discriminate and the pipeline leans on the reranker for "
        f"everything; {flat_text}" + (f"; and it stays low: {low}" if top < min_recall else "")
    )
    return RecallCurve(ks, values, False, flat_from, verdict, rule)


def two_depth_diagnosis(
    evaluation: Evaluation,
    candidate_depth: int = 100,
    context_depth: int = 10,
    *,
    min_candidate_recall: float = 0.8,
    min_context_share: float = 0.8,
    min_context_ndcg: float = 0.5,
    run_depth: int | None = None,
) -> DepthDiagnosis:
    """Say whether to fix retrieval (index/chunking/embeddings) or ranking (a reranker): the two-depth diagnosis.
    `run_depth` is the run's longest list: a run shallower than the candidate depth has its recall@candidate_depth
    cut at that depth, so a low value is "undetermined", never a retrieval verdict (a high one still clears
    retrieval: recall only grows with depth)."""
    if context_depth >= candidate_depth:
        raise ValueError(f"context depth {context_depth} must be smaller than candidate depth {candidate_depth}")
    rc = _need(evaluation, f"recall@{candidate_depth}")
    rx = _need(evaluation, f"recall@{context_depth}")
    nx = _need(evaluation, f"ndcg@{context_depth}")
    per_query = evaluation.per_query[f"recall@{candidate_depth}"]
    hopeless = int((per_query == 0).sum())
    n = len(per_query)
    thresholds = {
        "min_candidate_recall": min_candidate_recall,
        "min_context_share": min_context_share,
        "min_context_ndcg": min_context_ndcg,
    }
    share = rx / rc if rc > 0 else 0.0
    if run_depth is not None and run_depth < candidate_depth and rc < min_candidate_recall:
        problem = "undetermined"
        verdict = (
            f"Undetermined: the run is only {run_depth} deep, so recall@{candidate_depth} = {rc:.3f} is "
            f"recall@{run_depth}: the relevant fragments it misses may sit between ranks {run_depth + 1} and "
            f"{candidate_depth}, which the run never returned. No retrieval verdict: produce {candidate_depth} "
            f"candidates per query (or diagnose at a candidate depth of at most {run_depth})."
        )
    elif rc < min_candidate_recall:
        problem = "retrieval"
        verdict = (
            f"Retrieval problem: recall@{candidate_depth} = {rc:.3f} < {min_candidate_recall:g}, so "
            f"on average {1 - rc:.0%} of a query's relevant fragments never reach the {candidate_depth} candidates "
            f"({hopeless} of {n} queries get none at all) and no reranker can bring them back. "
            f"Don't touch the reranker: work on the index, chunking, embeddings or the query."
        )
    elif share < min_context_share or nx < min_context_ndcg:
        problem = "ranking"
        why = []
        if share < min_context_share:
            why.append(
                f"only {share:.0%} of them survive the cut to the top {context_depth} "
                f"(recall@{context_depth} = {rx:.3f}; rule: < {min_context_share:g} of recall@{candidate_depth})"
            )
        if nx < min_context_ndcg:
            why.append(f"nDCG@{context_depth} = {nx:.3f} < {min_context_ndcg:g}")
        verdict = (
            f"Ranking problem: retrieval is fine (recall@{candidate_depth} = {rc:.3f} ≥ "
            f"{min_candidate_recall:g}) but {' and '.join(why)}. Invest in a reranker over the "
            f"{candidate_depth} candidates."
        )
    else:
        problem = "none"
        verdict = (
            f"Both stages look healthy: recall@{candidate_depth} = {rc:.3f} ≥ {min_candidate_recall:g}, "
            f"{share:.0%} of it kept in the top {context_depth} (≥ {min_context_share:g}) and "
            f"nDCG@{context_depth} = {nx:.3f} ≥ {min_context_ndcg:g}."
        )
    return DepthDiagnosis(candidate_depth, context_depth, rc, rx, nx, problem, verdict, thresholds, hopeless, n)


def low_recall_queries(
    evaluation: Evaluation,
    qrels: pd.DataFrame,
    run: pd.DataFrame,
    *,
    k: int = 5,
    threshold: float = 0.2,
    rel_level: int = 1,
    deep_rank: int = 10,
    top_n: int = 3,
    fragments: Mapping[str, str] | None = None,
    snippet_chars: int = 50,
) -> list[LowRecallQuery]:
    """Queries with recall@k < threshold: relevant fragments missed, ranked beyond deep_rank, junk in the top_n.

    `rel_level` must be the one the evaluation used; worst queries come first.
    """
    column = f"recall@{k}"
    if column not in evaluation.per_query.columns:
        raise ValueError(f"evaluation {evaluation.name!r} lacks {column}; evaluate with metrics=[{column!r}]")
    scores = evaluation.per_query[column]
    low = scores[scores < threshold].sort_values(kind="stable")
    if not len(low):
        return []
    ids = [str(q) for q in low.index]
    judged = qrels[qrels["query_id"].isin(ids)][["query_id", "doc_id", "grade"]]
    order = ranked(run, ids)
    texts = fragments or {}
    # Relevant fragments with their rank (NaN = not retrieved), and the top_n with their grade (NaN = unjudged).
    rel = judged[judged["grade"] >= rel_level]
    found = order[order["doc_id"].isin(rel["doc_id"].unique())]  # shrink before the two-key join
    rel = rel.merge(found[["query_id", "doc_id", "rank"]], how="left", on=["query_id", "doc_id"])
    rel = rel.sort_values(["query_id", "rank", "doc_id"], kind="stable", na_position="first")
    top = order[order["rank"] <= top_n].merge(judged, how="left", on=["query_id", "doc_id"])
    top = top[~(top["grade"] >= rel_level)]

    def notes(frame: pd.DataFrame) -> dict[str, list[FragmentNote]]:
        out: dict[str, list[FragmentNote]] = {}
        for q, d, r, g in zip(
            frame["query_id"].tolist(),
            frame["doc_id"].tolist(),
            frame["rank"].tolist(),
            frame["grade"].tolist(),
            strict=True,
        ):
            out.setdefault(q, []).append(
                FragmentNote(
                    d, None if r != r else int(r), None if g != g else int(g), snippet(texts.get(d), snippet_chars)
                )
            )
        return out

    missed = notes(rel[rel["rank"].isna()])
    deep = notes(rel[rel["rank"] > deep_rank])
    junk = notes(top.sort_values(["query_id", "rank"], kind="stable"))
    n_rel = rel.groupby("query_id").size().to_dict()
    result = []
    for qid, value in zip(ids, low.tolist(), strict=True):
        m, dp, tp, n = missed.get(qid, []), deep.get(qid, []), junk.get(qid, []), int(n_rel.get(qid, 0))
        issues = []
        if not n:
            issues.append(f"no fragment is graded ≥ {rel_level}: recall is undefined and scored 0")
        if m:
            issues.append(f"{len(m)} of {n} relevant fragments not retrieved at all: " + ", ".join(f.doc_id for f in m))
        issues += [f"relevant {f.doc_id} ranked {f.rank}, outside the top {deep_rank}" for f in dp]
        if tp:
            issues.append(
                f"non-relevant fragments in the top {top_n}: "
                + "; ".join(
                    f"{f.doc_id} ({'unjudged' if f.grade is None else f'grade {f.grade}'})"
                    + (f": {f.snippet}" if f.snippet else "")
                    for f in tp
                )
            )
        result.append(LowRecallQuery(qid, k, float(value), n, m, dp, tp, issues))
    return result


def unjudged_pairs(qrels: pd.DataFrame, run: pd.DataFrame, k: int) -> pd.DataFrame:
    """(query_id, doc_id, rank) in each qrels query's top-k with no judgment: the holes to send to annotators."""
    top = ranked(run, qrels["query_id"].unique(), depth=k)
    keys = pd.MultiIndex.from_frame(qrels[["query_id", "doc_id"]])
    hole = ~pd.MultiIndex.from_frame(top[["query_id", "doc_id"]]).isin(keys)
    return top.loc[hole, ["query_id", "doc_id", "rank"]].reset_index(drop=True)


def coverage_check(evaluation: Evaluation, qrels: pd.DataFrame, run: pd.DataFrame) -> CoverageCheck:
    """Which qrels queries the run returns nothing for: they score 0 everywhere, whatever the annotation."""
    qids = [str(q) for q in evaluation.per_query.index]
    covered = set(run["query_id"].astype(str).unique())
    missing = [q for q in qids if q not in covered]
    n = len(qids)
    if missing:
        message = (
            f"Missing queries: {evaluation.name} returns nothing for {len(missing)} of {n} qrels queries, "
            f"which score 0 on every metric and pull every mean down; the means describe the "
            f"{n - len(missing)} queries it answers only diluted by the rest. Run it on every query "
            "of the golden set (or evaluate on the queries it covers)."
        )
    else:
        message = f"{evaluation.name} returns results for all {n} qrels queries."
    return CoverageCheck(evaluation.name, n, n - len(missing), missing, bool(missing), message)


def judged_check(
    evaluation: Evaluation, qrels: pd.DataFrame, run: pd.DataFrame, *, k: int = 10, threshold: float = 0.9
) -> JudgedCheck:
    """Flag a run whose top-k is too often unjudged, and list the unjudged pairs so they can be graded.

    judged@k is averaged over the queries the run answers: a query missing from the run has no
    fragments at all, judged or not (that is `coverage_check`'s finding, not this one).
    """
    _need(evaluation, f"judged@{k}")
    covered = set(run["query_id"].astype(str).unique())
    per_query = evaluation.per_query[f"judged@{k}"]
    answered = per_query[[str(q) in covered for q in per_query.index]]
    judged = float(answered.mean()) if len(answered) else 1.0
    holes = unjudged_pairs(qrels, run, k)
    pairs = [
        {"query_id": q, "doc_id": d, "rank": int(r)}
        for q, d, r in zip(holes["query_id"].tolist(), holes["doc_id"].tolist(), holes["rank"].tolist(), strict=True)
    ]
    over = (
        f"over the {len(answered)} quer{'y' if len(answered) == 1 else 'ies'} {evaluation.name} answers"
        if len(answered) < len(per_query)
        else f"over all {len(per_query)} queries"
    )
    flagged = bool(len(answered)) and judged < threshold
    if not len(answered):
        message = f"judged@{k} cannot be measured: {evaluation.name} answers none of the qrels queries."
    elif flagged:
        message = (
            f"Incomplete annotation: judged@{k} = {judged:.3f} < {threshold:g} {over}; {1 - judged:.0%} "
            f"of those top-{k} fragments were never judged and count as non-relevant, so the scores are "
            f"biased low (a better system can score worse). Judge the {len(pairs)} unjudged "
            f"(query, fragment) pair{'' if len(pairs) == 1 else 's'} before trusting the numbers."
        )
    else:
        message = f"judged@{k} = {judged:.3f} ≥ {threshold:g} {over}: annotation covers {evaluation.name}'s top-{k}" + (
            f"; {len(pairs)} unjudged pair{'' if len(pairs) == 1 else 's'} remain" if pairs else ""
        )
    return JudgedCheck(evaluation.name, k, judged, threshold, flagged, message, pairs)


def category_breakdown(evaluation: Evaluation, metrics: Sequence[str] | None = None) -> CategoryBreakdown:
    """Per-category means with counts: averages hide categories that differ by 2×."""
    table = evaluation.by_category
    if table is None:
        raise ValueError(f"evaluation {evaluation.name!r} has no categories; evaluate with categories=...")
    names = [m for m in (metrics or table.columns) if m != "queries"]
    lacking = [m for m in names if m not in table.columns]
    if lacking:
        raise ValueError(f"evaluation {evaluation.name!r} lacks {', '.join(lacking)}")
    rows = [
        {"category": str(cat), "queries": int(row["queries"]), **{m: float(row[m]) for m in names}}
        for cat, row in table.iterrows()
    ]
    return CategoryBreakdown(names, rows, _spread_note(names, rows))


def _spread_note(names: Sequence[str], rows: list[dict[str, Any]]) -> str:
    """How far apart the categories are on the first metric; nothing to say with fewer than two."""
    if not names or len(rows) < 2:
        return ""
    first = names[0]
    lo = min(rows, key=lambda r: r[first])
    hi = max(rows, key=lambda r: r[first])
    if lo[first] == hi[first]:
        return f"{first} is {lo[first]:.3f} in all {len(rows)} categories"

    def count(r: dict[str, Any]) -> str:
        return f"{r['queries']} quer{'y' if r['queries'] == 1 else 'ies'}"

    return (
        f"{first} ranges from {lo[first]:.3f} ({lo['category']}, {count(lo)}) to "
        f"{hi[first]:.3f} ({hi['category']}, {count(hi)})"
    )


def diagnose(
    qrels: Any,
    run: Any,
    *,
    fragments: Mapping[str, str] | None = None,
    candidate_depth: int = 100,
    context_depth: int = 10,
    low_recall_k: int = 5,
    rel_level: int | None = None,
    categories: Any = None,
    name: str | None = None,
    thresholds: Thresholds | None = None,
    scale: tuple[int, int] | None = None,
) -> Diagnosis:
    """Evaluate one run (file, DataFrame or dict) at every depth the diagnostics need and run them all
    (`rel_level` and `scale` as for `evaluate`: nDCG gains from the scale's lowest grade)."""
    t = thresholds or Thresholds()
    scale = qrels_scale(qrels, scale)  # a release's JSONL/CSV names its scale
    offset, level, _ = EvalOptions(rel_level=rel_level, scale=scale).levels()
    rel_level = offset + level  # on the qrels' own grades, as the checks below read them
    qdf, rdf = read_qrels(qrels), read_run(run)
    ks = sorted({*CURVE_K, candidate_depth, context_depth, low_recall_k, t.curve_fast_k})
    metrics = ["recall@k", "ndcg@k", "P@k", "success@k", "judged@k", "mrr", "map"]
    ev = evaluate(
        qdf,
        rdf,
        metrics=metrics,
        k=ks,
        rel_level=rel_level,
        categories=categories,
        scale=scale,
        name=name or (Path(run).name if isinstance(run, str | Path) else None),
    )
    warnings = list(ev.warnings)
    longest = int(rdf.groupby("query_id").size().max()) if len(rdf) else 0  # the run's depth
    if longest < candidate_depth:
        warnings.append(
            f"the run returns at most {longest} fragments per query, so recall@{candidate_depth} "
            f"is recall@{longest}: produce {candidate_depth} candidates to measure that depth"
        )
    return Diagnosis(
        run=ev.name,
        n_queries=len(ev.per_query),
        mean={m: ev.mean[m] for m in ev.mean},
        thresholds=asdict(t),
        curve=recall_curve(
            ev,
            fast_k=t.curve_fast_k,
            share=t.curve_share,
            min_gain=t.curve_min_gain,
            min_recall=t.min_candidate_recall,
            run_depth=longest,
        ),
        depth=two_depth_diagnosis(
            ev,
            candidate_depth,
            context_depth,
            min_candidate_recall=t.min_candidate_recall,
            min_context_share=t.min_context_share,
            min_context_ndcg=t.min_context_ndcg,
            run_depth=longest,
        ),
        coverage=coverage_check(ev, qdf, rdf),
        judged=judged_check(ev, qdf, rdf, k=context_depth, threshold=t.min_judged),
        low_recall_k=low_recall_k,
        low_recall=low_recall_queries(
            ev, qdf, rdf, k=low_recall_k, threshold=t.low_recall, rel_level=rel_level, fragments=fragments
        ),
        categories=None if ev.by_category is None else category_breakdown(ev, [f"recall@{low_recall_k}", "mrr"]),
        warnings=warnings,
    )


@dataclass
class _Record:
    """Base of the report's dataclasses: one `to_dict()` (every field, nested records as dicts) serves the CLI's
    JSON, the app and the stored diagnosis."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return asdict(self)


@dataclass
class RecallCurve(_Record):
    """Mean recall@k over k, and whether it "rises fast and flattens" by the stated rule."""

    ks: list[int]
    recall: list[float]
    healthy: bool | None
    flat_from: int | None
    verdict: str
    rule: str


@dataclass
class DepthDiagnosis(_Record):
    """Recall at the candidate depth vs recall and nDCG at the context depth, with the verdict and its rule."""

    candidate_depth: int
    context_depth: int
    recall_candidate: float
    recall_context: float
    ndcg_context: float
    problem: str  # "retrieval", "ranking", "none", or "undetermined" (a run shallower than the candidate depth)
    verdict: str
    thresholds: dict[str, float]
    hopeless_queries: int
    n_queries: int


@dataclass
class FragmentNote:
    """One fragment in a low-recall diagnosis: where it ranked, its grade (None = unjudged), a text snippet."""

    doc_id: str
    rank: int | None
    grade: int | None
    snippet: str | None


@dataclass
class LowRecallQuery(_Record):
    """A query whose recall@k is under the threshold, with what went wrong (the low-recall diagnosis)."""

    query_id: str
    k: int
    recall: float
    n_relevant: int
    missed: list[FragmentNote]
    ranked_deep: list[FragmentNote]
    top_nonrelevant: list[FragmentNote]
    issues: list[str]


@dataclass
class CoverageCheck(_Record):
    """Which qrels queries a run answers at all; a finding of its own, apart from unjudged fragments."""

    run: str
    n_queries: int
    n_answered: int
    missing: list[str]
    flagged: bool
    message: str


@dataclass
class JudgedCheck(_Record):
    """judged@k of one run over the queries it answers, and whether incomplete annotation biases its scores."""

    run: str
    k: int
    judged: float
    threshold: float
    flagged: bool
    message: str
    unjudged: list[dict[str, Any]] = field(default_factory=list)  # the app's "judge the holes" queue


@dataclass
class CategoryBreakdown(_Record):
    """Mean of each metric per query category with the query count, and the spread between categories."""

    metrics: list[str]
    rows: list[dict[str, Any]]
    note: str


@dataclass
class Diagnosis(_Record):
    """Everything `qrelkit diagnose` reports for one run."""

    run: str
    n_queries: int
    mean: dict[str, float]
    thresholds: dict[str, float]
    curve: RecallCurve
    depth: DepthDiagnosis
    coverage: CoverageCheck
    judged: JudgedCheck
    low_recall_k: int
    low_recall: list[LowRecallQuery]
    categories: CategoryBreakdown | None
    warnings: list[str]
