"""trec_eval's preference measures on small hand-built cases; each expected value is derived in the docstring.

Notation: a preference A>B is "fulfilled" when A ranks above B and A is retrieved; ret = both retrieved,
imp = exactly one retrieved, notoccur = neither (form_prefs_counts.c).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from eval_core.errors import InputError
from eval_core.ranking.trec_eval.prefs import (
    PREFS_MEASURES,
    SUMMED_MEASURES,
    PrefJudgment,
    Prefs,
    prefs_from_qrels,
    prefs_measures,
    prefs_ranking,
    read_prefs,
    read_qrels_prefs,
)


def _prefs(rows: list[tuple[str, str, str, float]], qid: str = "q") -> Prefs:
    return Prefs({qid: tuple(PrefJudgment(*r) for r in rows)})


def _write(tmp_path: Path, text: str, name: str = "prefs") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_names_and_order_are_trec_evals() -> None:
    """measures.c lists the 14 preference measures in this order; the three counts are summed, not averaged."""
    assert PREFS_MEASURES == (
        "prefs_num_prefs_poss",
        "prefs_num_prefs_ful",
        "prefs_num_prefs_ful_ret",
        "prefs_simp",
        "prefs_pair",
        "prefs_avgjg",
        "prefs_avgjg_Rnonrel",
        "prefs_simp_ret",
        "prefs_pair_ret",
        "prefs_avgjg_ret",
        "prefs_avgjg_Rnonrel_ret",
        "prefs_simp_imp",
        "prefs_pair_imp",
        "prefs_avgjg_imp",
    )
    assert SUMMED_MEASURES == ("prefs_num_prefs_poss", "prefs_num_prefs_ful", "prefs_num_prefs_ful_ret")


def test_one_group_with_an_unretrieved_doc() -> None:
    """Levels A=2, B=1, C=0, D=0 in one sub-group give 5 preferences: A>B A>C A>D B>C B>D.
    Ranking B X A D (X unjudged, C not retrieved): internal ranks B0 A1 D2, then C3.
    A>B: both retrieved, A below B: possible, not fulfilled. A>D, B>D: ret, fulfilled. A>C, B>C: imp, fulfilled.
    ful_ret 2 of poss_ret 3, ful_imp 2 of poss_imp 2: poss 5, ful 4, ful_ret 2; simp = pair = avgjg = 4/5,
    *_ret = 2/3, *_imp = 4/5. Rnonrel: R = 2 relevant (A, B) >= N = 2 nonrelevant: no padding, 4/5.
    Rnonrel_ret: R = 2 relevant retrieved, N = 1 (D): ful 2 + 2·(2−1) = 4, poss 3 + num_rel 2·(2−1) = 5: 4/5."""
    prefs = _prefs([("u", "s", "A", 2), ("u", "s", "B", 1), ("u", "s", "C", 0), ("u", "s", "D", 0)])
    got = prefs_measures(prefs, {"q": ["B", "X", "A", "D"]})["q"]
    assert list(got) == list(PREFS_MEASURES)
    assert got == pytest.approx(
        {
            "prefs_num_prefs_poss": 5,
            "prefs_num_prefs_ful": 4,
            "prefs_num_prefs_ful_ret": 2,
            "prefs_simp": 0.8,
            "prefs_pair": 0.8,
            "prefs_avgjg": 0.8,
            "prefs_avgjg_Rnonrel": 0.8,
            "prefs_simp_ret": 2 / 3,
            "prefs_pair_ret": 2 / 3,
            "prefs_avgjg_ret": 2 / 3,
            "prefs_avgjg_Rnonrel_ret": 0.8,
            "prefs_simp_imp": 0.8,
            "prefs_pair_imp": 0.8,
            "prefs_avgjg_imp": 0.8,
        },
        abs=1e-12,
    )


def test_rnonrel_keeps_the_first_R_nonrelevant_docs() -> None:
    """A=1, C=D=E=0; ranking A C D E: internal ranks A0 C1 D2 E3. R = 1 < N = 3, so trec_eval recounts with the
    first R nonrelevant docs of the last class, [C1]: as m_prefs_avgjg_Rnonrel.c writes the loop, every class (the
    nonrelevant one too) is paired with [C1]: A0–C1 fulfilled, C1–C1, D2–C1, E3–C1 not: 1/4. All retrieved, so the
    _ret variant (R = 1 < N = 3 retrieved) counts the same 1/4; plain avgjg is 3/3 = 1."""
    prefs = _prefs([("u", "s", "A", 1), ("u", "s", "C", 0), ("u", "s", "D", 0), ("u", "s", "E", 0)])
    got = prefs_measures(prefs, {"q": ["A", "C", "D", "E"]})["q"]
    assert got["prefs_avgjg"] == 1.0
    assert got["prefs_avgjg_Rnonrel"] == pytest.approx(0.25, abs=1e-12)
    assert got["prefs_avgjg_Rnonrel_ret"] == pytest.approx(0.25, abs=1e-12)


def test_sub_groups_are_closed_transitively() -> None:
    """Sub-group s1: A=2 > B=1; s2: B=2 > C=1. Closure adds A>C: 3 preferences. Ranking C A (B unretrieved):
    C0 A1, B2. A>B imp fulfilled; B>C imp not; A>C ret not. poss 3, ful 1, ful_ret 0: simp = simp_imp = avgjg =
    avgjg_imp = 1/3, simp_ret = 0/1, avgjg_ret 0. Pairs: {C,A} 0, {A,B} 1, {C,B} 0: pair = pair_imp = 1/3,
    pair_ret 0. Levels (each doc's last sub-group) A2 B2 C1 are all relevant: R 3 >= N 0, padded:
    Rnonrel (1 + 2 retrieved·3)/(3 + 3·3) = 7/12; Rnonrel_ret with R = 2 retrieved: (0 + 2·2)/(1 + 3·2) = 4/7."""
    prefs = _prefs([("u", "s1", "A", 2), ("u", "s1", "B", 1), ("u", "s2", "B", 2), ("u", "s2", "C", 1)])
    got = prefs_measures(prefs, {"q": ["C", "A"]})["q"]
    assert got == pytest.approx(
        {
            "prefs_num_prefs_poss": 3,
            "prefs_num_prefs_ful": 1,
            "prefs_num_prefs_ful_ret": 0,
            "prefs_simp": 1 / 3,
            "prefs_pair": 1 / 3,
            "prefs_avgjg": 1 / 3,
            "prefs_avgjg_Rnonrel": 7 / 12,
            "prefs_simp_ret": 0.0,
            "prefs_pair_ret": 0.0,
            "prefs_avgjg_ret": 0.0,
            "prefs_avgjg_Rnonrel_ret": 4 / 7,
            "prefs_simp_imp": 1 / 3,
            "prefs_pair_imp": 1 / 3,
            "prefs_avgjg_imp": 1 / 3,
        },
        abs=1e-12,
    )


def test_groups_that_disagree() -> None:
    """u1: A>B, u2: B>A, u3: A>C; ranking A B (C unretrieved): A0 B1 C2. u1 ret fulfilled, u2 ret not,
    u3 imp fulfilled: poss 3, ful 2, ful_ret 1; simp 2/3, simp_ret 1/2. Pairs: {A,B} 1 of 2 groups = 1/2,
    {A,C} 1: pair = pair_imp = (1/2 + 1)/2 = 3/4, pair_ret 1/2. avgjg (1 + 0 + 1)/3; avgjg_ret: u3 has no
    retrieved pair, so (1 + 0)/3 = 1/3."""
    prefs = _prefs(
        [
            ("u1", "s", "A", 1),
            ("u1", "s", "B", 0),
            ("u2", "s", "B", 1),
            ("u2", "s", "A", 0),
            ("u3", "s", "A", 1),
            ("u3", "s", "C", 0),
        ]
    )
    got = prefs_measures(prefs, {"q": ["A", "B"]})["q"]
    assert got["prefs_num_prefs_poss"] == 3 and got["prefs_num_prefs_ful"] == 2
    assert got["prefs_num_prefs_ful_ret"] == 1
    assert got["prefs_simp"] == pytest.approx(2 / 3) and got["prefs_simp_ret"] == pytest.approx(0.5)
    assert got["prefs_pair"] == pytest.approx(0.75) and got["prefs_pair_imp"] == pytest.approx(0.75)
    assert got["prefs_pair_ret"] == pytest.approx(0.5)
    assert got["prefs_avgjg"] == pytest.approx(2 / 3) and got["prefs_avgjg_ret"] == pytest.approx(1 / 3)


def test_nothing_retrieved_and_queries_outside_the_run() -> None:
    """A=1 > B=0 with an empty ranking (a query missing from the run, under -c): the one preference is
    notoccur, so poss 1 and every ratio 0 (Rnonrel_ret is 0/0 there, which trec_eval's `sum > 0` turns into 0).
    A query absent from `ranked` is not evaluated."""
    prefs = Prefs(
        {
            "q": (PrefJudgment("u", "s", "A", 1), PrefJudgment("u", "s", "B", 0)),
            "r": (PrefJudgment("u", "s", "A", 1), PrefJudgment("u", "s", "B", 0)),
        }
    )
    got = prefs_measures(prefs, {"q": []})
    assert list(got) == ["q"]
    assert got["q"]["prefs_num_prefs_poss"] == 1
    assert all(got["q"][m] == 0.0 for m in PREFS_MEASURES if m != "prefs_num_prefs_poss")


def test_ranking_breaks_ties_by_docid_ascending() -> None:
    """For preferences trec_eval sorts ties by docid ascending (comp_sim_docno in form_prefs_counts.c):
    scores b 1, a 1, c 2 rank c a b; -M 2 keeps c a."""
    by_query = {"q": (["b", "a", "c"], np.array([1.0, 1.0, 2.0]))}
    assert prefs_ranking(by_query) == {"q": ["c", "a", "b"]}
    assert prefs_ranking(by_query, max_docs=2) == {"q": ["c", "a"]}


def test_read_prefs_skips_comments_and_keeps_hash_inside_a_docid(tmp_path: Path) -> None:
    """`#` at the start of a line is a comment; inside a field it is part of the docid."""
    path = _write(tmp_path, "# header\nq u s A#1 2\n# between\nq u s B 0.5\n")
    assert read_prefs(path).by_query == {"q": (PrefJudgment("u", "s", "A#1", 2.0), PrefJudgment("u", "s", "B", 0.5))}


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("q u s A 1\nq u s B\n", 2, "expected 5 fields"),
        ("q u s A 1\n\nq u s B 0\n", 2, "found 0"),
        ("q u s A high\n", 1, "not a number"),
        ("q u s A 1\nq u s A 0\n", 2, "two rel_levels"),
        ("q u s1 A 1\nq u s1 B 0\nq u s2 B 2\nq u s2 C 1\nq u s2 A 0\n", 5, "rel_level 0"),
        ("q u s1 A 2\nq u s1 B 1\nq u s2 B 2\nq u s2 A 1\n", 1, "prefers"),
    ],
)
def test_read_prefs_refuses_with_path_and_line(tmp_path: Path, text: str, line: int, words: str) -> None:
    """Malformed lines, a doc at two levels in one sub-group, 0 and >0 for one doc in one group, and sub-groups that
    contradict each other (A>B in s1, B>A in s2) are refused at the line that shows it."""
    path = _write(tmp_path, text)
    with pytest.raises(InputError) as err:
        read_prefs(path)
    assert str(err.value).startswith(f"{path}:{line}: ") and words in str(err.value)


def test_qrels_as_prefs_use_the_iter_column_as_judgment_group(tmp_path: Path) -> None:
    """Judge 1: A=1 > B=0, judge 2: B=1 > A=0; ranking A B: one fulfilled, one not: simp 1/2, avgjg (1 + 0)/2.
    Read without the iter column (one group), A=1 > B=0 only: simp 1."""
    path = _write(tmp_path, "q 1 A 1\nq 1 B 0\nq 2 A 0\nq 2 B 1\n", "qrels")
    got = prefs_measures(read_qrels_prefs(path), {"q": ["A", "B"]})["q"]
    assert got["prefs_simp"] == 0.5 and got["prefs_avgjg"] == 0.5
    one = prefs_measures(prefs_from_qrels({"q": {"A": 1, "B": 0}}), {"q": ["A", "B"]})["q"]
    assert one["prefs_simp"] == 1.0 and one["prefs_num_prefs_poss"] == 1


def test_prefs_built_in_python_are_checked_too() -> None:
    """A doc at two levels in one sub-group, or sub-groups whose closure prefers A>B and B>A, cannot be evaluated."""
    twice = _prefs([("u", "s", "A", 1), ("u", "s", "A", 0)])
    cycle = _prefs([("u", "s1", "A", 2), ("u", "s1", "B", 1), ("u", "s2", "B", 2), ("u", "s2", "A", 1)])
    for prefs in (twice, cycle):
        with pytest.raises(ValueError):
            prefs_measures(prefs, {"q": ["A", "B"]})


def test_a_repeated_line_counts_twice_in_a_one_sub_group_group() -> None:
    """trec_eval keeps both copies of `A 1` in the class of level 1 (form_jg_ec): with B=0 that is 2 preferences,
    both fulfilled by ranking A B; in a group of two sub-groups the copy adds nothing (one preference array cell)."""
    once = _prefs([("u", "s", "A", 1), ("u", "s", "A", 1), ("u", "s", "B", 0)])
    assert prefs_measures(once, {"q": ["A", "B"]})["q"]["prefs_num_prefs_poss"] == 2
    array = _prefs([("u", "s", "A", 1), ("u", "s", "A", 1), ("u", "s", "B", 0), ("u", "t", "C", 1)])
    assert prefs_measures(array, {"q": ["A", "B"]})["q"]["prefs_num_prefs_poss"] == 1
