"""Reference annotators (an imported qrels, e.g. NIST's): never an overlap slot or a queue, never re-judged, the
base of a release with people's grades on top; `assign` takes the pooled pairs or a --pairs file."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from db.accounts.permissions import OPERATOR
from db.accounts.users import create_user
from db.adjudication import rejudge_queue
from db.assignment import assign, pairs_from_file
from db.imports import Judges, JudgmentsSource, import_judgments
from db.pooling import pool
from db.projects import add_guideline
from db.releases import create_release
from db.store.engine import session_scope
from db.store.models import Assignment, Pair, Query, User
from eval_core.errors import InputError
from tests.helpers import seed

PASSWORD = "a long password 1"
NIST = "q1 0 f1 2\nq1 0 f3 1\nq2 0 f4 0\nq2 0 f6 3\n"


def setup(engine, project, tmp_path):
    """q1, q2 × f1-f6; run R pooled at depth 2 (q1: f1 f2, q2: f4 f5); NIST's qrels imported as a reference
    (f1 and f4 pooled, f3 and f6 only named by the qrels); people ann1, ann2 who can log in."""
    texts = {f"f{i}": f"text {i}" for i in range(1, 7)}
    seed(
        engine,
        project.id,
        {"q1": "query 1", "q2": "query 2"},
        texts,
        {"R": {"q1": ["f1", "f2", "f3"], "q2": ["f4", "f5", "f6"]}},
    )
    pool(engine, "demo", depth=2, bm25=0, actor=OPERATOR)
    qrels = tmp_path / "nist.qrels"
    qrels.write_text(NIST)
    import_judgments(engine, "demo", qrels, actor=OPERATOR, judges=Judges("reference"), source=JudgmentsSource("nist"))
    for name in ("ann1", "ann2"):
        create_user(engine, name, "annotator", password=PASSWORD, actor=OPERATOR)


def held(engine) -> dict[str, set[tuple[str, str]]]:
    with session_scope(engine) as s:
        rows = s.execute(
            select(User.username, Query.external_id, Pair.fragment_id)
            .join(Assignment, Assignment.user_id == User.id)
            .join(Pair, Pair.id == Assignment.pair_id)
            .join(Query, Query.id == Pair.query_id)
        ).all()
    out: dict[str, set] = {}
    for user, q, f in rows:
        out.setdefault(user, set()).add((q, f))
    return out


def test_a_reference_fills_no_overlap_slot_and_only_pooled_pairs_are_assigned(engine, project, tmp_path):
    setup(engine, project, tmp_path)
    with session_scope(engine) as s:
        assert s.execute(select(User.kind, User.password_hash).where(User.username == "nist")).one() == (
            "reference",
            None,
        )
    report = assign(engine, "demo", overlap=2, annotators=["ann1", "ann2"], actor=OPERATOR)
    # 4 pooled pairs, each to both people: nist's grades on q1/f1 and q2/f4 take no slot; the two pairs only
    # the qrels named (q1/f3, q2/f6) are not pooled, so not assigned
    assert (report.created, report.pairs_total, report.pairs_with_overlap, report.imported_only) == (8, 4, 4, 2)
    assert report.per_annotator == {"ann1": 4, "ann2": 4}
    mine = held(engine)
    assert mine["ann1"] == mine["ann2"] and len(mine["ann1"]) == 4 and "nist" not in mine
    with pytest.raises(ValueError, match=r"reference annotator\(s\) get no queue: nist"):
        assign(engine, "demo", overlap=2, annotators=["ann1", "nist"], actor=OPERATOR)
    again = assign(engine, "demo", overlap=2, actor=OPERATOR)  # every person who can log in: nist is not one
    assert again.created == 0


def test_assign_pairs_file_names_imported_pairs_and_refuses_unknown_ones(engine, project, tmp_path):
    setup(engine, project, tmp_path)
    listed = tmp_path / "todo.txt"
    listed.write_text("q1 f3\n# a comment\nq2 0 f6 3\n")
    ids = pairs_from_file(engine, "demo", listed)
    report = assign(engine, "demo", overlap=2, annotators=["ann1", "ann2"], actor=OPERATOR, pair_ids=ids)
    assert (report.created, report.pairs_total) == (4, 2)
    assert held(engine)["ann1"] == held(engine)["ann2"]
    bad = tmp_path / "bad.txt"
    bad.write_text("q1 f3\nq1 f9\nq3 f1\n")
    with pytest.raises(InputError, match=rf"{bad}:2: no pair \('q1', 'f9'\) in project 'demo'") as err:
        pairs_from_file(engine, "demo", bad)
    assert "and 1 more problem" in str(err.value)
    jsonl = tmp_path / "todo.jsonl"
    jsonl.write_text('{"query_id": "q2", "fragment_id": "f6"}\n')
    assert pairs_from_file(engine, "demo", jsonl) == ids[1:]


def _people(engine, tmp_path, rows: str) -> None:
    path = tmp_path / "people.csv"
    path.write_text("query_id,fragment_id,annotator,grade\n" + rows)
    import_judgments(engine, "demo", path, actor=OPERATOR)


def test_a_reference_is_never_listed_for_rejudging(engine, project, tmp_path):
    add_guideline(engine, "demo", "the first guideline", actor=OPERATOR)
    setup(engine, project, tmp_path)
    _people(engine, tmp_path, "q1,f1,ann1,3\nq1,f1,ann2,2\n")
    add_guideline(engine, "demo", "a stricter guideline", actor=OPERATOR)
    queue = rejudge_queue(engine, "demo")
    # nist's 4 grades were stamped with version 1 as well; only the people's are due
    assert sorted(queue["annotator"]) == ["ann1", "ann2"]


def test_a_release_takes_the_reference_where_no_person_graded_and_says_so(engine, project, tmp_path):
    setup(engine, project, tmp_path)
    _people(engine, tmp_path, "q1,f1,ann1,3\nq1,f1,ann2,2\nq1,f2,ann1,1\nq1,f2,ann2,1\n")
    info = create_release(engine, "demo", actor=OPERATOR)
    # by hand: q1/f1 people 3, 2 → lower median 2 (nist's 2 is not counted); q1/f2 people 1, 1 → 1;
    # q1/f3 1, q2/f4 0, q2/f6 3 from nist alone
    assert info.card["provenance"]["human consensus"]["pairs"] == 2
    assert info.card["provenance"]["reference"]["pairs"] == 3
    assert info.card["reference"]["annotators"] == ["nist"]
    assert "people's grades (and adjudications) are on top" in info.card["reference"]["note"]
    assert info.card["counts"]["annotators"] == 2  # nist is no person of the agreement
    with session_scope(engine) as s:
        from db.store.models import Release

        qrels = s.execute(select(Release.qrels_trec)).scalar_one()
    assert sorted(qrels.splitlines()) == ["q1 0 f1 2", "q1 0 f2 1", "q1 0 f3 1", "q2 0 f4 0", "q2 0 f6 3"]
