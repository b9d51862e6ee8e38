"""Every metric qrelkit computes, in one table: `parse_metrics`, `qrelkit eval --help`, the app and the docs read it.

Pure data and string helpers (no NumPy), so the CLI can build its help without importing the kernels.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from eval_core.vocab import CutoffKind

DEFAULT_K = (1, 3, 5, 10, 20, 100)
DEFAULT_P = 0.8


@dataclass(frozen=True)
class Metric:
    """One metric: its name, how it takes a cutoff, its definition, where it comes from, its name elsewhere."""

    name: str
    cutoff: CutoffKind | str  # how it takes its argument (eval_core.vocab.CutoffKind)
    definition: str
    citation: str
    trec_eval: str = "—"
    pytrec_eval: str = "—"
    ir_measures: str = "—"
    ranx: str = "—"


METRICS: tuple[Metric, ...] = (
    Metric("P", "k", "hits in the top k / k (k even when fewer were retrieved)",
           "Manning, Raghavan & Schütze 2008, §8.4", "P.k", "P_k", "P@k", "precision@k"),
    Metric("P_ceiling", "k", "min(k, R) / k: the best P@k any ranking can reach for the query",
           "the precision@k ceiling (Manning et al. 2008, §8.4)"),
    Metric("recall", "optional", "hits in the top k (or all retrieved) / R",
           "Manning, Raghavan & Schütze 2008, §8.3", "recall.k; num_rel_ret/num_rel", "recall_k",
           "R@k; R", "recall@k"),
    Metric("success", "k", "1 if any hit is in the top k, else 0",
           "hit rate / success@k (trec_eval)", "success.k", "success_k", "Success@k", "hit_rate@k"),
    Metric("F1", "k", "2·P@k·recall@k / (P@k + recall@k)",
           "van Rijsbergen 1979 (F measure)", "—", "—", "—", "f1@k"),
    Metric("ndcg", "optional", "Σ_{i≤k} grade_i / log2(i+1) over the ideal's sum (judged grades best first)", "Järvelin & Kekäläinen 2002",
           "ndcg_cut.k; ndcg", "ndcg_cut_k; ndcg", "nDCG@k; nDCG", "ndcg@k"),
    Metric("ndcg_exp", "optional", "nDCG with gain 2^grade − 1: Σ_{i≤k} (2^g_i − 1) / log2(i+1) over the ideal",
           "Burges et al. 2005", "—", "—", "nDCG(dcg='exp-log2')@k", "ndcg_burges@k"),
    Metric("dcg", "optional", "Σ_{i≤k} grade_i / log2(i+1), unnormalised",
           "Järvelin & Kekäläinen 2002", "—", "—", "—", "dcg@k"),
    Metric("map", "optional", "Σ over hits at rank r ≤ k of P@r, / R",
           "Manning, Raghavan & Schütze 2008, §8.4", "map_cut.k; map", "map_cut_k; map", "AP@k; AP", "map@k"),
    Metric("mrr", "optional", "1 / rank of the first hit (0 if none by k)",
           "Voorhees 1999 (TREC-8 QA)", "recip_rank", "recip_rank", "RR@k; RR", "mrr@k"),
    Metric("judged", "k", "judged fragments (any grade) in the top k / min(k, retrieved)",
           "MacAvaney, Macdonald & Ounis 2022 (ir-measures Judged@k)", "—", "—", "Judged@k", "—"),
    Metric("rprec", "none", "hits in the top R / R (precision at R)",
           "Manning, Raghavan & Schütze 2008, §8.4", "Rprec", "Rprec", "Rprec", "r-precision"),
    Metric("bpref", "none", "Σ over retrieved hits of 1 − min(judged non-relevant above, R)/min(R, N), / R",
           "Buckley & Voorhees 2004", "bpref", "bpref", "Bpref", "bpref"),
    Metric("err", "optional", "Σ_{r≤k} (1/r)·R_r·Π_{i<r}(1 − R_i), R_i = (2^g_i − 1)/2^max_grade",
           "Chapelle, Metzler, Zhang & Grinspan 2009", "—", "—", "ERR@k (gdeval)", "—"),
    Metric("rbp", "p", "(1 − p)·Σ_i rel_i·p^(i−1), binary rel_i",
           "Moffat & Zobel 2008", "—", "—", "RBP(p=p, rel=1)", "rbp.p"),
    Metric("rbp_residual", "p", "1 − (1 − p)·Σ_{judged retrieved i} p^(i−1): how much RBP could still grow",
           "Moffat & Zobel 2008", "—", "—", "—", "—"),
)
REGISTRY = {m.name: m for m in METRICS}

# The default metric set: every metric that takes a cutoff at each --k, then the cutoff-free ones.
DEFAULT_METRICS = (
    "P@k", "P_ceiling@k", "recall@k", "success@k", "F1@k", "ndcg@k", "ndcg_exp@k", "map@k", "mrr@k",
    "judged@k", "map", "mrr", "rprec", "ndcg", "recall", "bpref",
)
CONDENSED = "_condensed"
NAME = re.compile(r"^(?P<base>[A-Za-z_0-9]+?)(?:@(?P<arg>k|\d+(?:\.\d+)?))?(?P<cond>_condensed)?$")


def base_of(name: str) -> str | None:
    """The registered base of a metric name (`ndcg` for `ndcg@10_condensed`), None if unknown."""
    m = NAME.match(name.strip())
    return m["base"] if m and m["base"] in REGISTRY else None


def cutoff_free(name: str) -> bool:
    """True for a name that scores the whole ranking (`map`, `rprec`, `ndcg`), False for `P@10`, `rbp@0.8`.

    The app puts these in a table of their own: a cutoff column would be meaningless for them.
    """
    m = NAME.match(name.strip())
    if not m or m["base"] not in REGISTRY:
        raise ValueError(f"unknown metric {name!r}")
    kind = REGISTRY[m["base"]].cutoff
    return kind == "none" or (kind == "optional" and m["arg"] is None)


def spelled(metric: Metric) -> str:
    """How a metric is written on the command line (`P@k`, `recall[@k]`, `rprec`, `rbp@p`)."""
    return {"k": f"{metric.name}@k", "optional": f"{metric.name}[@k]", "none": metric.name,
            "p": f"{metric.name}@p"}[metric.cutoff]


def help_text() -> str:
    """The metric list for `qrelkit eval --help`, one line per metric."""
    width = max(len(spelled(m)) for m in METRICS)
    return "\n".join(f"  {spelled(m):<{width}}  {m.definition}" for m in METRICS)


def markdown_table() -> str:
    """The metric table of docs/eval.md (and README), generated so docs cannot drift from the code."""
    head = ("| metric | cutoff | definition | source | trec_eval | pytrec_eval | ir-measures | ranx |\n"
            "|---|---|---|---|---|---|---|---|")
    rows = [f"| `{spelled(m)}` | {m.cutoff} | {m.definition} | {m.citation} | {m.trec_eval} | {m.pytrec_eval} "
            f"| {m.ir_measures} | {m.ranx} |" for m in METRICS]
    return "\n".join([head, *rows])
