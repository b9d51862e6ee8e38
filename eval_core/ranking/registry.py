"""Every metric qrelkit computes, in one table: `parse_metrics`, `qrelkit eval --help`, the app and the docs read it.

Pure data and string helpers (no NumPy), so the CLI can build its help without importing the kernels.
"""

from __future__ import annotations

import re
from functools import cache
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from eval_core.vocab import CutoffKind

DEFAULT_K = (1, 3, 5, 10, 20, 100)
DEFAULT_P = 0.8


class Metric(NamedTuple):
    """One metric: its name, how it takes a cutoff, its definition, where it comes from, its name elsewhere, and
    the one kernel that computes it (`eval_core.ranking.kernels.KERNELS`) with the named arguments that make the
    kernel compute qrelkit's documented semantics (`kernels.Args` fields). A NamedTuple: immutable like a frozen
    dataclass, and made in a fraction of its time (every eval and trec_eval process imports the registry)."""

    name: str
    cutoff: CutoffKind | str  # how it takes its argument (eval_core.vocab.CutoffKind)
    definition: str
    citation: str
    trec_eval: str = "—"
    pytrec_eval: str = "—"
    ir_measures: str = "—"
    ranx: str = "—"
    kernel: str = ""
    kernel_args: tuple[tuple[str, bool], ...] = ()


METRICS: tuple[Metric, ...] = (
    Metric(
        "P",
        "k",
        "hits in the top k / k (k even when fewer were retrieved)",
        "Manning, Raghavan & Schütze 2008, §8.4",
        "P.k",
        "P_k",
        "P@k",
        "precision@k",
        kernel="precision",
    ),
    Metric(
        "P_ceiling",
        "k",
        "min(k, R) / k: the best P@k any ranking can reach for the query",
        "the precision@k ceiling (Manning et al. 2008, §8.4)",
        kernel="precision_ceiling",
    ),
    Metric(
        "recall",
        "optional",
        "hits in the top k (or all retrieved) / R",
        "Manning, Raghavan & Schütze 2008, §8.3",
        "recall.k; num_rel_ret/num_rel",
        "recall_k",
        "R@k; R",
        "recall@k",
        kernel="recall",
    ),
    Metric(
        "success",
        "k",
        "1 if any hit is in the top k, else 0",
        "hit rate / success@k (trec_eval)",
        "success.k",
        "success_k",
        "Success@k",
        "hit_rate@k",
        kernel="success",
    ),
    Metric(
        "F1",
        "k",
        "2·P@k·recall@k / (P@k + recall@k)",
        "van Rijsbergen 1979 (F measure)",
        "—",
        "—",
        "—",
        "f1@k",
        kernel="f1",
    ),
    Metric(
        "ndcg",
        "optional",
        "Σ_{i≤k} grade_i / log2(i+1) over the ideal's sum (judged grades best first)",
        "Järvelin & Kekäläinen 2002",
        "ndcg_cut.k; ndcg",
        "ndcg_cut_k; ndcg",
        "nDCG@k; nDCG",
        "ndcg@k",
        kernel="ndcg",
    ),
    Metric(
        "ndcg_exp",
        "optional",
        "nDCG with gain 2^grade − 1: Σ_{i≤k} (2^g_i − 1) / log2(i+1) over the ideal",
        "Burges et al. 2005",
        "—",
        "—",
        "nDCG(dcg='exp-log2')@k",
        "ndcg_burges@k",
        kernel="ndcg",
        kernel_args=(("exp_gain", True),),
    ),
    Metric(
        "dcg",
        "optional",
        "Σ_{i≤k} grade_i / log2(i+1), unnormalised",
        "Järvelin & Kekäläinen 2002",
        "—",
        "—",
        "—",
        "dcg@k",
        kernel="dcg",
    ),
    Metric(
        "map",
        "optional",
        "Σ over hits at rank r ≤ k of P@r, / R",
        "Manning, Raghavan & Schütze 2008, §8.4",
        "map_cut.k; map",
        "map_cut_k; map",
        "AP@k; AP",
        "map@k",
        kernel="average_precision",
    ),
    Metric(
        "mrr",
        "optional",
        "1 / rank of the first hit (0 if none by k)",
        "Voorhees 1999 (TREC-8 QA)",
        "recip_rank",
        "recip_rank",
        "RR@k; RR",
        "mrr@k",
        kernel="reciprocal_rank",
    ),
    Metric(
        "judged",
        "k",
        "judged fragments (any grade) in the top k / min(k, retrieved)",
        "MacAvaney, Macdonald & Ounis 2022 (ir-measures Judged@k)",
        "—",
        "—",
        "Judged@k",
        "—",
        kernel="judged",
    ),
    Metric(
        "rprec",
        "none",
        "hits in the top R / R (precision at R)",
        "Manning, Raghavan & Schütze 2008, §8.4",
        "Rprec",
        "Rprec",
        "Rprec",
        "r-precision",
        kernel="r_precision",
    ),
    Metric(
        "bpref",
        "none",
        "Σ over retrieved hits of 1 − min(judged non-relevant above, R)/min(R, N), / R",
        "Buckley & Voorhees 2004",
        "bpref",
        "bpref",
        "Bpref",
        "bpref",
        kernel="bpref",
    ),
    Metric(
        "err",
        "optional",
        "Σ_{r≤k} (1/r)·R_r·Π_{i<r}(1 − R_i), R_i = (2^g_i − 1)/2^max_grade",
        "Chapelle, Metzler, Zhang & Grinspan 2009",
        "—",
        "—",
        "ERR@k (gdeval)",
        "—",
        kernel="err",
    ),
    Metric(
        "rbp",
        "p",
        "(1 − p)·Σ_i rel_i·p^(i−1), binary rel_i",
        "Moffat & Zobel 2008",
        "—",
        "—",
        "RBP(p=p, rel=1)",
        "rbp.p",
        kernel="rbp",
        kernel_args=(("binary", True),),
    ),
    Metric(
        "rbp_residual",
        "p",
        "1 − (1 − p)·Σ_{judged retrieved i} p^(i−1): how much RBP could still grow",
        "Moffat & Zobel 2008",
        "—",
        "—",
        "—",
        "—",
        kernel="rbp_resid",
        kernel_args=(("zero_when_all_judged", False),),
    ),
)
REGISTRY = {m.name: m for m in METRICS}

# The default metric set: every metric that takes a cutoff at each --k, then the cutoff-free ones.
DEFAULT_METRICS = (
    "P@k",
    "P_ceiling@k",
    "recall@k",
    "success@k",
    "F1@k",
    "ndcg@k",
    "ndcg_exp@k",
    "map@k",
    "mrr@k",
    "judged@k",
    "map",
    "mrr",
    "rprec",
    "ndcg",
    "recall",
    "bpref",
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
    return {"k": f"{metric.name}@k", "optional": f"{metric.name}[@k]", "none": metric.name, "p": f"{metric.name}@p"}[
        metric.cutoff
    ]


def help_text() -> str:
    """The metric list for `qrelkit eval --help`, one line per metric."""
    width = max(len(spelled(m)) for m in METRICS)
    return "\n".join(f"  {spelled(m):<{width}}  {m.definition}" for m in METRICS)


def markdown_table() -> str:
    """The metric table of docs/eval.md (and README), generated so docs cannot drift from the code."""
    head = (
        "| metric | cutoff | definition | source | trec_eval | pytrec_eval | ir-measures | ranx |\n"
        "|---|---|---|---|---|---|---|---|"
    )
    rows = [
        f"| `{spelled(m)}` | {m.cutoff} | {m.definition} | {m.citation} | {m.trec_eval} | {m.pytrec_eval} "
        f"| {m.ir_measures} | {m.ranx} |"
        for m in METRICS
    ]
    return "\n".join([head, *rows])


# ---- trec_eval's measure families (`qrelkit trec_eval -m NAME`), and other tools' names as `qrelkit eval` aliases


class TrecFamily(NamedTuple):
    """One trec_eval 10.0 measure family: its definition, source, names elsewhere, and qrelkit's equivalent."""

    name: str
    definition: str
    citation: str
    pytrec_eval: str = "—"
    ir_measures: str = "—"
    ranx: str = "—"
    qrelkit: str = "—"


_TE = "trec_eval 10.0 (Buckley)"
TREC_EVAL_FAMILIES: tuple[TrecFamily, ...] = (
    TrecFamily("runid", "run id of the run file's last line", _TE, "runid"),
    TrecFamily("num_q", "number of queries evaluated", _TE, "num_q", "NumQ"),
    TrecFamily("num_ret", "documents retrieved (summary: sum)", _TE, "num_ret", "NumRet"),
    TrecFamily("num_rel", "R: judged documents with grade ≥ -l (summary: sum)", _TE, "num_rel", "NumRel"),
    TrecFamily("num_rel_ret", "relevant documents retrieved (summary: sum)", _TE, "num_rel_ret", "NumRelRet"),
    TrecFamily(
        "map", "Σ over relevant retrieved of P@rank, / R", "Manning et al. 2008, §8.4", "map", "AP", "map", "map"
    ),
    TrecFamily("gm_map", "exp(mean log max(AP, 1e-5))", "Robertson 2006 (GMAP)", "gm_map"),
    TrecFamily(
        "Rprec", "relevant in the top R / R", "Buckley & Voorhees 2005", "Rprec", "Rprec", "r-precision", "rprec"
    ),
    TrecFamily(
        "bpref",
        "Σ over judged relevant of 1 − min(nonrel above, R)/min(N, R), / R",
        "Buckley & Voorhees 2004",
        "bpref",
        "Bpref",
        "bpref",
        "bpref",
    ),
    TrecFamily(
        "recip_rank", "1 / rank of the first relevant document", "Voorhees 1999", "recip_rank", "RR", "mrr", "mrr"
    ),
    TrecFamily(
        "iprec_at_recall",
        "max precision at or after the rank reaching round(x·R) relevant (9: int(x·R+.9))",
        _TE,
        "iprec_at_recall",
        "IPrec@x",
        "—",
    ),
    TrecFamily("P", "relevant in the top k / k", "Manning et al. 2008, §8.4", "P_k", "P@k", "precision@k", "P@k"),
    TrecFamily("relstring", "grades of the first N documents as characters (- not pooled, . unjudged)", _TE),
    TrecFamily(
        "recall", "relevant in the top k / R", "Manning et al. 2008, §8.3", "recall_k", "R@k", "recall@k", "recall@k"
    ),
    TrecFamily("infAP", "inferred AP with −2 grades pooled-unjudged", "Yilmaz & Aslam 2006", "infAP", "infAP"),
    TrecFamily("gm_bpref", "exp(mean log max(bpref, 1e-5))", _TE, "gm_bpref"),
    TrecFamily("Rprec_mult", "precision at int(x·R + 0.9)", _TE, "Rprec_mult_x"),
    TrecFamily(
        "utility", "a·rel_ret + b·nonrel_ret + c·rel_missed + d·nonrel_missed (default 1,−1,0,0)", _TE, "utility"
    ),
    TrecFamily(
        "11pt_avg", "mean interpolated precision over recall points 0, 0.1, …, 1", "Salton & McGill 1983", "11pt_avg"
    ),
    TrecFamily("binG", "Σ over relevant retrieved of 1/log2(2 + nonrel above), / R", _TE, "binG"),
    TrecFamily("G", "Σ gain/log2(2 + ideal cost − gain so far), / ideal gain", _TE, "G"),
    TrecFamily(
        "dcg",
        "Σ gain_i / log2(i + 1) over the ranking (gains: grade, or -m dcg.g=v)",
        "Järvelin & Kekäläinen 2002",
        "—",
        "—",
        "dcg",
        "dcg",
    ),
    TrecFamily("ideal_dcg", "DCG of the judged documents sorted by gain", "Järvelin & Kekäläinen 2002"),
    TrecFamily(
        "ndcg", "DCG / ideal DCG over the whole ranking", "Järvelin & Kekäläinen 2002", "ndcg", "nDCG", "ndcg", "ndcg"
    ),
    TrecFamily("ndcg_rel", "nDCG averaged at each relevant document", _TE, "ndcg_rel"),
    TrecFamily("Rndcg", "nDCG averaged at the ideal ranking's gain-level changes", _TE, "Rndcg"),
    TrecFamily(
        "ndcg_cut",
        "DCG@k / ideal DCG@k, gains = grades",
        "Järvelin & Kekäläinen 2002",
        "ndcg_cut_k",
        "nDCG@k",
        "ndcg@k",
        "ndcg@k",
    ),
    TrecFamily("map_cut", "Σ over relevant in the top k of P@rank, / R", _TE, "map_cut_k", "AP@k", "map@k", "map@k"),
    TrecFamily("relative_P", "relevant in the top k / min(k, R)", _TE, "relative_P_k"),
    TrecFamily(
        "success",
        "1 if a relevant document is in the top k",
        "Tomlinson (trec_eval)",
        "success_k",
        "Success@k",
        "hit_rate@k",
        "success@k",
    ),
    TrecFamily("set_P", "relevant retrieved / retrieved", _TE, "set_P", "SetP"),
    TrecFamily("set_relative_P", "relevant retrieved / min(retrieved, R)", _TE, "set_relative_P"),
    TrecFamily("set_recall", "relevant retrieved / R", _TE, "set_recall", "SetR"),
    TrecFamily("set_map", "relevant retrieved² / (retrieved · R)", _TE, "set_map", "SetAP"),
    TrecFamily("set_F", "(x+1)·P·R / (x·P + R) over the retrieved set (x = 1)", "van Rijsbergen 1979", "set_F", "SetF"),
    TrecFamily(
        "num_nonrel_judged_ret", "judged non-relevant documents retrieved (summary: sum)", _TE, "num_nonrel_judged_ret"
    ),
    *(
        TrecFamily(name, definition, "trec_eval 10.0 preferences (Carterette et al.)")
        for name, definition in (
            ("prefs_num_prefs_poss", "preferences possible (summary: sum)"),
            ("prefs_num_prefs_ful", "preferences fulfilled (summary: sum)"),
            ("prefs_num_prefs_ful_ret", "preferences fulfilled among retrieved (summary: sum)"),
            ("prefs_simp", "fulfilled / possible preferences"),
            ("prefs_pair", "fulfilled / possible, averaged over preferred documents"),
            ("prefs_avgjg", "prefs_simp averaged over judgment groups"),
            ("prefs_avgjg_Rnonrel", "prefs_avgjg with non-relevant documents cut at R"),
            ("prefs_simp_ret", "prefs_simp over retrieved pairs"),
            ("prefs_pair_ret", "prefs_pair over retrieved pairs"),
            ("prefs_avgjg_ret", "prefs_avgjg over retrieved pairs"),
            ("prefs_avgjg_Rnonrel_ret", "prefs_avgjg_Rnonrel over retrieved pairs"),
            ("prefs_simp_imp", "prefs_simp, one retrieved document implying the preference"),
            ("prefs_pair_imp", "prefs_pair, likewise"),
            ("prefs_avgjg_imp", "prefs_avgjg, likewise"),
        )
    ),
    TrecFamily("map_avgjg", "AP per judgment group of -R qrels_jg, averaged", _TE),
    TrecFamily("P_avgjg", "P@k per judgment group, averaged", _TE),
    TrecFamily("Rprec_mult_avgjg", "Rprec_mult per judgment group, averaged", _TE),
    TrecFamily("yaap", "log((1 + s)/(1 + R − s)), s = Σ over relevant retrieved of P@rank", "Robertson 2012"),
    TrecFamily(
        "rbp",
        "(1 − p)·Σ gain_i·p^(i−1), gains scaled into [0, 1], p = 0.9",
        "Moffat & Zobel 2008",
        "—",
        "RBP(p=0.9)",
        "rbp.p",
    ),
    TrecFamily("rbp_resid", "p^n + (1 − p)·Σ over unjudged retrieved of p^(i−1)", "Moffat & Zobel 2008"),
    TrecFamily("unj", "unjudged documents in the top k / k", "Soboroff (trec_eval 10.0)", "—", "1 − Judged@k"),
)

_CUT = r"(?P<k>\d+)"
# Other tools' spellings `qrelkit eval --metrics` accepts, case as those tools write them → qrelkit's spelling.
ALIAS_PATTERNS: tuple[tuple[str, str], ...] = (
    (rf"P[_.]{_CUT}", "P@{k}"),
    (rf"recall[_.]{_CUT}", "recall@{k}"),
    (rf"success[_.]{_CUT}", "success@{k}"),
    (rf"ndcg_cut[_.]{_CUT}", "ndcg@{k}"),
    (rf"map_cut[_.]{_CUT}", "map@{k}"),
    (r"recip_rank", "mrr"),
    (r"Rprec", "rprec"),
    (rf"nDCG@{_CUT}", "ndcg@{k}"),
    (r"nDCG", "ndcg"),
    (rf"AP@{_CUT}", "map@{k}"),
    (r"AP", "map"),
    (rf"RR@{_CUT}", "mrr@{k}"),
    (r"RR", "mrr"),
    (rf"R@{_CUT}", "recall@{k}"),
    (rf"Success@{_CUT}", "success@{k}"),
    (rf"Judged@{_CUT}", "judged@{k}"),
    (r"Bpref", "bpref"),
    (rf"precision@{_CUT}", "P@{k}"),
    (rf"hit_rate@{_CUT}", "success@{k}"),
    (r"r-precision", "rprec"),
    (rf"f1@{_CUT}", "F1@{k}"),
    (rf"ndcg_burges@{_CUT}", "ndcg_exp@{k}"),
    (rf"ERR@{_CUT}", "err@{k}"),
)


@cache
def _aliases() -> tuple[tuple[re.Pattern[str], str], ...]:
    """ALIAS_PATTERNS compiled, on the first name looked up (23 patterns: a few ms of every start-up otherwise)."""
    return tuple((re.compile(f"^{pattern}$"), target) for pattern, target in ALIAS_PATTERNS)


def resolve_alias(name: str) -> str:
    """qrelkit's spelling of a trec_eval / pytrec_eval / ir-measures / ranx metric name (`P_10` → `P@10`,
    `ndcg_cut_10` → `ndcg@10`, `nDCG@10` → `ndcg@10`, `RR` → `mrr`); other names are returned unchanged."""
    for pattern, target in _aliases():
        m = pattern.match(name)
        if m:
            return target.format(**m.groupdict())
    return name


def trec_only(name: str) -> bool:
    """Whether `name` is a trec_eval measure qrelkit eval has no metric for (then `qrelkit trec_eval -m` has it)."""
    base = re.split(r"[_.](?=\d)|\.", name, maxsplit=1)[0]
    return any(f.name == base and f.qrelkit == "—" for f in TREC_EVAL_FAMILIES)


def trec_eval_table() -> str:
    """The trec_eval family table of docs/eval.md, generated so the docs list every family."""
    head = (
        "| trec_eval family | definition | source | pytrec_eval | ir-measures | ranx | qrelkit eval |\n"
        "|---|---|---|---|---|---|---|"
    )
    rows = [
        f"| `{f.name}` | {f.definition} | {f.citation} | {f.pytrec_eval} | {f.ir_measures} | {f.ranx} | {f.qrelkit} |"
        for f in TREC_EVAL_FAMILIES
    ]
    return "\n".join([head, *rows])
