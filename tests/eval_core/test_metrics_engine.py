"""One engine: every measure `qrelkit eval` and `qrelkit trec_eval` share is computed by one kernel.

The registry's metrics and trec_eval's families name their kernel (`eval_core.ranking.kernels.KERNELS`); the
families both tools have must name the same one; and no module outside kernels.py defines a function that
computes one of them again (found by name: a second `_map`, `_bpref`, `_ndcg` … anywhere in the package).
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from eval_core.ranking import kernels
from eval_core.ranking.registry import REGISTRY
from eval_core.ranking.trec_eval import measures
from eval_core.ranking.trec_eval.rels import RelMatrix

ROOT = Path(__file__).resolve().parents[2]

# trec_eval family → the qrelkit eval metric computing the same measure (the twelve both tools have)
SHARED = {
    "map": "map",
    "map_cut": "map",
    "bpref": "bpref",
    "Rprec": "rprec",
    "recip_rank": "mrr",
    "P": "P",
    "recall": "recall",
    "success": "success",
    "dcg": "dcg",
    "ndcg": "ndcg",
    "ndcg_cut": "ndcg",
    "rbp": "rbp",
    "rbp_resid": "rbp_residual",
}

# what a kernel of each shared measure would be called if someone wrote it again
KERNEL_NAMES = {
    "map", "ap", "average_precision", "map_cut", "bpref", "rprec", "r_precision", "recip_rank", "mrr",
    "reciprocal_rank", "p", "precision", "recall", "success", "dcg", "ndcg", "ndcg_cut", "ndcg_exp", "rbp",
    "rbp_resid", "rbp_residual", "ideal_dcg", "err", "judged", "f1", "p_ceiling", "precision_ceiling",
}  # fmt: skip


def test_every_metric_and_family_names_a_kernel() -> None:
    for metric in REGISTRY.values():
        assert metric.kernel in kernels.KERNELS, metric.name
        fields = set(kernels.Args.__dataclass_fields__)
        assert {name for name, _ in metric.kernel_args} <= fields, metric.name
    for family in measures.FAMILIES:
        assert not family.kernel or family.kernel in kernels.KERNELS, family.name
        assert not (family.kernel and family.compute), f"{family.name} has a kernel and its own function"


@pytest.mark.parametrize(("family", "metric"), sorted(SHARED.items()))
def test_shared_measures_use_the_same_kernel(family: str, metric: str) -> None:
    assert measures.BY_NAME[family].kernel == REGISTRY[metric].kernel


def _defined_functions(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.name.lstrip("_").lower() for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}


def test_no_module_outside_the_engine_defines_a_kernel() -> None:
    """A second implementation of a shared measure, under its own name, anywhere in the product, fails here."""
    engine = ROOT / "eval_core" / "ranking" / "kernels.py"
    offenders = []
    for package in ("eval_core", "db", "annotator"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if path == engine:
                continue
            again = _defined_functions(path) & KERNEL_NAMES
            if again:
                offenders.append(f"{path.relative_to(ROOT)}: {sorted(again)}")
    assert not offenders, "measure kernels defined outside eval_core/ranking/kernels.py:\n" + "\n".join(offenders)


def test_the_guard_sees_a_second_kernel(tmp_path: Path) -> None:
    """The scan above is not vacuous: a module defining `_bpref` is found."""
    path = tmp_path / "second.py"
    path.write_text("def _bpref(m):\n    return m\n")
    assert _defined_functions(path) & KERNEL_NAMES == {"bpref"}


def test_named_parameters_are_the_documented_differences() -> None:
    """rbp: binary (qrelkit eval) vs gain-scaled (trec_eval); rbp_resid: a fully judged query gets 0 in trec_eval
    (m_rbp_resid.c leaves its value unset), p^n in qrelkit eval. Worked by hand on one query: grades 2, 0, then an
    unretrieved… ranking [2, 0] with both judged, p = 0.5: binary RBP = 0.5·1 = 0.5; gain-scaled = 0.5·(2/2) = 0.5;
    grades [1, 2]: binary 0.5·(1 + 0.5) = 0.75, scaled 0.5·(0.5 + 1·0.5) = 0.5."""
    m = RelMatrix.from_rows(["q"], [[1, 2]], np.array([[0, 1, 1]]), np.array([False]), 1)
    binary = kernels.rbp(m, kernels.Args(p=0.5, binary=True))
    scaled = kernels.rbp(m, kernels.Args(p=0.5))
    assert binary[0, 0] == pytest.approx(0.75) and scaled[0, 0] == pytest.approx(0.5)
    trec = kernels.rbp_resid(m, kernels.Args(p=0.5))
    ours = kernels.rbp_resid(m, kernels.Args(p=0.5, zero_when_all_judged=False))
    assert trec[0, 0] == 0.0 and ours[0, 0] == pytest.approx(0.25)
