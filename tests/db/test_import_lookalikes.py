"""A judgments import creates accounts for annotators it does not know: those names are held to the rules of any
new account (db.accounts.users) — no look-alike of an existing account or of another new annotator of the file,
no invisible characters, no mixed scripts — with one sentence naming the file, the line and the problem, and
nothing written."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa

from annotator.cli import main
from db.accounts.permissions import OPERATOR
from db.accounts.users import create_user
from db.imports import ImportRejected, import_fragments, import_judgments, import_queries
from db.store.models import Judgment, User

HEADER = "query_id,fragment_id,annotator,grade\n"
LOOKS_LIKE = "same letters once case, width and look-alike characters are set aside"


@pytest.fixture
def corpus(engine, project, tmp_path):
    """q1 and d1-d3 in project demo, and the account lea."""
    (tmp_path / "q.jsonl").write_text(json.dumps({"id": "q1", "text": "return window"}) + "\n", encoding="utf-8")
    (tmp_path / "f.jsonl").write_text(
        "".join(json.dumps({"id": f"d{i}", "text": f"text {i}"}) + "\n" for i in range(1, 4)), encoding="utf-8"
    )
    import_queries(engine, "demo", tmp_path / "q.jsonl", actor=OPERATOR)
    import_fragments(engine, "demo", tmp_path / "f.jsonl", actor=OPERATOR)
    create_user(engine, "lea", "annotator", actor=OPERATOR)
    return tmp_path


def _accounts_and_judgments(engine) -> tuple[list[str], int]:
    with engine.connect() as conn:
        return (
            sorted(conn.execute(sa.select(User.username)).scalars()),
            conn.execute(sa.select(sa.func.count()).select_from(Judgment)).scalar_one(),
        )


@pytest.mark.parametrize(
    "name, problem",
    [
        (
            "\u04cf\u0435\u0430",
            f"annotator '\u04cf\u0435\u0430' looks like the existing account 'lea' ({LOOKS_LIKE}); "
            "write that account's exact name, or a distinct one",
        ),  # all Cyrillic: ӏ е а
        (
            "l\u0435a",
            "annotator 'l\u0435a' cannot become an account: username 'l\u0435a' mixes letters of the CYRILLIC "
            "and LATIN scripts; such a name can pass for another one",
        ),  # one Cyrillic е
        (
            "LEA",
            f"annotator 'LEA' looks like the existing account 'lea' ({LOOKS_LIKE}); write that account's exact "
            "name, or a distinct one",
        ),
        (
            "\uff4c\uff45\uff41",
            f"annotator '\uff4c\uff45\uff41' looks like the existing account 'lea' ({LOOKS_LIKE}); "
            "write that account's exact name, or a distinct one",
        ),  # fullwidth
        # the judgments reader refuses an invisible character before the account rules are asked
        (
            "bo\u200bb",
            "annotator 'bo\\u200bb' holds the invisible, control or whitespace character U+200B ZERO WIDTH "
            "SPACE; a name must be visible text (plain spaces are fine)",
        ),
    ],
)
def test_a_new_annotator_that_passes_for_another_is_refused(engine, corpus, name, problem):
    path = corpus / "j.csv"
    path.write_text(f"{HEADER}q1,d1,lea,2\nq1,d2,{name},1\n", encoding="utf-8")
    before = _accounts_and_judgments(engine)
    with pytest.raises(ImportRejected) as err:
        import_judgments(engine, "demo", path, actor=OPERATOR)
    assert str(err.value) == f"{path}:3: {problem}"
    assert _accounts_and_judgments(engine) == before == (["lea"], 0)


def test_two_new_annotators_alike_are_refused_at_the_second(engine, corpus, tmp_path, capsys, store_url):
    path = corpus / "j.csv"
    path.write_text(f"{HEADER}q1,d1,nist,2\nq1,d2,nist,1\nq1,d3,NIST,0\n", encoding="utf-8")
    assert main(["import", "judgments", str(path), "--project", "demo", "--db", store_url]) == 2
    assert (
        f"qrelkit: error: {path}:4: annotator 'NIST' looks like annotator 'nist' of line 2 ({LOOKS_LIKE}); "
        f"two accounts would pass for each other: write one name\n"
    ) == capsys.readouterr().err.split("\r")[-1]
    assert _accounts_and_judgments(engine) == (["lea"], 0)


def test_existing_accounts_and_distinct_new_names_import(engine, corpus):
    path = corpus / "j.csv"
    path.write_text(f"{HEADER}q1,d1,lea,2\nq1,d2,leah,1\nq1,d3,Ana María,0\n", encoding="utf-8")
    assert import_judgments(engine, "demo", path, actor=OPERATOR).created == 3
    assert _accounts_and_judgments(engine) == (["Ana María", "lea", "leah"], 3)
