"""Rules where the data lives: every store operation that changes a project checks its actor itself.

An annotator, a deactivated lead and an unknown name each get Refused (a PermissionError) from every operation,
and the database is byte-for-byte what it was; the CLI operator and an active lead may. A missing name is
NotFound and a taken one Conflict, each still the built-in an older `except` names."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from sqlmodel import SQLModel

from db.accounts.permissions import OPERATOR
from db.accounts.users import create_user, deactivate
from db.adjudication import adjudicate
from db.assignment import assign
from db.evaluations import judge_holes
from db.grading import record_judgment
from db.imports import import_fragments, import_judgments, import_queries, import_run
from db.pooling import pool
from db.projects import add_guideline, create_project, set_grade_labels, update_policy
from db.releases import create_release
from eval_core.errors import USER_ERRORS, Conflict, NotFound, Refused


def _snapshot(engine) -> dict[str, list]:
    """Every row of every table, so 'nothing was written' is checked exactly."""
    with engine.connect() as conn:
        return {t.name: sorted(map(repr, conn.execute(sa.select(t)).all())) for t in SQLModel.metadata.sorted_tables}


@pytest.fixture
def setup(engine, queue, tmp_path):
    """The queue project with one judged pair, a stored run ranking an unpooled fragment, files for every
    import kind, a third annotator, a deactivated lead and an active lead."""
    record_judgment(engine, queue[("q1", "f1")], "ann1", 2)
    files = {
        "queries": tmp_path / "q.jsonl",
        "fragments": tmp_path / "f.jsonl",
        "run": tmp_path / "r.trec",
        "judgments": tmp_path / "j.jsonl",
    }
    files["queries"].write_text('{"id": "q9", "text": "new query"}\n')
    files["fragments"].write_text('{"id": "f9", "text": "new fragment"}\n')
    files["run"].write_text("q1 Q0 f2 1 2.0 r\nq1 Q0 f9 2 1.0 r\n")
    files["judgments"].write_text('{"query_id": "q2", "fragment_id": "f2", "annotator": "ann2", "grade": 1}\n')
    files["fragments"].with_name("extra.jsonl").write_text('{"id": "f8", "text": "fragment eight"}\n')
    import_fragments(engine, "demo", files["fragments"].with_name("extra.jsonl"), actor=OPERATOR)
    files["run"].with_name("stored.trec").write_text("q1 Q0 f8 1 2.0 r\n")
    import_run(engine, "demo", files["run"].with_name("stored.trec"), actor=OPERATOR)
    create_user(engine, "ann3", "annotator", actor=OPERATOR)
    create_user(engine, "gone", "lead", actor=OPERATOR)
    deactivate(engine, "gone", actor=OPERATOR)
    create_user(engine, "lea", "lead", actor=OPERATOR)
    return queue, files


OPERATIONS = {
    "create_project": lambda e, q, f, a: create_project(e, "other", actor=a),
    "update_policy": lambda e, q, f, a: update_policy(e, "demo", overlap=1, actor=a),
    "add_guideline": lambda e, q, f, a: add_guideline(e, "demo", "grade what is there", actor=a),
    "set_grade_labels": lambda e, q, f, a: set_grade_labels(e, "demo", {0: "a", 1: "b", 2: "c", 3: "d"}, actor=a),
    "import_queries": lambda e, q, f, a: import_queries(e, "demo", f["queries"], actor=a),
    "import_fragments": lambda e, q, f, a: import_fragments(e, "demo", f["fragments"], actor=a),
    "import_run": lambda e, q, f, a: import_run(e, "demo", f["run"], name="new", actor=a),
    "import_judgments": lambda e, q, f, a: import_judgments(e, "demo", f["judgments"], actor=a),
    "pool": lambda e, q, f, a: pool(e, "demo", 5, actor=a),
    "assign": lambda e, q, f, a: assign(e, "demo", overlap=3, annotators=["ann1", "ann2", "ann3"], actor=a),
    "adjudicate": lambda e, q, f, a: adjudicate(e, q[("q1", "f1")], 3, "clear answer", actor=a),
    "create_release": lambda e, q, f, a: create_release(e, "demo", actor=a),
    "judge_holes": lambda e, q, f, a: judge_holes(e, "demo", "stored", k=5, actor=a),
}


@pytest.mark.parametrize("name", list(OPERATIONS))
def test_annotators_deactivated_leads_and_strangers_change_nothing(engine, setup, name):
    queue, files = setup
    before = _snapshot(engine)
    for actor, why in (
        ("ann1", "only a lead may do this; 'ann1' is annotator"),
        ("gone", "'gone' is deactivated"),
        ("nobody", "no user named 'nobody'"),
    ):
        with pytest.raises(Refused, match=why):
            OPERATIONS[name](engine, queue, files, actor)
        assert _snapshot(engine) == before, f"{name} by {actor} wrote something"
    OPERATIONS[name](engine, queue, files, "lea")  # an active lead may, and writes what the operator would
    assert _changes(before, _snapshot(engine)) == {**OPERATOR_CHANGES, "adjudicate": {"adjudications": (1, 0)}}[name]


@pytest.mark.parametrize("name", [n for n in OPERATIONS if n != "adjudicate"])
def test_the_cli_operator_may(engine, setup, name):
    queue, files = setup
    before = _snapshot(engine)
    OPERATIONS[name](engine, queue, files, OPERATOR)
    assert _changes(before, _snapshot(engine)) == OPERATOR_CHANGES[name]


def _changes(before: dict[str, list], after: dict[str, list]) -> dict[str, tuple[int, int]]:
    """Per table that changed: (rows now there that were not, rows there before that are gone); an updated row
    counts once in each."""
    return {
        table: (len(set(rows) - set(before[table])), len(set(before[table]) - set(rows)))
        for table, rows in after.items()
        if rows != before[table]
    }


# What each operation writes, derived from the setup (12 pairs q1-q3 × f1-f4, each assigned to ann1 and ann2;
# fragment f8 and the run "stored" ranking q1 f8 imported; ann2 has not graded q2 f2).
OPERATOR_CHANGES = {
    "create_project": {"projects": (1, 0)},  # the project "other"
    "update_policy": {"projects": (1, 1)},  # demo's row, overlap now 1
    "add_guideline": {"guidelines": (1, 0)},  # a new version
    "set_grade_labels": {"projects": (1, 1)},  # demo's row, labels renamed
    "import_queries": {"queries": (1, 0)},  # q9
    "import_fragments": {"fragments": (1, 0)},  # f9
    # "new", two ranked lines; f9 is not in the corpus: a fragment waiting for its text
    "import_run": {"runs": (1, 0), "run_entries": (2, 0), "fragments": (1, 0)},
    # ann2's grade of q2 f2: the judgment, its history line, and ann2's assignment of the pair closed
    "import_judgments": {"judgments": (1, 0), "judgment_history": (1, 0), "assignments": (1, 1)},
    # "stored" ranks q1 f8: a new pair; BM25 for the queries no run covers finds "2" in f2 for q2 and "3" in f3
    # for q3: those two pairs gain the bm25 source
    "pool": {"pairs": (3, 2)},
    "assign": {"assignments": (12, 0)},  # overlap 3: ann3 joins ann1 and ann2 on each of the 12 pairs
    "create_release": {"releases": (1, 0), "evaluations": (1, 0)},  # version 1, and "stored" scored on it
    "judge_holes": {"pairs": (1, 0)},  # "stored"'s unjudged top-5 fragment: q1 f8 becomes a pair
}


def test_an_adjudication_names_its_lead(engine, setup):
    queue, files = setup
    with pytest.raises(PermissionError, match="name an active lead"):
        OPERATIONS["adjudicate"](engine, queue, files, OPERATOR)


def test_missing_and_taken_names_are_domain_errors_the_old_excepts_still_catch(engine, setup):
    with pytest.raises(NotFound, match="no project named 'absent'") as missing:
        pool(engine, "absent", 5, actor=OPERATOR)
    with pytest.raises(Conflict, match="project 'demo' already exists") as taken:
        create_project(engine, "demo", actor=OPERATOR)
    with pytest.raises(NotFound, match="no user named 'nobody'"):
        assign(engine, "demo", overlap=1, annotators=["nobody"], actor=OPERATOR)
    assert isinstance(missing.value, LookupError) and isinstance(taken.value, ValueError)
    assert issubclass(Refused, PermissionError) and all(
        issubclass(e, USER_ERRORS) for e in (Refused, NotFound, Conflict)
    )
