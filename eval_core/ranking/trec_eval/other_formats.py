"""`-R prefs`, `-R qrels_prefs` and `-R qrels_jg`: the preference and judge-group measures (prefs.py,
judge_groups.py) put into trec_eval's output, with runid and num_q; other measures cannot be calculated
from these files (trec_eval exits 4, and so does this)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from eval_core.errors import InputError
from eval_core.ranking.trec_eval import measures as ms
from eval_core.ranking.trec_eval.evaluate import Block, IllegalMeasure, select, to_zscores
from eval_core.ranking.trec_eval.invocation import Invocation, TrecEvalError
from eval_core.ranking.trec_eval.output import query_lines, summary_lines
from eval_core.ranking.trec_eval.params import ParamError, ParamKind, parse
from eval_core.ranking.trec_eval.reading import ranked_docids, read_results
from eval_core.ranking.trec_eval.zscores import read_zscores

_JG_KINDS = {
    "P_avgjg": (ParamKind.LONG_CUTS, ms.CUTS),
    "Rprec_mult_avgjg": (ParamKind.DOUBLE_CUTS, (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0)),
}


def run_other(inv: Invocation) -> Iterator[str]:
    """The output of trec_eval for a preference or judge-group rel_info file."""
    from eval_core.ranking.trec_eval import judge_groups, prefs

    try:
        selection = select(inv.measures)
    except IllegalMeasure as exc:
        raise TrecEvalError(str(exc), 1) from None
    jg = inv.rel_format == "qrels_jg"
    own = set(judge_groups.JG_MEASURES if jg else prefs.PREFS_MEASURES) | {"runid", "num_q"}
    for name in selection.names:
        if name not in own:
            raise TrecEvalError(f"Can't calculate measure '{name}' from -R {inv.rel_format} relevance info", 4)
    rel_info: judge_groups.QrelsJG | prefs.Prefs
    try:
        results = read_results(inv.results_file, float32=inv.version < 10)
        if jg:
            rel_info = judge_groups.read_qrels_jg(inv.rel_info_file)
        elif inv.rel_format == "prefs":
            rel_info = prefs.read_prefs(inv.rel_info_file)
        else:
            rel_info = prefs.read_qrels_prefs(inv.rel_info_file)
    except InputError as exc:
        raise TrecEvalError(str(exc), 2) from None
    ranked = ranked_docids(results, inv.max_docs) if jg else prefs.prefs_ranking(results.by_query, inv.max_docs)
    qids = list(rel_info.by_query)
    if inv.debug_query is not None:  # -D 0.qid: that query alone is evaluated; -c still averages over every query
        ranked = {q: r for q, r in ranked.items() if q == inv.debug_query}
        missing = [q for q in qids if q == inv.debug_query and q not in ranked]
    else:
        missing = [q for q in qids if q not in ranked]
    if missing and not inv.complete and inv.version >= 10:
        raise TrecEvalError(f"query '{missing[0]}' is in the relevance info but has no results; pass -c", 4)
    if inv.complete:
        ranked = {**ranked, **{q: [] for q in missing}}
    if isinstance(rel_info, judge_groups.QrelsJG):
        params = {}
        for name, (kind, default) in _JG_KINDS.items():
            try:
                params[name] = parse(kind, selection.params.get(name), default).values
            except ParamError as exc:
                raise TrecEvalError(f"cannot initialize measure '{name}': {exc}", 2) from None
        per_query = judge_groups.jg_measures(
            rel_info, ranked, params, rel_level=inv.rel_level, judged_only=inv.judged_only
        )
    else:
        per_query = prefs.prefs_measures(rel_info, ranked)
    evaluated = [q for q in qids if q in per_query]
    if not evaluated:
        raise TrecEvalError("No queries with both results and relevance info", 7)
    blocks = []
    for name in selection.names:
        if name in ("runid", "num_q"):
            family = ms.BY_NAME[name]
            blocks.append(Block(family, [name], np.ones((len(evaluated), 1 if name == "num_q" else 0))))
            continue
        first = per_query[evaluated[0]]
        names = [n for n in first if n == name or (jg and name != "map_avgjg" and n.startswith(name + "_"))]
        summed = not jg and name in prefs.SUMMED_MEASURES
        family = ms.Family(
            name, ParamKind.NONE, (), ms.Average.SUM if summed else ms.Average.MEAN, None, integer=summed
        )
        values = np.array([[per_query[q][n] for n in names] for q in evaluated], dtype=np.float64)
        blocks.append(Block(family, names, values.reshape(len(evaluated), len(names))))
    z = inv.zscores_file is not None
    if z:
        try:
            to_zscores(blocks, evaluated, read_zscores(inv.zscores_file))  # type: ignore[arg-type]
        except InputError as exc:
            raise TrecEvalError(str(exc), 2) from None
    denominator = len(qids) if inv.complete else len(evaluated)
    lines: list[str] = []
    if inv.query:
        lines.extend(query_lines(blocks, evaluated, z))
    if inv.summary:
        lines.extend(summary_lines(blocks, results.run_id, len(evaluated), denominator, z))
    yield "".join(line + "\n" for line in lines)
