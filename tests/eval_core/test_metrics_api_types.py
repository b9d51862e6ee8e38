"""evaluate()'s signature says what it takes and returns: one run → Evaluation, a list → list, a dict → dict."""

from __future__ import annotations

import io
import typing
from pathlib import Path

import pytest

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


def test_each_reader_names_what_it_takes_from_one_alias() -> None:
    """The readers and evaluate() share formats' aliases (one definition each), none of them Any."""
    from eval_core.io import formats

    assert evaluation.QrelsSource is formats.QrelsSource and evaluation.RunSource is formats.RunSource
    assert "QrelsSource: TypeAlias" not in Path(evaluation.__file__).read_text(encoding="utf-8")
    takes = {
        formats.load_run: "RunSource",
        formats.read_run: "RunSource",
        formats.load_qrels: "QrelsSource",
        formats.read_qrels: "QrelsSource",
        formats.named_scale: "QrelsSource",
        formats.read_categories: "CategoriesSource",
    }
    assert {f.__name__: f.__annotations__["src"] for f in takes} == {f.__name__: a for f, a in takes.items()}
    assert "Any" not in formats.CategoriesSource
    assert evaluate.__annotations__["categories"] == "CategoriesSource | None"


def test_an_open_file_is_not_a_source() -> None:
    """The aliases say a file is given by its path: an open file object is refused, naming what is taken."""
    from eval_core.io.formats import load_qrels

    with pytest.raises(TypeError, match=r"qrels must be a path, a DataFrame or a dict, not StringIO"):
        load_qrels(io.StringIO("q 0 a 1\n"))  # type: ignore[arg-type]


def test_categories_from_a_dict_group_the_means() -> None:
    # q1 has a relevant first hit (P@1 = 1), q2 none (P@1 = 0): each category's mean is its one query's value.
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    run = {"q1": {"a": 2.0}, "q2": {"c": 2.0}}
    result = evaluate(qrels, run, metrics=["P@1"], categories={"q1": "easy", "q2": "hard"})
    assert result.by_category is not None
    assert result.by_category["P@1"].to_dict() == {"easy": 1.0, "hard": 0.0}
