"""The metric registry is the one list: parse_metrics, the kernels and cutoff_free all follow it."""

from __future__ import annotations

import pytest

from eval_core.ranking.kernels import KERNELS
from eval_core.ranking.metrics import parse_metrics
from eval_core.ranking.registry import METRICS, REGISTRY, cutoff_free
from eval_core.vocab import CUTOFF_KINDS


def test_every_registered_metric_names_one_kernel_with_its_formula() -> None:
    assert all(m.kernel in KERNELS for m in REGISTRY.values())
    for name, kernel in KERNELS.items():
        doc = kernel.__doc__ or ""
        assert "=" in doc or "/" in doc, f"kernel {name} has no formula in its docstring"
    assert all(m.cutoff in CUTOFF_KINDS for m in METRICS)


def test_parse_metrics_follows_the_cutoff_kind() -> None:
    names = [s.name for s in parse_metrics(["P", "recall", "rprec", "rbp", "map@7"], k=(5, 10))]
    assert names == ["P@5", "P@10", "recall", "rprec", "rbp@0.8", "map@7"]
    with pytest.raises(ValueError, match="takes no cutoff"):
        parse_metrics(["bpref@10"])
    with pytest.raises(ValueError, match="known: F1, P, P_ceiling"):
        parse_metrics(["ndgc@10"])


@pytest.mark.parametrize(
    ("name", "free"),
    [
        ("mrr", True),
        ("map", True),
        ("rprec", True),
        ("bpref", True),
        ("ndcg", True),
        ("recall", True),
        ("ndcg_condensed", True),
        ("mrr@10", False),
        ("P@5", False),
        ("ndcg@10_condensed", False),
        ("rbp@0.8", False),
        ("judged@10", False),
    ],
)
def test_cutoff_free(name: str, free: bool) -> None:
    assert cutoff_free(name) is free


def test_cutoff_free_rejects_unknown_names() -> None:
    with pytest.raises(ValueError, match="unknown metric"):
        cutoff_free("ndgc")
