"""Grade labels: every grade of a project's scale has a name, stored in the project, checked, set by leads only."""

from __future__ import annotations

import json
import re

import pytest
import sqlalchemy as sa

from annotator.cli import main
from db.accounts.permissions import OPERATOR
from db.accounts.users import activate, create_user, deactivate
from db.projects import create_project, get_project, list_projects, set_grade_labels
from db.store.engine import get_engine
from db.store.schema import upgrade

# The grade table of guidelines/grading-0-3.md, as a reader of that page sees it.
GUIDELINE_NAMES = {
    0: "Not relevant",
    1: "Related / mentioned in passing",
    2: "Answers partially / essential context",
    3: "Answers fully",
}


def test_defaults_are_the_guideline_names_on_0_3_and_grade_g_elsewhere(engine, project):
    assert project.labels == GUIDELINE_NAMES
    other = create_project(engine, "five", scale=(1, 5), actor=OPERATOR)
    assert other.labels == {1: "Grade 1", 2: "Grade 2", 3: "Grade 3", 4: "Grade 4", 5: "Grade 5"}
    with engine.connect() as conn:  # stored in the projects table, not computed on read
        stored = conn.execute(sa.text("SELECT grade_labels FROM projects WHERE name = 'five'")).scalar_one()
    assert (json.loads(stored) if isinstance(stored, str) else stored)["5"] == "Grade 5"


def test_set_grade_labels_round_trips_and_is_checked(engine, project):
    new = {0: "No", 1: "Partly", 2: "Mostly", 3: "Fully"}
    assert set_grade_labels(engine, "demo", new, actor=OPERATOR).labels == new
    assert get_project(engine, "demo").labels == new
    assert [p.labels for p in list_projects(engine)] == [new]
    bad = [
        ({1: "a", 2: "b", 3: "c"}, "no label for grade(s) 0"),
        ({**new, 4: "Beyond"}, "grade 4 is not on the scale 0-3"),
        ({**new, 2: "   "}, "the label of grade 2 is empty"),
        ({**new, 3: "x" * 61}, "is 61 characters; at most 60"),
    ]
    for labels, message in bad:
        with pytest.raises(ValueError, match=re.escape(message)):
            set_grade_labels(engine, "demo", labels, actor=OPERATOR)
    assert get_project(engine, "demo").labels == new
    assert set_grade_labels(engine, "demo", {**new, 3: "y" * 60}, actor=OPERATOR).labels[3] == "y" * 60


def test_only_active_leads_set_labels(engine, project):
    create_user(engine, "ann", "annotator", actor=OPERATOR)
    create_user(engine, "lea", "lead", actor=OPERATOR)
    new = {0: "No", 1: "Partly", 2: "Mostly", 3: "Fully"}
    with pytest.raises(PermissionError, match="only a lead"):
        set_grade_labels(engine, "demo", new, actor="ann")
    deactivate(engine, "lea", actor=OPERATOR)
    with pytest.raises(PermissionError, match="deactivated"):
        set_grade_labels(engine, "demo", new, actor="lea")
    assert get_project(engine, "demo").labels == GUIDELINE_NAMES
    activate(engine, "lea", actor=OPERATOR)
    assert set_grade_labels(engine, "demo", new, actor="lea").labels == new


def test_cli_project_create_labels(engine, store_url, capsys):
    assert (
        main(["project", "create", "p", "--labels", "1=Partly,2=Mostly,3=Fully", "--db", store_url, "--format", "json"])
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["labels"] == {"0": "Not relevant", "1": "Partly", "2": "Mostly", "3": "Fully"}
    assert get_project(engine, "p").labels == {0: "Not relevant", 1: "Partly", 2: "Mostly", 3: "Fully"}
    for labels, message in (
        ("1=A,1=B", "grade 1 is labelled twice"),
        ("7=Seven", "grade 7 is not on the scale"),
        ("Partly", "is not GRADE=NAME"),
    ):
        assert main(["project", "create", "q", "--labels", labels, "--db", store_url]) == 2
        assert message in capsys.readouterr().err
    assert [p.name for p in list_projects(engine)] == ["p"]


def test_upgrade_gives_existing_projects_the_default_labels(empty_store_url):
    engine = get_engine(empty_store_url)
    assert upgrade(engine, "0003") == "0003"
    with engine.begin() as conn:
        for pid, name, high in ((1, "four", 3), (2, "binary", 1)):
            conn.exec_driver_sql(
                f"INSERT INTO projects (id, name, scale_min, scale_max, overlap, overlap_fraction, "
                f"agreement_threshold, created_at) VALUES ({pid}, '{name}', 0, {high}, 2, 1.0, 0.6, "
                f"'2026-01-02 03:04:05')"
            )
    assert upgrade(engine, "0004") == "0004"
    upgrade(engine)  # the ORM reads the head schema's project columns
    assert get_project(engine, "four").labels == GUIDELINE_NAMES
    assert get_project(engine, "binary").labels == {0: "Grade 0", 1: "Grade 1"}
    engine.dispose()
    get_engine.cache_clear()
