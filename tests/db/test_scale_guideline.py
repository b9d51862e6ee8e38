"""A project on a scale other than 0–3 starts with a guideline generated from its grade names: the bundled
guideline's sections for its grades, the lowest grade said to mean not relevant, names shown literally; the
Guideline page shows it and the release card counts it as the version judgments were made under."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import pytest
import sqlalchemy as sa

from annotator.cli import main
from db.accounts.permissions import OPERATOR
from db.accounts.users import create_user
from db.assignment import assign
from db.grading import record_judgment
from db.imports import import_fragments, import_queries
from db.projects import BUNDLED_GUIDELINE, current_guideline, list_guidelines
from db.releases import create_release
from db.store.models import Fragment, Pair, Query
from guidelines.scale import literal, scale_guideline
from tests.helpers import write_jsonl

FIVE = {1: "Irrelevant", 2: "Related", 3: "Partly", 4: "Mostly", 5: "Perfect"}
FIVE_OPTION = ",".join(f"{g}={n}" for g, n in FIVE.items())


def _rows(text: str) -> dict[int, str]:
    """Grade → name from the guideline's grade table (`| **g** | name | … |`)."""
    return {int(g): name for g, name in re.findall(r"^\| \*\*(\d+)\*\* \| (.+?) \| …", text, re.MULTILINE)}


def test_a_five_grade_guideline_names_every_grade_and_its_lowest():
    text = scale_guideline(FIVE)
    assert text.startswith("# Relevance grading guideline (1–5)\n")
    assert "## The five grades" in text
    assert _rows(text) == FIVE and list(_rows(text)) == [5, 4, 3, 2, 1]  # highest first, as the bundled table
    assert "**1** (Irrelevant) is the lowest grade: it means **not relevant**." in text
    assert "write grade − 1 as the gain, so 1 becomes 0 there" in text
    assert "press **1**, **2**, **3**, **4** or **5** to grade" in text
    # the hard boundaries of the bundled guideline, on this scale: 2|3 is "mentions" vs "helps", 4|5 "part" vs "all"
    assert '### 2 vs 3 — "mentions" vs "helps answer"' in text and '### 4 vs 5 — "part" vs "all"' in text
    # the invented illustration, its grades mapped to this scale: full answer 5, context 3, in passing 2, none 1
    assert "open on Sundays from 10:00 to 18:00 is a **5**;" in text and "without the times, is a **3**" in text
    assert "help topics is a **2**;" in text and "coin collection is a **1**." in text
    # the scale-free sections come from the bundled text, and nothing is left written for 0–3
    bundled = BUNDLED_GUIDELINE.read_text(encoding="utf-8")
    assert "### General tie-breaking" in text and '## When to use "can\'t judge"' in text
    assert "- it is in a language you cannot read;" in bundled and "- it is in a language you cannot read;" in text
    assert "0–3" not in text and "2-vs-3" not in text and "**0**" not in text


def test_short_and_long_scales():
    binary = scale_guideline({0: "No", 1: "Yes"})
    assert _rows(binary) == {1: "Yes", 0: "No"}
    assert (
        "**0** (No) is the lowest grade: it means **not relevant**" in binary
        and "**1** (Yes) means **relevant**" in binary
    )
    assert "as the gain" not in binary  # 0 is already a gain of 0: nothing to say
    three = scale_guideline({1: "Bad", 2: "Some", 3: "Good"})
    assert '### 1 vs 2 — "mentions" vs "helps answer"' in three and '### 2 vs 3 — "part" vs "all"' in three
    eleven = scale_guideline({g: f"G{g}" for g in range(0, 11)})
    assert "## The 11 grades" in eleven and "press" not in eleven  # no single key for grade 10
    assert (
        "| **5** | G5 | …contains part of the answer: more of it than grade 4 (G4), less than grade 6 (G6). |" in eleven
    )
    with pytest.raises(ValueError, match="every grade"):
        scale_guideline({1: "a", 3: "c"})


def test_grade_names_render_literally():
    hostile = "**Top** | [x](http://e) $1$ <b>"
    assert literal(hostile) == r"\*\*Top\*\* \| \[x\]\(http\:\/\/e\) \$1\$ \<b\>"
    text = scale_guideline({**FIVE, 5: hostile})
    assert f"| **5** | {literal(hostile)} |" in text and hostile not in text


def _cli(url: str, *args: str) -> int:
    return main([*args, "--db", url, "--format", "json"])


def test_project_create_on_1_to_5_starts_with_the_generated_guideline(engine, store_url, capsys):
    assert _cli(store_url, "project", "create", "five", "--scale", "1-5", "--labels", FIVE_OPTION) == 0
    assert json.loads(capsys.readouterr().out)["guideline"] == 1
    [v1] = list_guidelines(engine, "five")
    assert (v1.version, v1.note) == (1, "generated for the 1-5 scale from its grade names")
    assert v1.text == scale_guideline(FIVE)
    assert _cli(store_url, "init", "--project", "grades", "--scale", "1-4") == 0  # unnamed: "Grade g"
    assert _rows(current_guideline(engine, "grades").text) == {g: f"Grade {g}" for g in (4, 3, 2, 1)}
    assert _cli(store_url, "project", "create", "bare", "--scale", "1-5", "--no-guideline") == 0
    assert current_guideline(engine, "bare") is None
    assert _cli(store_url, "project", "create", "std") == 0  # 0-3 keeps the bundled guideline
    assert current_guideline(engine, "std").text == BUNDLED_GUIDELINE.read_text(encoding="utf-8")


def _demo_strings() -> set[str]:
    """Every query text, fragment text and title, category and id the demo imports (its worked examples and its
    generated data), and the seed examples' query ids and fragment ids the demo's own guideline cites."""
    from annotator.demo import MARKUP_QUERY_TEXT, PRODUCTS, demo_files

    strings: set[str] = {MARKUP_QUERY_TEXT, *PRODUCTS}
    with tempfile.TemporaryDirectory() as tmp:
        for kind, path in demo_files(Path(tmp)):
            if kind in ("queries", "fragments"):
                for line in path.read_text(encoding="utf-8").splitlines():
                    record = json.loads(line)
                    strings |= {str(record[k]) for k in ("id", "text", "title", "category") if record.get(k)}
    return strings


def _cites(text: str, strings: set[str]) -> list[str]:
    """The demo strings found in `text`: whole words for ids (`d3`, `q1`), anywhere for longer texts."""
    return sorted(s for s in strings if re.search(rf"(?<!\w){re.escape(s)}(?!\w)", text))


def test_a_new_project_starts_from_a_neutral_template_and_the_demo_keeps_its_own(engine, store_url, capsys):
    """`project create` on 0-3 writes the neutral template as version 1: the grade table and the can't-judge
    rules, but not one query, fragment, title, category or id of the demo's data (nor the seeds' `d023`,
    `doc_015`). Generated guidelines on other scales are neutral too. The demo's current version is its own file,
    which does cite them (the check finds what it looks for)."""
    from guidelines import DEMO_GRADING

    strings = _demo_strings()
    assert {"d3", "q000", "doc_015", "¿cuál es el plazo de devolución para pedidos internacionales?"} <= strings
    assert _cli(store_url, "project", "create", "fresh") == 0
    capsys.readouterr()
    [v1] = list_guidelines(engine, "fresh")
    assert (v1.version, v1.note) == (1, "bundled guideline grading-0-3.md")
    assert _cites(v1.text, strings) == []
    assert _cites(v1.text, {"d023", "d028", "doc_015", "doc_022", "Redis", "A1"}) == []
    assert "| **3** | Answers fully |" in v1.text and '## When to use "can\'t judge"' in v1.text
    assert _cites(scale_guideline(FIVE), strings) == []
    demo = DEMO_GRADING.read_text(encoding="utf-8")
    assert {"d3", "q2", "d023", "doc_015"} <= set(_cites(demo, strings | {"d023", "doc_015"}))


def test_the_guideline_page_shows_it_and_the_release_card_counts_it(tmp_path, monkeypatch, capsys):
    from tests.helpers import app_as, password

    url = f"sqlite:///{tmp_path / 'five.db'}"
    assert main(["init", "--db", url, "--project", "five", "--scale", "1-5", "--labels", FIVE_OPTION]) == 0
    from db.store.engine import get_engine

    engine = get_engine(url)
    for name in ("ana", "ben"):
        create_user(engine, name, "annotator", password(name), actor=OPERATOR)
    import_queries(engine, "five", write_jsonl(tmp_path / "q.jsonl", [{"id": "q1", "text": "plazo"}]), actor=OPERATOR)
    import_fragments(
        engine, "five", write_jsonl(tmp_path / "f.jsonl", [{"id": "f1", "text": "30 días"}]), actor=OPERATOR
    )
    with engine.begin() as conn:
        qid = conn.execute(sa.select(Query.id)).scalar_one()
        fid = conn.execute(sa.select(Fragment.id)).scalar_one()
        project_id = conn.execute(sa.select(Query.project_id)).scalar_one()
        pair = conn.execute(
            sa.insert(Pair).values(project_id=project_id, query_id=qid, fragment_id=fid).returning(Pair.id)
        ).scalar_one()
    assign(engine, "five", overlap=2, annotators=["ana", "ben"], actor=OPERATOR)
    for name, grade in (("ana", 5), ("ben", 4)):
        record_judgment(engine, pair, name, grade)

    monkeypatch.setenv("QRELKIT_DB_URL", url)
    monkeypatch.setenv("QRELKIT_PROJECT", "five")
    at = app_as("ana", url)
    at.switch_page("screens/guideline.py").run()
    assert not at.exception
    assert scale_guideline(FIVE).strip() in [m.value.strip() for m in at.markdown]
    assert any("guideline version 1" in c.value for c in at.caption)

    card = create_release(engine, "five", actor=OPERATOR).card
    assert card["guideline_versions"] == [1] and card["scale"] == [1, 5]
    assert card["qrels_grades"]["gains"]["1"] == 0  # the card's "1 is not relevant" agrees with the guideline
    engine.dispose()
