"""evaluate()'s signature says what it takes and returns: one run → Evaluation, a list → list, a dict → dict."""

from __future__ import annotations

import typing

from eval_core.ranking import evaluation
from eval_core.ranking.evaluation import Evaluation, evaluate

QRELS = {"q": {"a": 1, "b": 0}}
RUN = {"q": {"a": 2.0, "b": 1.0}}


def test_overloads_name_the_return_shape_of_each_input() -> None:
    overloads = typing.get_overloads(evaluate)
    assert [f.__annotations__["return"] for f in overloads] == [
        "list[Evaluation]",
        "dict[str, Evaluation]",
        "Evaluation",
    ]
    assert [f.__annotations__["run"] for f in overloads][-1] == "RunSource"
    assert evaluate.__annotations__["qrels"] == "QrelsSource"
    assert "Any" not in evaluation.QrelsSource and "Any" not in evaluation.RunSource


def test_the_shapes_are_what_the_overloads_say() -> None:
    one = evaluate(QRELS, RUN, metrics=["P@1"])
    many = evaluate(QRELS, [RUN, RUN], metrics=["P@1"])
    named = evaluate(QRELS, {"x": RUN, "y": RUN}, metrics=["P@1"])
    assert isinstance(one, Evaluation) and one.mean["P@1"] == 1.0
    assert isinstance(many, list) and all(isinstance(e, Evaluation) for e in many)
    assert isinstance(named, dict) and set(named) == {"x", "y"}
