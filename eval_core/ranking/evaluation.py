"""`evaluate()`: one call from qrels and run(s) — files, DataFrames or dicts — to per-query values and means.

Semantics are trec_eval's with `-c`: every qrels query is scored (missing from the run ⇒ 0), run-only
queries are ignored, and every such case is reported in `Evaluation.warnings`. Queries whose R = 0
appear in `per_query` and in the mean (as trec_eval counts them) with 0 for every binary metric; nDCG
keeps its graded value, since `rel_level` never changes nDCG gains.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, cast, overload

import numpy as np

from eval_core.errors import InputError
from eval_core.io.columns import Columns
from eval_core.io.formats import (
    CategoriesSource,
    QrelsSource,
    RunSource,
    detect_format,
    is_frame,
    load_qrels,
    load_run,
    qrels_scale,
    read_categories,
)
from eval_core.io.records import iter_lines
from eval_core.io.trec_text import extra_fields_warning, read_qrels_jg
from eval_core.ranking.metrics import (
    DEFAULT_K,
    QrelsIndex,
    Ranked,
    Spec,
    compute,
    index_qrels,
    merge_ranked,
    parse_metrics,
    rank_run,
)
from eval_core.ranking.run_blocks import BLOCK_BYTES, Scattered, default_workers, map_run_blocks
from eval_core.vocab import MissingQueries

if TYPE_CHECKING:  # pandas is imported when a DataFrame is first asked for: `qrelkit eval` prints means only
    import pandas as pd

MAX_LISTED = 10


def _listed(ids: Sequence[str]) -> str:
    """A short human list of ids: the first few, then how many more."""
    head = ", ".join(map(str, ids[:MAX_LISTED]))
    return head + (f" … (+{len(ids) - MAX_LISTED} more)" if len(ids) > MAX_LISTED else "")


def _is_multi(run: Any) -> bool:
    """True for several runs: a list of runs, or a dict name → run (not a `{qid: {docid: score}}` run)."""
    if isinstance(run, list | tuple):
        return True
    if not isinstance(run, Mapping) or not run:
        return False
    first = next(iter(run.values()))
    if isinstance(first, str | Path) or is_frame(first):
        return True
    return isinstance(first, Mapping) and any(isinstance(v, Mapping | list) for v in first.values())


def _rows(frame: pd.DataFrame) -> dict[str, dict[str, float]]:
    """{query: {metric: value}} from a per-query frame."""
    return {str(q): {m: float(v) for m, v in row.items()} for q, row in frame.to_dict(orient="index").items()}


@dataclass(eq=False)  # holds arrays and frames: compared by identity
class Evaluation:
    """The result of evaluating one run: per-query values, means over qrels queries, and what was odd."""

    name: str
    per_query: pd.DataFrame
    mean: dict[str, float]
    warnings: list[str] = field(default_factory=list)
    by_category: pd.DataFrame | None = None
    per_judge: dict[str, pd.DataFrame] | None = None  # judge group → its own per-query values (multi-judge qrels)
    missing: MissingQueries = MissingQueries.ZERO  # how qrels queries the run lacks entered the means
    trec_eval_version: int = 10  # whose ranking rules: 10 (float64 scores) or 9 (float32, pytrec_eval's)

    @property
    def judge_means(self) -> dict[str, dict[str, float]]:
        """Each judge group's mean over the queries it judged (empty for single-judge qrels)."""
        return {j: {m: float(v) for m, v in frame.mean().items()} for j, frame in (self.per_judge or {}).items()}

    @property
    def judge_spread(self) -> dict[str, tuple[float, float]]:
        """Per metric, the lowest and highest judge-group mean: how much the verdict depends on who judged."""
        means = self.judge_means
        return (
            {m: (min(v[m] for v in means.values()), max(v[m] for v in means.values())) for m in self.mean}
            if means
            else {}
        )

    def to_dict(self, per_query: bool = False) -> dict:
        """JSON-able form used by `qrelkit eval --format json`."""
        out: dict[str, Any] = {
            "name": self.name,
            "missing": str(self.missing),
            "trec_eval_version": self.trec_eval_version,
            "mean": dict(self.mean),
        }
        if self.per_judge is not None:
            out["judges"] = self.judge_means
            out["spread"] = {m: {"min": lo, "max": hi} for m, (lo, hi) in self.judge_spread.items()}
        if per_query:
            out["per_query"] = _rows(self.per_query)
            if self.per_judge is not None:
                out["per_judge"] = {j: _rows(frame) for j, frame in self.per_judge.items()}
        if self.by_category is not None:
            out["by_category"] = {
                str(c): {m: float(v) for m, v in row.items()}
                for c, row in self.by_category.to_dict(orient="index").items()
            }
        out["warnings"] = list(self.warnings)
        return out


class _LazyFrame:
    """Per-query values (metric → array over the qrels queries) made into a DataFrame only when first read."""

    def __init__(self, values: dict[str, np.ndarray], qids: list[str]) -> None:
        self.values, self.qids = values, qids

    def frame(self) -> pd.DataFrame:
        """The per-query DataFrame: one column per metric, indexed by query_id."""
        import pandas as pd

        return pd.DataFrame(self.values, index=pd.Index(self.qids, name="query_id"))


def _get_per_query(self: Evaluation) -> pd.DataFrame:
    value = self.__dict__["_per_query"]
    if isinstance(value, _LazyFrame):
        value = self.__dict__["_per_query"] = value.frame()
    return value


def _set_per_query(self: Evaluation, value: pd.DataFrame) -> None:
    self.__dict__["_per_query"] = value


# `per_query` stays a dataclass field (its place in the constructor, repr and equality) read through a property.
setattr(  # noqa: B010
    Evaluation,
    "per_query",
    property(
        _get_per_query,
        _set_per_query,
        doc="Per-query values: one column per metric, indexed by query_id.",
    ),
)


class Rules(NamedTuple):  # immutable like a frozen dataclass, made without compiling six methods
    """How a run's queries are averaged and ranked: `missing` (zero or skip) and trec_eval's version (9 or 10)."""

    missing: MissingQueries = MissingQueries.ZERO
    version: int = 10

    @property
    def float32(self) -> bool:
        """trec_eval 9 (and pytrec_eval) compare scores as float32."""
        return self.version < 10


def missing_rule(value: MissingQueries | str) -> MissingQueries:
    """`zero` or `skip`; anything else is a ValueError naming the choices."""
    try:
        return MissingQueries(value)
    except ValueError:
        choices = ", ".join(m.value for m in MissingQueries)
        raise ValueError(f"missing must be one of {choices}, got {value!r}") from None


def version_rule(value: int | str) -> int:
    """9 or 10; anything else is a ValueError."""
    if str(value) not in ("9", "10"):
        raise ValueError(f"trec_eval_version must be 9 or 10, got {value!r}")
    return int(value)


MISSING_MEANS = {
    MissingQueries.ZERO: "missing queries as zero: a qrels query the run does not answer scores 0 and counts in "
    "every mean (trec_eval -c, --missing zero)",
    MissingQueries.SKIP: "missing queries skipped: each mean is over the run's own queries, as pytrec_eval and ranx "
    "report (--missing skip)",
}
VERSION_MEANS = {
    10: "runs ranked as trec_eval 10 ranks them: scores compared as float64, ties broken by docid descending "
    "(--trec-eval-version 10)",
    9: "runs ranked as trec_eval 9 and pytrec_eval rank them: scores compared as float32, so scores equal in "
    "float32 tie and fall to docid descending (--trec-eval-version 9)",
}


def averaging(missing: MissingQueries | str = MissingQueries.ZERO, trec_eval_version: int = 10) -> dict[str, Any]:
    """How means were taken, for a card or a page: the two choices (`qrelkit eval --missing`, `--trec-eval-version`)
    and one sentence saying what they mean."""
    rule, version = missing_rule(missing), version_rule(trec_eval_version)
    return {
        "missing": rule.value,
        "trec_eval_version": version,
        "sentence": f"Averaging: {MISSING_MEANS[rule]}; {VERSION_MEANS[version]}.",
    }


def _mean(values: np.ndarray) -> float:
    """pandas' Series.mean, without pandas: the sum over the non-NaN values divided by their number."""
    values = np.asarray(values)
    nan = np.isnan(values) if values.dtype.kind == "f" else None
    if nan is not None and nan.any():
        values = values[~nan]
    return float(values.sum() / len(values)) if len(values) else math.nan


@dataclass(frozen=True, eq=False)  # never compared (its metrics may be a list, categories a frame)
class EvalOptions:
    """What to compute, shared by `evaluate` and `evaluate_judge_groups`: one list of parameters and defaults.

    `metrics` are names such as `P@10`, `ndcg@k` (expanded over `k`), `map`, `rbp@0.8`, `ndcg@10_condensed`
    (None: the default set); `rel_level` is the grade from which a fragment counts as relevant for binary
    metrics (default 1, or the scale's second grade); `categories` maps queries to categories (file or dict)
    for per-category means; `name` labels the result (default: the run's file name); `max_grade` is the
    scale's top grade for ERR (default 3, or the scale's top); `scale` (low, high) says the qrels' grades are
    on that scale, whose lowest grade means not relevant: graded metrics (nDCG, ERR) then gain from
    grade − low, as if the scale started at 0 (None: the scale the qrels file names — a release's JSONL or
    CSV, grades as judged — else grades are gains as written, trec_eval's way); `missing` says how qrels
    queries the run lacks enter the means (`zero`: as 0, trec_eval -c's; `skip`: left out, the mean over the
    run's queries as pytrec_eval and ranx report it); `trec_eval_version` 9 ranks on scores read as float32 (so
    scores equal in float32 tie, as in trec_eval 9 and pytrec_eval), 10 on float64.
    """

    metrics: Sequence[str] | None = None
    k: Sequence[int] = DEFAULT_K
    rel_level: int | None = None
    categories: CategoriesSource | None = None
    name: str | None = None
    max_grade: int | None = None
    scale: tuple[int, int] | None = None
    missing: MissingQueries | str = MissingQueries.ZERO
    trec_eval_version: int = 10

    def levels(self) -> tuple[int, int, int]:
        """(offset, rel_level, max_grade) on the shifted grades the metrics see; ValueError for a rel_level or
        max_grade that contradicts the scale."""
        if self.scale is None:
            return 0, 1 if self.rel_level is None else self.rel_level, 3 if self.max_grade is None else self.max_grade
        low, high = self.scale
        rel_level = low + 1 if self.rel_level is None else self.rel_level
        if not low < rel_level <= high:
            raise ValueError(f"rel_level {rel_level} is not above the lowest grade of the scale {low}-{high}")
        if self.max_grade is not None and self.max_grade != high:
            raise ValueError(f"max_grade {self.max_grade} contradicts the scale {low}-{high}")
        return low, rel_level - low, high - low


def on_scale(qrels: Columns, scale: tuple[int, int] | None) -> Columns:
    """The qrels with grades shifted so the scale's lowest grade is 0 (gain 0); a grade outside the scale is
    an InputError naming the file, line and pair, since a gain from it would be silently wrong."""
    if scale is None:
        return qrels
    low, high = scale
    grades = np.asarray(qrels.value, dtype=np.int64)
    outside = np.flatnonzero((grades < low) | (grades > high))
    if len(outside):
        i = int(outside[0])
        qid, doc = str(qrels.qvalues[int(qrels.qcode[i])]), str(qrels.docid[i])
        raise InputError(
            qrels.label,
            _line_of(qrels.label, qid, doc),
            f"grade {int(grades[i])} of query {qid}, fragment {doc} is outside the scale {low}-{high} "
            f"({len(outside)} grade(s) outside it)",
        )
    return replace(qrels, value=grades - low)


def _line_of(label: str, qid: str, doc: str) -> int | None:
    """The first line of file `label` that names both ids (for an error message), or None."""
    if not Path(label).is_file():
        return None
    for lineno, text in iter_lines(label, blank=False):
        tokens = set(re.split(r"[\s,;\"'{}\[\]:]+", text))
        if qid in tokens and doc in tokens:
            return lineno
    return None


@overload
def evaluate(
    qrels: QrelsSource,
    run: list[RunSource] | tuple[RunSource, ...],
    metrics: Sequence[str] | None = None,
    k: Sequence[int] = DEFAULT_K,
    rel_level: int | None = None,
    categories: CategoriesSource | None = None,
    name: str | None = None,
    max_grade: int | None = None,
    scale: tuple[int, int] | None = None,
    *,
    missing: MissingQueries | str = MissingQueries.ZERO,
    trec_eval_version: int = 10,
    block_bytes: int = BLOCK_BYTES,
    progress: Callable[[int], object] | None = None,
    workers: int | None = None,
) -> list[Evaluation]: ...


@overload
def evaluate(
    qrels: QrelsSource,
    run: dict[str, str | os.PathLike[str]],
    metrics: Sequence[str] | None = None,
    k: Sequence[int] = DEFAULT_K,
    rel_level: int | None = None,
    categories: CategoriesSource | None = None,
    name: str | None = None,
    max_grade: int | None = None,
    scale: tuple[int, int] | None = None,
    *,
    missing: MissingQueries | str = MissingQueries.ZERO,
    trec_eval_version: int = 10,
    block_bytes: int = BLOCK_BYTES,
    progress: Callable[[int], object] | None = None,
    workers: int | None = None,
) -> dict[str, Evaluation]: ...


@overload
def evaluate(
    qrels: QrelsSource,
    run: RunSource,
    metrics: Sequence[str] | None = None,
    k: Sequence[int] = DEFAULT_K,
    rel_level: int | None = None,
    categories: CategoriesSource | None = None,
    name: str | None = None,
    max_grade: int | None = None,
    scale: tuple[int, int] | None = None,
    *,
    missing: MissingQueries | str = MissingQueries.ZERO,
    trec_eval_version: int = 10,
    block_bytes: int = BLOCK_BYTES,
    progress: Callable[[int], object] | None = None,
    workers: int | None = None,
) -> Evaluation: ...


def evaluate(
    qrels: QrelsSource,
    run: RunSource | Sequence[RunSource] | Mapping[str, RunSource],
    metrics: Sequence[str] | None = None,
    k: Sequence[int] = DEFAULT_K,
    rel_level: int | None = None,
    categories: CategoriesSource | None = None,
    name: str | None = None,
    max_grade: int | None = None,
    scale: tuple[int, int] | None = None,
    *,
    missing: MissingQueries | str = MissingQueries.ZERO,
    trec_eval_version: int = 10,
    block_bytes: int = BLOCK_BYTES,
    progress: Callable[[int], object] | None = None,
    workers: int | None = None,
) -> Evaluation | list[Evaluation] | dict[str, Evaluation]:
    """Evaluate a run (path, DataFrame, dict or read Columns) against qrels; several runs give a list or dict of
    results: one run → `Evaluation`, a list or tuple of runs → `list[Evaluation]`, `{name: run}` → `{name:
    Evaluation}`.

    The options are `EvalOptions`' (metrics, k, rel_level, categories, name, max_grade, scale). A dict
    `{name: run}` returns `{name: Evaluation}`.
    A TREC run file larger than `block_bytes` is read in blocks of whole queries (memory bounded by the
    block, not the file); `progress(n)` is told of every n bytes of run files read. `workers` threads
    (default: every core) rank blocks in parallel; the result is bit-identical for any number.
    """
    opts = EvalOptions(
        metrics,
        k,
        rel_level,
        categories,
        name,
        max_grade,
        qrels_scale(qrels, scale),
        missing_rule(missing),
        version_rule(trec_eval_version),
    )
    rules = Rules(MissingQueries(opts.missing), opts.trec_eval_version)
    workers = default_workers() if workers is None else max(1, int(workers))
    specs = parse_metrics(opts.metrics, opts.k)
    offset, level, top = opts.levels()
    if not _is_multi(run) and _blockable(run, block_bytes):
        return _evaluate_overlapped(
            lambda: index_qrels(on_scale(load_qrels(qrels), opts.scale), level),
            run,
            specs,
            opts.categories,
            opts.name,
            top,
            block_bytes,
            progress,
            workers,
            offset,
            rules,
        )
    qi = index_qrels(on_scale(load_qrels(qrels), opts.scale), level)
    cats = None if opts.categories is None else read_categories(opts.categories)

    def one(r: Any, name: str | None) -> Evaluation:
        return _evaluate_one(qi, r, specs, cats, name, top, block_bytes, progress, workers, offset, rules)

    if _is_multi(run):
        items = run.items() if isinstance(run, Mapping) else ((None, r) for r in cast("Sequence[Any]", run))
        results = [one(r, n) for n, r in items]
        return {e.name: e for e in results} if isinstance(run, Mapping) else results
    return one(run, opts.name)


def _evaluate_overlapped(
    prepare: Callable[[], QrelsIndex],
    run: RunSource,
    specs: list[Spec],
    categories: CategoriesSource | None,
    name: str | None,
    max_grade: int,
    block_bytes: int,
    progress: Callable[[int], object] | None,
    workers: int,
    offset: int,
    rules: Rules,
) -> Evaluation:
    """One big TREC run: its first blocks are parsed while a side thread reads and indexes the qrels.

    The errors are those of the sequential order: a bad qrels file first, then bad categories, then the run.
    """
    ready: dict[str, Any] = {}

    def before() -> None:  # the block reader calls it before it looks at any block's outcome
        if not ready:
            ready["qi"] = prepared.result()
            ready["cats"] = None if categories is None else read_categories(categories)

    with ThreadPoolExecutor(max_workers=1) as side:
        prepared = side.submit(prepare)
        ranked, label, warnings = _rank(prepared.result, run, block_bytes, progress, workers, before, rules.float32)
        before()
    return _finish(ready["qi"], ranked, label, warnings, specs, ready["cats"], name, max_grade, offset, rules, workers)


def _blockable(run: Any, block_bytes: int) -> bool:
    """A TREC run file big enough to be worth reading in blocks (gzip counted at 4× its size)."""
    if not isinstance(run, str | os.PathLike) or not Path(run).is_file():
        return False
    with Path(run).open("rb") as fh:
        factor = 4 if fh.read(2) == b"\x1f\x8b" else 1
    return Path(run).stat().st_size * factor > block_bytes and detect_format(Path(run)) == "trec"


def rank_file_blocks(
    qi: QrelsIndex | Callable[[], QrelsIndex],
    path: str | Path,
    block_bytes: int = BLOCK_BYTES,
    progress: Callable[[int], object] | None = None,
    workers: int = 1,
    before: Callable[[], object] | None = None,
    float32: bool = False,
) -> tuple[Ranked, tuple[int, int] | None]:
    """Rank a TREC run block by block of whole queries — identical to `rank_run` on the whole file.

    `qi` is the qrels index, or a function the workers call for it (it may still be being built); `before`
    runs before any block's outcome is looked at (see `map_run_blocks`). `workers` threads rank blocks at
    once; blocks are merged in file order, so the result is the same for any number. Also returns the
    first line with fields after the sixth (None if there is none). Raises `Scattered` when the file does
    not keep each query's lines together.
    """
    get = qi if callable(qi) else lambda: qi
    parts, extra = [], None
    for ranked, line in map_run_blocks(
        path,
        lambda cols: (rank_run(get(), cols, float32), cols.extra_fields_line),
        block_bytes,
        progress,
        workers,
        before,
    ):
        extra = extra or line
        parts.append(ranked)
    return merge_ranked(parts), extra


def _rank(
    qi: Callable[[], QrelsIndex],
    run: Any,
    block_bytes: int,
    progress: Callable[[int], object] | None,
    workers: int,
    before: Callable[[], object] | None = None,
    float32: bool = False,
) -> tuple[Ranked, str, list[str]]:
    """The run ranked (in blocks when it is a big TREC file), its label, and any note on how it was read."""
    if _blockable(run, block_bytes):
        try:
            ranked, extra = rank_file_blocks(qi, run, block_bytes, progress, workers, before, float32)
            return ranked, str(run), extra_fields_warning(str(run), extra)
        except Scattered:
            note = (
                "the run file does not keep each query's lines together, so it was read whole "
                "(memory grows with the file); group its lines by query to evaluate it in blocks"
            )
            cols = load_run(run)
            ranked = rank_run(qi(), cols, float32)
            return ranked, str(run), [note, *extra_fields_warning(str(run), cols.extra_fields_line)]
    cols = load_run(run)
    return rank_run(qi(), cols, float32), cols.label, extra_fields_warning(cols.label, cols.extra_fields_line)


def _err_clip_warning(qi: QrelsIndex, specs: list[Spec], max_grade: int) -> list[str]:
    """One warning when ERR is asked for and some grades exceed `max_grade` (ERR clips them; gdeval refuses)."""
    if not any(s.base == "err" for s in specs):
        return []
    over = qi.grades > max_grade
    if not over.any():
        return []
    return [
        f"{int(over.sum())} judgments have a grade above max_grade = {max_grade} (highest: "
        f"{int(qi.grades.max())}); ERR counts them as grade {max_grade}. Set max_grade (--max-grade) to "
        "the scale's top grade"
    ]


def _evaluate_one(
    qi: QrelsIndex,
    run: Any,
    specs: list[Spec],
    cats: dict[str, str] | None,
    name: str | None,
    max_grade: int,
    block_bytes: int = BLOCK_BYTES,
    progress: Callable[[int], object] | None = None,
    workers: int = 1,
    offset: int = 0,
    rules: Rules | None = None,
) -> Evaluation:
    """Score one run against prepared qrels and gather the warnings a person needs to trust the numbers."""
    rules = rules or Rules()
    ranked, label, warnings = _rank(lambda: qi, run, block_bytes, progress, workers, None, rules.float32)
    return _finish(qi, ranked, label, warnings, specs, cats, name, max_grade, offset, rules, workers)


def _finish(
    qi: QrelsIndex,
    ranked: Ranked,
    label: str,
    warnings: list[str],
    specs: list[Spec],
    cats: dict[str, str] | None,
    name: str | None,
    max_grade: int,
    offset: int,
    rules: Rules | None = None,
    workers: int = 1,
) -> Evaluation:
    """The metrics of a ranked run (on up to `workers` threads), its means, and the warnings a person needs to
    trust the numbers."""
    rules = rules or Rules()
    if name is None:
        name = "run" if label.startswith("<") else Path(label).name
    values = compute(qi, ranked, specs, max_grade=max_grade, workers=workers)
    qids = qi.qid_list
    missing = [q for q, n in zip(qids, ranked.num_ret, strict=True) if n == 0]
    if missing and rules.missing is MissingQueries.SKIP:
        kept = ranked.num_ret > 0
        values = {m: v[kept] for m, v in values.items()}
        qids = [q for q, k in zip(qids, kept.tolist(), strict=True) if k]
    per_query = cast("pd.DataFrame", _LazyFrame(values, qids))  # most callers read only the means
    mean = {m: _mean(v) if len(qids) else 0.0 for m, v in values.items()}
    if missing:
        fate = "are left out of the means (--missing skip)" if rules.missing is MissingQueries.SKIP else "score 0"
        warnings.append(
            f"{len(missing)} of {len(qi.qid_list)} qrels queries are missing from the run and {fate}: "
            f"{_listed(missing)}"
        )
    if ranked.unknown_qids:
        warnings.append(
            f"{len(ranked.unknown_qids)} run queries are not in the qrels and were ignored: "
            f"{_listed(ranked.unknown_qids)}"
        )
    warnings += _err_clip_warning(qi, specs, max_grade)
    no_rel = [q for q, r in zip(qi.qid_list, qi.n_rel, strict=True) if r == 0]
    if no_rel:
        warnings.append(
            f"{len(no_rel)} qrels queries have no relevant fragment (grade ≥ {qi.rel_level + offset}) "
            f"and score 0 on binary metrics: {_listed(no_rel)}"
        )
    evaluation = Evaluation(name, per_query, mean, warnings, missing=rules.missing, trec_eval_version=rules.version)
    if cats is not None:
        evaluation.by_category = _by_category(evaluation.per_query, cats, warnings)
    return evaluation


def _by_category(per_query: pd.DataFrame, cats: dict[str, str] | None, warnings: list[str]) -> pd.DataFrame | None:
    """Mean per category with a `queries` count; queries without one go to '(none)' with a warning."""
    if cats is None:
        return None
    import pandas as pd

    qids = [str(q) for q in per_query.index]
    labels = pd.Series([cats.get(q) for q in qids], index=per_query.index, dtype=object)
    unmapped = [q for q, c in zip(qids, labels, strict=True) if c is None]
    if unmapped:
        warnings.append(f"{len(unmapped)} queries have no category and are grouped as '(none)': {_listed(unmapped)}")
    grouped = per_query.groupby(labels.fillna("(none)"), sort=True)
    by_category = grouped.mean()
    by_category.insert(0, "queries", grouped.size())
    by_category.index.name = "category"
    return by_category


def evaluate_judge_groups(qrels: str | Path | pd.DataFrame, run: RunSource, *args: Any, **options: Any) -> Evaluation:
    """Evaluate one run against each judge group's qrels (trec_eval `-R qrels_jg`) and average per query.

    `qrels` is a multi-judge qrels file (`qid judge docid grade`) or a DataFrame with a `judge` column;
    `args`/`options` are `EvalOptions`' fields, as for `evaluate`.
    Each query's value is the mean over the judge groups that judged it (trec_eval's `map_avgjg`,
    `P_avgjg_k`); the run mean is the mean of those over every qrels query (missing queries score 0).
    `per_judge` holds each judge's own per-query values, `judge_means` each judge's mean.
    """
    import pandas as pd

    opts = EvalOptions(*args, **options)
    groups = qrels if is_frame(qrels) else read_qrels_jg(qrels)
    cols = load_run(run)
    label = opts.name or ("run" if cols.label.startswith("<") else Path(cols.label).name)
    each = replace(opts, categories=None, name=label)
    per_judge = {
        str(j): evaluate(g[["query_id", "doc_id", "grade"]], cols, **asdict(each))
        for j, g in groups.groupby("judge", sort=True)
    }
    order = pd.Index(pd.unique(groups["query_id"].astype(str)), name="query_id")
    stacked = pd.concat({j: ev.per_query for j, ev in per_judge.items()}, names=["judge", "query_id"])
    per_query = stacked.groupby(level="query_id", sort=False).mean().reindex(order)
    mean = {m: float(per_query[m].mean()) for m in per_query.columns}
    warnings = [f"judge {j}: {w}" for j, ev in per_judge.items() for w in ev.warnings]
    cats = None if opts.categories is None else read_categories(opts.categories)
    return Evaluation(
        label,
        per_query,
        mean,
        warnings,
        _by_category(per_query, cats, warnings),
        per_judge={j: ev.per_query for j, ev in per_judge.items()},
        missing=missing_rule(opts.missing),
        trec_eval_version=version_rule(opts.trec_eval_version),
    )
