"""Every metric, every query, against reference implementations on seeded random data.

References: pytrec_eval (trec_eval's own C code) for the trec_eval measures, its `judged_docs_only_flag`
(trec_eval -J) for the condensed variants; ranx for ndcg_exp (its `ndcg_burges`), mrr@k and dcg@k;
ir-measures for judged@k (its `judged` provider), ERR@k (gdeval.pl) and RBP (cwl_eval).

The data has heavy score ties (multiples of 0.25, exact in float32, which pytrec_eval compares),
unjudged documents, short lists, queries missing on either side, queries without relevant documents,
graded 0–3 qrels, and docids whose byte order differs from their numeric order. ranx and ir-measures
break ties differently from trec_eval (documented in docs/eval.md), so they are compared on untied runs.
"""

from __future__ import annotations

import ir_measures
import numpy as np
import pandas as pd
import pytest
import pytrec_eval
from ranx import Qrels, Run
from ranx import evaluate as ranx_evaluate

from eval_core import evaluate

KS = (1, 3, 5, 10, 20, 100)
TOL = 1e-9


def make_case(seed: int, ties: bool = True, n_queries: int = 40) -> tuple[dict, dict]:
    """Seeded qrels and run dicts with every awkward case the brief lists."""
    rng = np.random.default_rng(seed)
    # Long ids of many lengths too: qrels and run are keyed separately, so a key must not depend on the
    # longest id in its array (a regression that once scored every query 0).
    pool = ([f"d{j}" for j in range(80)] + ["dé", "DZ", "d_", "d9a", "z", "a"]
            + [f"clueweb09-en{j:04d}" + "-x" * (j % 9) for j in range(20)])
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
    ev = pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=rel_level,
                                        judged_docs_only_flag=judged_only)
    return ev.evaluate(run)


TREC_MAP = {
    **{f"P@{k}": f"P_{k}" for k in KS},
    **{f"recall@{k}": f"recall_{k}" for k in KS},
    **{f"success@{k}": f"success_{k}" for k in KS},
    **{f"ndcg@{k}": f"ndcg_cut_{k}" for k in KS},
    **{f"map@{k}": f"map_cut_{k}" for k in KS},
    "map": "map", "mrr": "recip_rank", "rprec": "Rprec", "bpref": "bpref", "ndcg": "ndcg",
}
TREC_MEASURES = {"P", "recall", "success", "ndcg_cut", "map_cut", "map", "recip_rank", "Rprec", "bpref", "ndcg",
                 "num_rel", "num_rel_ret"}
TREC_MEASURES = {m + "." + ",".join(map(str, KS)) if m in ("P", "recall", "success", "ndcg_cut", "map_cut")
                 else m for m in TREC_MEASURES}


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


@pytest.mark.parametrize("seed", [5, 6])
def test_ranx_ndcg_exp_mrr_dcg_untied(seed: int) -> None:
    qrels, run = make_case(seed, ties=False)
    names = {f"ndcg_exp@{k}": f"ndcg_burges@{k}" for k in KS}
    names |= {f"mrr@{k}": f"mrr@{k}" for k in KS} | {f"dcg@{k}": f"dcg@{k}" for k in KS}
    names |= {f"P@{k}": f"precision@{k}" for k in KS} | {"map": "map", "mrr": "mrr", "rprec": "r-precision"}
    mine = ours(qrels, run, list(names))
    # ranx's plain dicts line queries up by position: always go through its Qrels/Run objects.
    rq = Qrels({q: d for q, d in qrels.items()})
    rr = Run({q: d for q, d in run.items() if q in qrels})
    ranx_evaluate(rq, rr, list(names.values()), make_comparable=True)
    ref = {q: {m: float(rr.scores[m][q]) for m in names.values()} for q in rr.keys()}  # noqa: SIM118
    for q in qrels:
        if q not in run:
            ref.pop(q, None)
    check(mine, ref, names)


@pytest.mark.parametrize("seed", [7])
def test_ir_measures_judged_err_rbp_untied(seed: int) -> None:
    qrels, run = make_case(seed, ties=False)
    qr = [ir_measures.Qrel(q, d, g) for q, docs in qrels.items() for d, g in docs.items()]
    rn = [ir_measures.ScoredDoc(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    judged = {f"judged@{k}": ir_measures.Judged @ k for k in KS}
    rbp = {"rbp@0.8": ir_measures.RBP(p=0.8, rel=1), "rbp@0.5": ir_measures.RBP(p=0.5, rel=1)}
    err = {f"err@{k}": ir_measures.ERR @ k for k in (1, 5, 10, 20)}

    def ref_of(measures: dict) -> dict:
        out: dict[str, dict[str, float]] = {}
        for m in ir_measures.iter_calc(list(measures.values()), qr, rn):
            out.setdefault(m.query_id, {})[str(m.measure)] = float(m.value)
        return out

    check(ours(qrels, run, list(judged)), ref_of(judged), {k: str(v) for k, v in judged.items()})
    check(ours(qrels, run, list(rbp)), ref_of(rbp), {k: str(v) for k, v in rbp.items()})
    # gdeval.pl fixes the top grade at 4 and prints 5 decimals: compare at that grade and precision.
    check(ours(qrels, run, list(err), max_grade=4), ref_of(err), {k: str(v) for k, v in err.items()}, tol=6e-6)


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
