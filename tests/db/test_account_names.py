"""Account names that could pass for others are refused on every path that creates or names an account: `user
add` (db.accounts.users.create_user), a judgments import's annotator names, `--qrels-format jg` judge names, and
`prejudge --annotator` (db.model_judges.model_annotator). Look-alikes by Unicode's confusables (UTS #39
skeleton), default-ignorable, blank and unattached combining characters, scripts mixed, and names a spreadsheet
would run as a formula."""

from __future__ import annotations

import json
import unicodedata

import pytest
import sqlalchemy as sa

from db.accounts.lookalikes import name_key, skeleton
from db.accounts.permissions import OPERATOR
from db.accounts.users import check_username, create_user
from db.imports import ImportRejected, JudgmentsSource, import_fragments, import_judgments, import_queries
from db.model_judges import model_annotator
from db.store.models import Judgment, User

# Each passed every check before this change (issue 29): invisible after "lea", or drawn like "ana".
INVISIBLE = ["lea\u034f", "lea\ufe00", "lea\u180b", "lea\u3164", "lea\u2800"]
LOOK_ALIKES = ["\u0251na", "a\u0578a", "\u13aana", "\ua4eena"]  # ɑna (Latin alpha), aոa, Ꭺna, ꓮna
BAD = INVISIBLE + LOOK_ALIKES
FORMULAS = ["=HYPERLINK(1)", "+1", "-cmd", "@SUM(A1)"]


def test_the_unicode_data_behind_the_names():
    """By the Unicode character database (hand-checked): the invisibles are what their names say."""
    assert unicodedata.name("\u034f") == "COMBINING GRAPHEME JOINER"
    assert unicodedata.name("\u3164") == "HANGUL FILLER"
    assert unicodedata.name("\u2800") == "BRAILLE PATTERN BLANK"
    # confusables.txt: 0251 → 0061, 13AA → 0041, A4EE → 0041, 0578 → 006E (Armenian vo looks like n)
    assert skeleton("\u0251") == skeleton("a") and skeleton("\u13aa") == skeleton("A") == skeleton("\ua4ee")
    assert skeleton("\u0578") == skeleton("n")
    assert name_key("\u0251na") == name_key("ana") == name_key("ANA") == name_key("\uff41\uff4e\uff41")
    assert name_key("lea") != name_key("leah")


@pytest.mark.parametrize("name", BAD + FORMULAS)
def test_user_add_refuses_the_name(engine, name):
    create_user(engine, "lea", "annotator", actor=OPERATOR)
    create_user(engine, "ana", "annotator", actor=OPERATOR)
    with pytest.raises(ValueError):
        create_user(engine, name, "annotator", "a-long-password", actor=OPERATOR)
    with engine.connect() as conn:
        assert sorted(conn.execute(sa.select(User.username)).scalars()) == ["ana", "lea"]


@pytest.mark.parametrize("name", [*INVISIBLE, "a\u0578a", "\u13aana", "\ua4eena", *FORMULAS])
def test_refused_even_with_no_account_to_pass_for(name):
    with pytest.raises(ValueError):
        check_username(name)


@pytest.mark.parametrize("name", ["Ana María", "Алексей", "田中さん", "김민준", "Nguyễn Văn An", "lea2", "o'brien"])
def test_real_names_in_one_script_pass(name):
    assert check_username(name) == name


@pytest.fixture
def corpus(engine, project, tmp_path):
    """q1 and d1-d3 in project demo, and the accounts lea, ana, lea-jg1 and ana-jg1."""
    (tmp_path / "q.jsonl").write_text(json.dumps({"id": "q1", "text": "return window"}) + "\n", encoding="utf-8")
    (tmp_path / "f.jsonl").write_text(
        "".join(json.dumps({"id": f"d{i}", "text": f"text {i}"}) + "\n" for i in range(1, 4)), encoding="utf-8"
    )
    import_queries(engine, "demo", tmp_path / "q.jsonl", actor=OPERATOR)
    import_fragments(engine, "demo", tmp_path / "f.jsonl", actor=OPERATOR)
    for name in ("lea", "ana", "lea-jg1", "ana-jg1"):
        create_user(engine, name, "annotator", actor=OPERATOR)
    return tmp_path


def _state(engine) -> tuple[list[str], int]:
    with engine.connect() as conn:
        return (
            sorted(conn.execute(sa.select(User.username)).scalars()),
            conn.execute(sa.select(sa.func.count()).select_from(Judgment)).scalar_one(),
        )


@pytest.mark.parametrize("name", BAD + FORMULAS)
def test_a_judgments_import_refuses_the_annotator_name(engine, corpus, name):
    path = corpus / "j.csv"
    cell = '"' + name.replace('"', '""') + '"'
    path.write_text(f"query_id,fragment_id,annotator,grade\nq1,d1,lea,2\nq1,d2,{cell},1\n", encoding="utf-8")
    before = _state(engine)
    with pytest.raises(ImportRejected) as err:
        import_judgments(engine, "demo", path, actor=OPERATOR)
    assert str(err.value).startswith(f"{path}:3: ")
    assert _state(engine) == before


@pytest.mark.parametrize("name", BAD + FORMULAS)
def test_a_jg_import_refuses_the_judge_names(engine, corpus, name):
    path = corpus / "qrels.jg"
    path.write_text("q1 1 d1 2\nq1 2 d1 1\n", encoding="utf-8")
    before = _state(engine)
    with pytest.raises((ImportRejected, ValueError)):
        import_judgments(engine, "demo", path, actor=OPERATOR, source=JudgmentsSource(name, "jg"))
    assert _state(engine) == before


@pytest.mark.parametrize("name", BAD + FORMULAS)
def test_prejudge_annotator_refuses_the_name(engine, corpus, name):
    before = _state(engine)
    with pytest.raises(ValueError):
        model_annotator(engine, name, "gpt-test", actor=OPERATOR)
    assert _state(engine) == before
