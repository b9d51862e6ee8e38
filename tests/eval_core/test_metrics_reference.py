"""Every metric, every query, against reference implementations on seeded random data.

Which reference name each metric has is read from the metric registry's own columns (`pytrec_eval`, `ranx`,
`ir_measures` in eval_core/ranking/registry.py), never re-mapped here, so a wrong column fails a test:
pytrec_eval (trec_eval's own C code) for the trec_eval measures, its `judged_docs_only_flag` (trec_eval -J)
for the condensed variants; ranx and ir-measures (pytrec_eval, gdeval.pl, cwl_eval and its own `judged`
underneath) for every metric their column names.

The data has heavy score ties (multiples of 0.25, exact in float32, which pytrec_eval compares),
unjudged documents, short lists, queries missing on either side, queries without relevant documents,
graded 0–3 qrels, and docids whose byte order differs from their numeric order. ranx and ir-measures
break ties differently from trec_eval (documented in docs/eval.md), so they are compared on untied runs.
"""

from __future__ import annotations

import re

import ir_measures
import numpy as np
import pandas as pd
import pytest
import pytrec_eval
from ranx import Qrels, Run
from ranx import evaluate as ranx_evaluate

from eval_core import evaluate
from eval_core.ranking.registry import METRICS, NAME, REGISTRY

KS = (1, 3, 5, 10, 20, 100)
TOL = 1e-9


def make_case(seed: int, ties: bool = True, n_queries: int = 40) -> tuple[dict, dict]:
    """Seeded qrels and run dicts with every awkward case: ties, unjudged and negative grades, short lists,
    queries missing on either side or without relevant documents, byte order unlike numeric order."""
    rng = np.random.default_rng(seed)
    # Long ids of many lengths too: qrels and run are keyed separately, so a key must not depend on the
    # longest id in its array (a regression that once scored every query 0).
    pool = (
        [f"d{j}" for j in range(80)]
        + ["dé", "DZ", "d_", "d9a", "z", "a"]
        + [f"clueweb09-en{j:04d}" + "-x" * (j % 9) for j in range(20)]
    )
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for i in range(n_queries):
        qid = str(i)  # numeric ids: gdeval.pl (ERR) only accepts those
        docs = list(rng.choice(pool, size=45, replace=False))
        if rng.random() > 0.1:  # ~10% of run queries are absent from the qrels
            judged = docs[: int(rng.integers(1, 30))]
            grades = rng.choice(4, size=len(judged), p=[0.45, 0.25, 0.18, 0.12])
            if rng.random() < 0.08:
                grades[:] = 0  # no relevant document at all
            if rng.random() < 0.15:
                grades[0] = -1  # negative grades occur in TREC qrels: judged, never relevant
            qrels[qid] = {d: int(g) for d, g in zip(judged, grades, strict=True)}
        if rng.random() > 0.1:  # ~10% of qrels queries are absent from the run
            n = int(rng.integers(1, 45))  # short lists too
            ranked = list(rng.choice(docs, size=n, replace=False))
            scores = rng.integers(0, 6, n) * 0.25 if ties else rng.permutation(n).astype(float) * 0.5 + 1.0
            run[qid] = {d: float(s) for d, s in zip(ranked, scores, strict=True)}
    return qrels, run


def ours(qrels: dict, run: dict, metrics: list[str], rel_level: int = 1, **kw) -> dict[str, dict[str, float]]:
    ev = evaluate(qrels, run, metrics=metrics, k=KS, rel_level=rel_level, **kw)
    return ev.per_query.to_dict(orient="index")


def check(mine: dict, ref: dict[str, dict[str, float]], name_map: dict[str, str], tol: float = TOL) -> None:
    """Every mapped metric of every query the reference scored; qrels queries it skipped must be 0 in ours."""
    assert ref, "reference returned nothing"
    for qid, row in mine.items():
        for ours_name, ref_name in name_map.items():
            expected = ref[qid][ref_name] if qid in ref else 0.0
            assert row[ours_name] == pytest.approx(expected, abs=tol), (qid, ours_name, ref_name)


def pytrec(qrels: dict, run: dict, measures: set[str], rel_level: int = 1, judged_only: bool = False) -> dict:
    ev = pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=rel_level, judged_docs_only_flag=judged_only)
    return ev.evaluate(run)


# The placeholder of a registry column: the cutoff k (`P_k`, `P@k`, `P.k`) or the persistence p (`rbp.p`, `p=p`).
PLACEHOLDER = re.compile(r"(?<=[@_.])k\b|(?<=[.=])p\b")


def every_name() -> list[str]:
    """Each registered metric at every cutoff of KS (and without one where it takes none or an optional one),
    rbp at p = 0.8 and 0.5."""
    names: list[str] = []
    for metric in METRICS:
        if metric.cutoff in ("k", "optional"):
            names += [f"{metric.name}@{k}" for k in KS]
        if metric.cutoff in ("optional", "none"):
            names.append(metric.name)
        if metric.cutoff == "p":
            names += [f"{metric.name}@0.8", f"{metric.name}@0.5"]
    return names


def ref_name(name: str, library: str) -> str | None:
    """The library's name of our metric `name`, from the registry's column: `a_k; b` is `a_k` at a cutoff and
    `b` without one; a `(…)` note is dropped; ranx's `m@k` also names m without a cutoff. None: no name."""
    m = NAME.match(name)
    assert m and m["base"] in REGISTRY, name
    column = getattr(REGISTRY[m["base"]], library)
    if column == "—":
        return None
    forms = [f.split(" (")[0].strip() for f in column.split(";")]
    with_arg = [f for f in forms if PLACEHOLDER.search(f)]
    without = [f for f in forms if not PLACEHOLDER.search(f)]
    if m["arg"] is not None:
        return PLACEHOLDER.sub(m["arg"], with_arg[0]) if with_arg else None
    if without:
        return without[0]
    return with_arg[0][:-2] if library == "ranx" and with_arg and with_arg[0].endswith("@k") else None


def registry_map(library: str) -> dict[str, str]:
    """Our name → the library's, for every metric the registry names in that library."""
    return {name: ref for name in every_name() if (ref := ref_name(name, library))}


TREC_MAP = registry_map("pytrec_eval")
_FAMILIES = {ref.rsplit("_", 1)[0] for name, ref in TREC_MAP.items() if "@" in name}
TREC_MEASURES = (
    {f"{f}.{','.join(map(str, KS))}" for f in _FAMILIES}
    | {"num_rel", "num_rel_ret"}
    | {ref for name, ref in TREC_MAP.items() if "@" not in name}
)


def _with_derived(ref: dict) -> dict:
    """Add full recall and F1@k derived from pytrec_eval's own counts, P and recall."""
    for row in ref.values():
        row["recall_full"] = row["num_rel_ret"] / row["num_rel"] if row["num_rel"] else 0.0
        for k in KS:
            p, r = row[f"P_{k}"], row[f"recall_{k}"]
            row[f"F1_{k}"] = 2 * p * r / (p + r) if p + r else 0.0
    return ref


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("rel_level", [1, 2])
def test_trec_eval_measures_every_query(seed: int, rel_level: int) -> None:
    qrels, run = make_case(seed)
    names = [*TREC_MAP, "recall", *[f"F1@{k}" for k in KS]]
    mine = ours(qrels, run, names, rel_level)
    ref = _with_derived(pytrec(qrels, run, TREC_MEASURES, rel_level))
    check(mine, ref, {**TREC_MAP, "recall": "recall_full", **{f"F1@{k}": f"F1_{k}" for k in KS}})
    assert set(mine) == set(qrels)  # every qrels query scored (trec_eval -c), run-only queries not


@pytest.mark.parametrize("layout", ["sorted_wrong_ties", "shuffled_frame"])
def test_row_layouts_take_every_ordering_path(layout: str) -> None:
    """Rows already in score order but ties in docid-ascending order (only the tie fix-up runs), and a
    DataFrame whose queries are interleaved (the full sort runs): both must match trec_eval."""
    qrels, run = make_case(8)
    rows = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    if layout == "sorted_wrong_ties":
        rows.sort(key=lambda r: (int(r[0]), -r[2], r[1]))
    else:
        rows = [rows[i] for i in np.random.default_rng(8).permutation(len(rows))]
    frame = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
    mine = evaluate(qrels, frame, metrics=list(TREC_MAP), k=KS).per_query.to_dict(orient="index")
    check(mine, pytrec(qrels, run, TREC_MEASURES), TREC_MAP)


@pytest.mark.parametrize("seed", [3, 4])
def test_condensed_variants_match_trec_eval_J(seed: int) -> None:
    qrels, run = make_case(seed)
    mapping = {f"{ours_name}_condensed": ref for ours_name, ref in TREC_MAP.items()}
    mine = ours(qrels, run, list(mapping))
    check(mine, pytrec(qrels, run, TREC_MEASURES, judged_only=True), mapping)


# Registry columns that name a metric the library computes differently: each must still differ (the test
# says so when it no longer does), and is reported rather than compared.
RANX_DIFFERS = {
    "bpref": "ranx divides by min(R, N) of its own counts (judged non-relevant N, negative grades included)",
    "rbp@0.8": "ranx's RBP weighs each hit by its grade; qrelkit's (ir-measures' RBP(rel=1)) is binary",
    "rbp@0.5": "ranx's RBP weighs each hit by its grade; qrelkit's (ir-measures' RBP(rel=1)) is binary",
}
IR_MEASURES_REFUSES = {"recall": "ir-measures' R takes a cutoff; it has no whole-ranking recall"}


def test_registry_columns_are_read_here() -> None:
    """The maps come from the registry: the trec_eval, ranx and ir-measures names of P@5, and none where the
    registry has none."""
    assert TREC_MAP["P@5"] == "P_5" and TREC_MAP["ndcg"] == "ndcg" and "mrr@5" not in TREC_MAP
    assert registry_map("ranx")["success@10"] == "hit_rate@10" and registry_map("ranx")["map"] == "map"
    assert registry_map("ir_measures")["err@10"] == "ERR@10" and "P_ceiling@5" not in registry_map("ranx")


@pytest.mark.parametrize("seed", [5, 6])
def test_ranx_every_named_metric_untied(seed: int) -> None:
    qrels, run = make_case(seed, ties=False)
    names = registry_map("ranx")
    mine = ours(qrels, run, list(names))
    # ranx's plain dicts line queries up by position: always go through its Qrels/Run objects.
    rq = Qrels({q: d for q, d in qrels.items()})
    rr = Run({q: d for q, d in run.items() if q in qrels})
    ranx_evaluate(rq, rr, list(names.values()), make_comparable=True)
    ref = {q: {m: float(rr.scores[m][q]) for m in names.values()} for q in rr.keys()}  # noqa: SIM118
    for q in qrels:
        if q not in run:
            ref.pop(q, None)
    check(mine, ref, {n: r for n, r in names.items() if n not in RANX_DIFFERS})
    for name in set(RANX_DIFFERS) & set(names):
        assert any(abs(mine[q][name] - ref[q][names[name]]) > 1e-6 for q in ref), f"{name} now agrees with ranx"


@pytest.mark.parametrize("seed", [7])
def test_ir_measures_every_named_metric_untied(seed: int) -> None:
    qrels, run = make_case(seed, ties=False)
    qr = [ir_measures.Qrel(q, d, g) for q, docs in qrels.items() for d, g in docs.items()]
    rn = [ir_measures.ScoredDoc(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    measures = {n: ir_measures.parse_measure(r) for n, r in registry_map("ir_measures").items()}
    for name in set(IR_MEASURES_REFUSES) & set(measures):
        with pytest.raises(AssertionError):
            list(ir_measures.iter_calc([measures.pop(name)], qr, rn))
    ref: dict[str, dict[str, float]] = {}
    for m in ir_measures.iter_calc(list(set(measures.values())), qr, rn):
        ref.setdefault(m.query_id, {})[str(m.measure)] = float(m.value)
    # gdeval.pl (ERR) fixes the top grade at 4 and prints 5 decimals: compare at that grade and precision
    # (max_grade changes no other metric).
    check(ours(qrels, run, list(measures), max_grade=4), ref, {n: str(m) for n, m in measures.items()}, tol=6e-6)


def test_means_are_over_every_qrels_query() -> None:
    """trec_eval -c: the mean divides by the number of qrels queries, missing-from-run ones counting 0."""
    qrels, run = make_case(11)
    ref = pytrec(qrels, run, {"map", "P_5"})
    ev = evaluate(qrels, run, metrics=["map", "P@5"])
    assert ev.mean["map"] == pytest.approx(sum(r["map"] for r in ref.values()) / len(qrels), abs=TOL)
    assert ev.mean["P@5"] == pytest.approx(sum(r["P_5"] for r in ref.values()) / len(qrels), abs=TOL)
    assert any("missing from the run" in w for w in ev.warnings)
    assert any("not in the qrels" in w for w in ev.warnings)
    assert any("no relevant" in w for w in ev.warnings)
