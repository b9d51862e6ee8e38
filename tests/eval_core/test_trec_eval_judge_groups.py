"""trec_eval's judge-group measures on small hand-built cases; each expected value is derived in the docstring.

The query: judge g1 grades A=1 B=0 C=1 (R 2), judge g2 grades B=2 D=1 (R 2); the run ranks A B X C (X is judged
by nobody). For g1 the ranking reads rel, nonrel, unjudged, rel; for g2 unjudged, rel, unjudged, unjudged.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from eval_core.errors import InputError
from eval_core.ranking.trec_eval.judge_groups import (
    DEFAULT_PARAMS,
    JG_MEASURES,
    QrelsJG,
    jg_measures,
    read_qrels_jg,
)

QRELS = QrelsJG({"q": {"g1": {"A": 1, "B": 0, "C": 1}, "g2": {"B": 2, "D": 1}}})
RANKED = {"q": ["A", "B", "X", "C"]}
PARAMS = {"P_avgjg": [5, 2], "Rprec_mult_avgjg": [3.0, 0.5, 1.0]}


def test_names_defaults_and_order() -> None:
    """measures.c's qrels_jg set, and the defaults of m_P_avgjg.c and m_Rprec_mult_avgjg.c; values print in the
    order map, P by cutoff, Rprec_mult by multiple (cutoffs sorted, multiples named `%3.2f`)."""
    assert JG_MEASURES == ("map_avgjg", "P_avgjg", "Rprec_mult_avgjg")
    assert DEFAULT_PARAMS["P_avgjg"] == (5, 10, 15, 20, 30, 100, 200, 500, 1000)
    assert DEFAULT_PARAMS["Rprec_mult_avgjg"] == (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0)
    assert list(jg_measures(QRELS, RANKED, PARAMS)["q"]) == [
        "map_avgjg",
        "P_avgjg_2",
        "P_avgjg_5",
        "Rprec_mult_avgjg_0.50",
        "Rprec_mult_avgjg_1.00",
        "Rprec_mult_avgjg_3.00",
    ]
    assert len(jg_measures(QRELS, RANKED)["q"]) == 1 + 9 + 10


def test_values_are_averaged_over_judges() -> None:
    """map: g1 (1/1 + 2/4)/2 = 0.75, g2 (1/2)/2 = 0.25, mean 0.5.
    P@2: 1/2 and 1/2; P@5 (4 retrieved, the fifth counts as nonrelevant): 2/5 and 1/5, mean 0.3.
    Rprec_mult: R = 2 for both, cutoffs int(m·2 + 0.9) = 1, 2, 6. g1: P@1 1, P@2 1/2, P@6 past the end 2/6;
    g2: P@1 0, P@2 1/2, P@6 1/6. Means 0.5, 0.5, 0.25."""
    got = jg_measures(QRELS, RANKED, PARAMS)["q"]
    assert got == pytest.approx(
        {
            "map_avgjg": 0.5,
            "P_avgjg_2": 0.5,
            "P_avgjg_5": 0.3,
            "Rprec_mult_avgjg_0.50": 0.5,
            "Rprec_mult_avgjg_1.00": 0.5,
            "Rprec_mult_avgjg_3.00": 0.25,
        },
        abs=1e-12,
    )


def test_judged_only_and_relevance_level() -> None:
    """-J drops the docs a judge did not grade: g1 reads A B C, AP (1 + 2/3)/2 = 5/6; g2 reads B, AP 1/2;
    map (5/6 + 1/2)/2 = 2/3. -l 2: g1 has no relevant doc (adds 0), g2 has B, R 1, AP (1/2)/1: map 1/4."""
    assert jg_measures(QRELS, RANKED, judged_only=True)["q"]["map_avgjg"] == pytest.approx(2 / 3)
    assert jg_measures(QRELS, RANKED, rel_level=2)["q"]["map_avgjg"] == pytest.approx(0.25)


def test_pooled_unjudged_and_queries_outside_the_run() -> None:
    """A grade below 0 (pooled, not judged) is neither relevant nor counted in R: with g1's C at -1, g1 has R 1
    and AP 1/1, g2 0.25: map (1 + 0.25)/2 = 0.625. A query with nothing retrieved scores 0 everywhere; a query
    missing from `ranked` is not evaluated."""
    qrels = QrelsJG({"q": {"g1": {"A": 1, "B": 0, "C": -1}, "g2": {"B": 2, "D": 1}}, "r": {"g1": {"A": 1}}})
    assert jg_measures(qrels, RANKED)["q"]["map_avgjg"] == pytest.approx(0.625)
    empty = jg_measures(qrels, {"q": []})
    assert list(empty) == ["q"] and set(empty["q"].values()) == {0.0}


@pytest.mark.parametrize(
    "params", [{"P_avgjg": [0, 5]}, {"P_avgjg": [5, 5]}, {"Rprec_mult_avgjg": [1.0, 1.0]}, {"P": [5]}]
)
def test_parameters_trec_eval_refuses(params: dict[str, list[float]]) -> None:
    """Cutoffs must be positive and distinct (meas_init.c); only the two families take parameters."""
    with pytest.raises(ValueError):
        jg_measures(QRELS, RANKED, params)


def test_read_qrels_jg(tmp_path: Path) -> None:
    """Comments skipped, `#` inside a docid kept, groups and queries in byte order."""
    path = tmp_path / "qrels_jg"
    path.write_text("# judges\nq g2 B 2\nq g1 A#1 1\n# more\nq g1 B 0\n")
    assert read_qrels_jg(path).by_query == {"q": {"g1": {"A#1": 1, "B": 0}, "g2": {"B": 2}}}


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("q g1 A 1\nq g1 B\n", 2, "expected 4 fields"),
        ("q g1 A 1\nq g1 B 1 x\n", 2, "found 5"),
        ("q g1 A one\n", 1, "not an integer"),
        ("q g1 A 1\nq g2 A 0\nq g1 A 0\n", 3, "repeated"),
    ],
)
def test_read_qrels_jg_refuses_with_path_and_line(tmp_path: Path, text: str, line: int, words: str) -> None:
    """A short or long line, a grade that is not an integer, a doc graded twice by one judge (by two is fine)."""
    path = tmp_path / "qrels_jg"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        read_qrels_jg(path)
    assert str(err.value).startswith(f"{path}:{line}: ") and words in str(err.value)
