"""One trec_eval invocation: read the inputs, compute the marked measures, yield the output text.

Errors carry trec_eval's exit status (`TrecEvalError.status`): 1 an illegal measure, 2 unreadable input
or bad measure parameters, 4 a measure that cannot be calculated — and, in 10.0's rules, a qrels query
without results when -c is not given — 7 no query with both results and relevance info.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from eval_core.errors import InputError
from eval_core.ranking.run_blocks import default_workers
from eval_core.ranking.trec_eval import measures as ms
from eval_core.ranking.trec_eval.columnar import RankedRun, build_columnar, read_ranked
from eval_core.ranking.trec_eval.evaluate import Block, IllegalMeasure, compute, select, to_zscores
from eval_core.ranking.trec_eval.invocation import REL_FORMATS, RESULTS_FORMATS, Invocation, TrecEvalError
from eval_core.ranking.trec_eval.output import query_lines, summary_lines
from eval_core.ranking.trec_eval.params import ParamError, atol
from eval_core.ranking.trec_eval.reading import Qrels, Results, read_qrels, read_results
from eval_core.ranking.trec_eval.rels import build
from eval_core.ranking.trec_eval.zscores import read_zscores


def from_namespace(args: object) -> Invocation:
    """The Invocation for `qrelkit trec_eval`'s parsed arguments (numbers read as C's atol reads them)."""
    g = args.__getattribute__
    return Invocation(
        g("rel_info_file"),
        g("results_file"),
        list(g("measure")),
        bool(g("query_eval_wanted")),
        bool(g("complete_rel_info_wanted")),
        atol(g("level_for_rel")),
        not g("nosummary"),
        bool(g("Judged_docs_only")),
        atol(g("Number_docs_in_coll")),
        None if g("Max_retrieved_per_topic") is None else atol(g("Max_retrieved_per_topic")),
        g("Rel_info_format"),
        g("Results_format"),
        g("Zscore"),
        int(g("trec_eval_version")),
        _debug_query(g("Debug_level")),
        bool(g("old_format")) or g("Output_old_results_format") is not None,
    )


def _debug_query(debug: str | None) -> str | None:
    """The query of `-D level.qid` (trec_eval's get_debug_level_query: everything after the first '.')."""
    if debug is None or "." not in debug:
        return None
    return debug.split(".", 1)[1]


@dataclass(eq=False)  # holds arrays: compared by identity
class Scored:
    """What one evaluation produced: the blocks of values and what the summary needs."""

    qids: list[str]
    blocks: list[Block]
    run_id: str
    evaluated: int
    denominator: int


def score(inv: Invocation, qrels: Qrels, results: Results | RankedRun) -> Scored:
    """Compute the selected qrels measures under `inv`'s rules."""
    try:
        selection = select(inv.measures)
    except IllegalMeasure as exc:
        raise TrecEvalError(str(exc), 1) from None
    if isinstance(results, RankedRun):
        missing = [q for q, n in zip(qrels.by_query, results.ranked.num_ret.tolist(), strict=True) if not n]
    else:
        missing = [q for q in qrels.by_query if q not in results.by_query]
    if missing and not inv.complete and inv.version >= 10:
        raise TrecEvalError(
            f"query '{missing[0]}' is in the qrels but has no results in {inv.results_file} "
            f"({len(missing)} such); pass -c to score such queries 0",
            4,
        )
    if isinstance(results, RankedRun):
        m = build_columnar(
            qrels,
            results,
            rel_level=inv.rel_level,
            max_docs=inv.max_docs,
            judged_only=inv.judged_only,
            complete=inv.complete,
            bogus_missing=inv.version >= 10,
        )
    else:
        m = build(
            qrels,
            results,
            rel_level=inv.rel_level,
            max_docs=inv.max_docs,
            judged_only=inv.judged_only,
            complete=inv.complete,
            bogus_missing=inv.version >= 10,
        )
    if not m.qids:
        raise TrecEvalError("No queries with both results and relevance info", 7)
    opts = ms.Options(inv.rel_level, inv.num_docs_in_coll, inv.version)
    try:
        blocks = compute(m, selection, opts)
    except ParamError as exc:
        raise TrecEvalError(str(exc), 2) from None
    except ms.MeasureError as exc:
        raise TrecEvalError(f"Can't calculate {exc}", 4) from None
    if inv.complete and inv.version >= 10:
        _num_rel_complete(blocks, qrels)
    all_queries = qrels.averaged_over if qrels.averaged_over is not None else len(qrels.by_query)
    denominator = all_queries if inv.complete else len(m.qids)
    return Scored(m.qids, blocks, results.run_id, len(m.qids), denominator)


def _num_rel_complete(blocks: list[Block], qrels: Qrels) -> None:
    """trec_eval 10.0's num_rel average under -c (m_num_rel.c te_calc_avg_num_rel): the `all` value is the
    number of qrels lines with rel > 0 over every qrels query, whatever -l, -J or -M say."""
    for block in blocks:
        if block.family.name == "num_rel":
            if qrels.lines is not None:
                count = int(np.count_nonzero(np.asarray(qrels.lines[2]) > 0))
            else:
                count = sum(1 for judged in qrels.by_query.values() for g in judged.values() if g > 0)
            block.total = np.array([float(count)])


def load(inv: Invocation) -> tuple[Qrels, Results | RankedRun]:
    """The qrels and the run, or the refusal trec_eval gives (unknown formats, unreadable files: exit 2)."""
    if inv.rel_format not in REL_FORMATS:
        raise TrecEvalError(f"Illegal rel_format '{inv.rel_format}'", 2)
    if inv.results_format not in RESULTS_FORMATS:
        raise TrecEvalError(f"Illegal retrieval results format '{inv.results_format}'", 2)

    def qrels_read() -> Qrels:
        qrels = read_qrels(inv.rel_info_file)
        if inv.debug_query is None:
            return qrels
        # -D 0.qid: only that query is evaluated
        return Qrels(
            {q: j for q, j in qrels.by_query.items() if q == inv.debug_query}, averaged_over=len(qrels.by_query)
        )

    try:
        # The qrels are read on a side thread while the run's first blocks are parsed; the errors are those of
        # reading them in turn: a bad qrels file is named first.
        with ThreadPoolExecutor(max_workers=1) as side:
            qrels_future = side.submit(qrels_read)
            try:
                ranked = read_ranked(
                    inv.results_file, qrels_future.result, float32=inv.version < 10, workers=default_workers()
                )
            except BaseException:
                qrels_future.result()
                raise
            qrels = qrels_future.result()
        return qrels, ranked if ranked is not None else _read_results(inv)
    except InputError as exc:
        raise TrecEvalError(str(exc), 2) from None


def _read_results(inv: Invocation) -> Results:
    try:
        return read_results(inv.results_file, float32=inv.version < 10)
    except InputError as exc:
        raise TrecEvalError(str(exc), 2) from None


def run(args: object) -> Iterator[str]:
    """`qrelkit trec_eval`: the output text in chunks (or `--diff-versions`' listing)."""
    inv = args if isinstance(args, Invocation) else from_namespace(args)
    if not isinstance(args, Invocation) and args.__getattribute__("diff_versions"):
        yield from diff_versions(inv)
        return
    if inv.rel_format not in REL_FORMATS:
        raise TrecEvalError(f"Illegal rel_format '{inv.rel_format}'", 2)
    if inv.results_format not in RESULTS_FORMATS:
        raise TrecEvalError(f"Illegal retrieval results format '{inv.results_format}'", 2)
    if inv.rel_format != "qrels":
        from eval_core.ranking.trec_eval.other_formats import run_other

        yield from run_other(inv)
        return
    qrels, results = load(inv)
    scored = score(inv, qrels, results)
    if inv.zscores_file is not None:
        try:
            refs = read_zscores(inv.zscores_file)
        except InputError as exc:
            raise TrecEvalError(str(exc), 2) from None
        to_zscores(scored.blocks, scored.qids, refs)
    z = inv.zscores_file is not None
    lines: list[str] = []
    if inv.query:
        lines.extend(query_lines(scored.blocks, scored.qids, z))
    if inv.old_format and inv.version < 10:  # trec_eval 9: -q lines printed, then no old-format summary
        yield "".join(line + "\n" for line in lines)
        raise TrecEvalError("old format not yet supported", 10)
    if inv.summary:
        lines.extend(summary_lines(scored.blocks, scored.run_id, scored.evaluated, scored.denominator, z))
    yield "".join(line + "\n" for line in lines)


def diff_versions(inv: Invocation) -> Iterator[str]:
    """`measure qid value10 value9` for every per-query value where trec_eval 10.0 and 9 differ (more than 1e-12),
    then the summary values that differ (qid `all`); a query one version scores and the other does not shows '-'."""
    import dataclasses

    scored = {}
    for version in (10, 9):
        v = dataclasses.replace(inv, version=version, complete=inv.complete or version == 10)
        qrels, results = load(v)
        scored[version] = score(v, qrels, results)
    a, b = scored[10], scored[9]
    index_b = {q: i for i, q in enumerate(b.qids)}
    out = []
    for block_a, block_b in zip(a.blocks, b.blocks, strict=True):
        if block_a.strings is not None or block_a.values.shape[1] == 0 or not block_a.family.per_query:
            continue
        for i, qid in enumerate(a.qids):
            j = index_b.get(qid)
            for k, name in enumerate(block_a.names):
                va = float(block_a.values[i, k])
                if j is None:
                    out.append(f"{name:<22}\t{qid}\t{va:.4f}\t-")
                elif abs(va - float(block_b.values[j, k])) > 1e-12:
                    out.append(f"{name:<22}\t{qid}\t{va:.4f}\t{float(block_b.values[j, k]):.4f}")
    yield "".join(line + "\n" for line in out)


def per_query(
    qrels: Qrels,
    results: Results,
    measures: tuple[str, ...] = ("all_trec",),
    *,
    version: int = 10,
    rel_level: int = 1,
    complete: bool = False,
    judged_only: bool = False,
    max_docs: int | None = None,
    num_docs_in_coll: int = 0,
) -> dict[str, dict[str, float]]:
    """The Python API: every selected measure's value per query, named as trec_eval prints them (relstring and
    the summary-only gm_map/gm_bpref give their per-query value: the string's length is not kept, gm_* the log).

    Same rules as the command line (`version` 9 or 10); raises TrecEvalError as it refuses."""
    inv = Invocation(
        "<qrels>",
        "<run>",
        list(measures),
        complete=complete,
        rel_level=rel_level,
        judged_only=judged_only,
        max_docs=max_docs,
        num_docs_in_coll=num_docs_in_coll,
        version=version,
    )
    scored = score(inv, qrels, results)
    out: dict[str, dict[str, float]] = {q: {} for q in scored.qids}
    for block in scored.blocks:
        if block.strings is not None or block.family.name in ("runid", "num_q"):
            continue
        for i, qid in enumerate(scored.qids):
            out[qid].update({name: float(block.values[i, j]) for j, name in enumerate(block.names)})
    return out
