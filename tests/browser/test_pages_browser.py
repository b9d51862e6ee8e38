"""The pages in a real browser on projects built with the CLI: grading a 1–3 and a 1–5 project with their own
keys, the fragment box, planted Markdown/HTML shown literally with no request leaving for a planted address,
and the Adjudicate page's counters after saving."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from annotator.app.main import LEAD_PAGES
from tests.browser.conftest import (
    CHROMIUM,
    ROOT,
    Server,
    login,
    screenshot,
    until,
    wait_idle,
)
from tests.browser.pages import (
    FRAGMENT_BOX,
    MARKUP_TAGS,
    PLANT,
    accounts,
    main_text,
    open_page,
    press,
    press_grade,
    qrelkit,
    serve,
    settled,
    show_tab,
    wait_for_texts,
)
from tests.conftest import require
from tests.helpers import write_jsonl

pytestmark = pytest.mark.browser

# Every piece of planted markup wraps text starting "zz", so an element made from data is easy to spot.
PROJECT = "**zzproj** <b>zzp</b>"
QUERY_ID = "**zzq1**<b>zzx</b>"
QUERY_TEXT = f'plazo de devolución **zzurgente** <img src="{PLANT}/query.png"> [zzx]({PLANT}/qlink)'
FRAGMENT = {
    "id": f"![zzf]({PLANT}/fid.png)",
    "doc_id": "<i>zzmanual</i>",
    "title": f"Devoluciones <b>zzya</b> ![zzt]({PLANT}/t.png)",
    "text": f"El plazo de devolución es de 30 días. <script>alert(1)</script> **zzno** ![zzi]({PLANT}/i.png)",
}
OTHERS = [
    {"id": "f2", "title": "Envíos", "text": "Envíos en 24 horas; el plazo no cambia."},
    {"id": "f3", "title": "Pagos", "text": "Pago con tarjeta o transferencia."},
]
RUN = "**zzrun**<b>zzr</b>"
ANNOTATOR = f"![zza]({PLANT}/annotator.png) <b>zzmal</b>"
NOTE = f'**zznota** <img src="{PLANT}/note.png">'
REASON = f"[zzrazón]({PLANT}/reason) <b>zzr</b>"
LABELS = {1: "Partly", 2: "Mostly", 3: "Fully"}
MADE_FROM_DATA = """els => els.filter(e => e.tagName === 'IMG'
    || (e.tagName === 'SCRIPT' && e.textContent.includes('alert('))
    || (e.getAttribute('href') || e.getAttribute('src') || '').startsWith('http://127.0.0.1:9')
    || e.innerText.startsWith('zz')).map(e => e.tagName + ':' + e.innerText)"""


@pytest.fixture(scope="module")
def three(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A 1–3 project named Partly/Mostly/Fully with Markdown/HTML planted in every imported field: project
    name, query id and text, fragment id, source, title and text, run name, an imported annotator's name and
    note, and an adjudication's reason. ana and bo share every pair."""
    require(Path(CHROMIUM).exists(), f"Debian's Chromium not found at {CHROMIUM}")
    folder = tmp_path_factory.mktemp("pages-three")
    db = f"sqlite:///{folder / 'three.db'}"
    qrelkit("init", "--db", db)
    qrelkit("project", "create", PROJECT, "--scale", "1-3", "--labels", "1=Partly,2=Mostly,3=Fully", "--db", db)
    accounts(db, ("ana", "annotator"), ("bo", "annotator"), ("lea", "lead"))
    qrelkit(
        "import",
        "queries",
        write_jsonl(folder / "q.jsonl", [{"id": QUERY_ID, "text": QUERY_TEXT}]),
        "--project",
        PROJECT,
        "--db",
        db,
    )
    qrelkit(
        "import", "fragments", write_jsonl(folder / "f.jsonl", [FRAGMENT, *OTHERS]), "--project", PROJECT, "--db", db
    )
    (folder / "r.run").write_text(
        "".join(f"{QUERY_ID} Q0 {f['id']} {i} {9 - i} x\n" for i, f in enumerate([FRAGMENT, *OTHERS], 1)),
        encoding="utf-8",
    )
    qrelkit("import", "run", str(folder / "r.run"), "--name", RUN, "--project", PROJECT, "--db", db)
    qrelkit("pool", "--project", PROJECT, "--depth", "10", "--db", db)
    qrelkit("assign", "--project", PROJECT, "--overlap", "2", "--annotators", "ana,bo", "--db", db)
    judged = [
        {"query_id": QUERY_ID, "fragment_id": f, "annotator": a, "grade": g, "note": n}
        for f, a, g, n in (
            (FRAGMENT["id"], ANNOTATOR, 1, NOTE),
            (FRAGMENT["id"], "ben", 3, None),
            ("f2", ANNOTATOR, 3, None),
            ("f2", "ben", 1, None),
        )
    ]
    qrelkit("import", "judgments", write_jsonl(folder / "j.jsonl", judged), "--project", PROJECT, "--db", db)
    decided = [
        {
            "query_id": QUERY_ID,
            "fragment_id": "f2",
            "grades": {ANNOTATOR: 3, "ben": 1},
            "adjudication": {"grade": 2, "reason": REASON, "by": "lea"},
        }
    ]
    qrelkit("import", "judgments", write_jsonl(folder / "a.jsonl", decided), "--project", PROJECT, "--db", db)
    yield from serve(db, PROJECT, folder)


@pytest.fixture(scope="module")
def five(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A plain 1–5 project (default names "Grade g"): one query, three fragments, cai grades them all."""
    require(Path(CHROMIUM).exists(), f"Debian's Chromium not found at {CHROMIUM}")
    folder = tmp_path_factory.mktemp("pages-five")
    db = f"sqlite:///{folder / 'five.db'}"
    qrelkit("init", "--db", db)
    qrelkit("project", "create", "five", "--scale", "1-5", "--overlap", "1", "--db", db)
    accounts(db, ("cai", "annotator"))
    qrelkit(
        "import",
        "queries",
        write_jsonl(folder / "q.jsonl", [{"id": "q", "text": "plazo de envío"}]),
        "--project",
        "five",
        "--db",
        db,
    )
    qrelkit(
        "import",
        "fragments",
        write_jsonl(folder / "f.jsonl", [FRAGMENT | {"id": "f1"}, *OTHERS]),
        "--project",
        "five",
        "--db",
        db,
    )
    (folder / "r.run").write_text("q Q0 f1 1 3 x\nq Q0 f2 2 2 x\nq Q0 f3 3 1 x\n", encoding="utf-8")
    qrelkit("import", "run", str(folder / "r.run"), "--project", "five", "--db", db)
    qrelkit("pool", "--project", "five", "--depth", "10", "--db", db)
    qrelkit("assign", "--project", "five", "--annotators", "cai", "--db", db)
    yield from serve(db, "five", folder)


@pytest.fixture(scope="module")
def returns(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A clean 1–3 project for the README's screenshots: the demo's return-deadline queries (q000, A1) and their
    baseline ranking; ben and carla's imported grades (the worked examples' grades, 0 read as 1; carla one
    step up on every other pair) give the lead pages something to show; ana has every pair to grade."""
    require(Path(CHROMIUM).exists(), f"Debian's Chromium not found at {CHROMIUM}")
    data = ROOT / "annotator" / "demo_data"
    folder = tmp_path_factory.mktemp("pages-returns")
    db = f"sqlite:///{folder / 'returns.db'}"
    name = "devoluciones 1-3"
    wanted = ("q000", "A1")
    qrelkit("init", "--db", db)
    qrelkit(
        "project",
        "create",
        name,
        "--scale",
        "1-3",
        "--labels",
        "1=Menciona,2=Responde en parte,3=Responde del todo",
        "--db",
        db,
    )
    accounts(db, ("ana", "annotator"), ("lea", "lead"))
    queries = [json.loads(line) for line in (data / "queries.jsonl").read_text(encoding="utf-8").splitlines()]
    qrelkit(
        "import",
        "queries",
        write_jsonl(folder / "q.jsonl", [q for q in queries if q["id"] in wanted]),
        "--project",
        name,
        "--db",
        db,
    )
    qrelkit("import", "fragments", str(data / "fragments.jsonl"), "--project", name, "--db", db)
    ranked = [line.split() for line in (data / "baseline.run").read_text(encoding="utf-8").splitlines()]
    ranked = [r for r in ranked if r[0] in wanted]
    (folder / "baseline.run").write_text("".join(" ".join(r) + "\n" for r in ranked), encoding="utf-8")
    qrelkit("import", "run", str(folder / "baseline.run"), "--project", name, "--db", db)
    qrelkit("pool", "--project", name, "--depth", "10", "--bm25", "0", "--db", db)
    qrelkit("assign", "--project", name, "--overlap", "1", "--annotators", "ana", "--db", db)
    truth = {
        (g["query_id"], g["fragment_id"]): g["grade"]
        for g in map(json.loads, (data / "grades.jsonl").read_text(encoding="utf-8").splitlines())
    }
    judged = []
    for i, (qid, _, fid, *_) in enumerate(ranked):
        grade = max(1, truth.get((qid, fid), 0))
        judged += [
            {"query_id": qid, "fragment_id": fid, "annotator": "ben", "grade": grade},
            {"query_id": qid, "fragment_id": fid, "annotator": "carla", "grade": min(3, grade + i % 2)},
        ]
    qrelkit("import", "judgments", write_jsonl(folder / "j.jsonl", judged), "--project", name, "--db", db)
    qrelkit("release", "--project", name, "--user", "lea", "--db", db)  # so Releases and Evaluate have content
    yield from serve(db, name, folder)


def shown_fragment_id(page) -> str:
    """External id of the fragment on screen, from the box's '… · fragment ID' caption."""
    caption = page.locator(FRAGMENT_BOX).get_by_test_id("stCaptionContainer").first.inner_text()
    return caption.rsplit("fragment ", 1)[1].strip()


def grade_buttons(page, expected: int) -> list[str]:
    """Labels of the grade buttons on screen (the first line: the shortcut hint follows the label), read once
    `expected` of them are drawn (a shorter list read mid-draw would fail the test for nothing)."""
    buttons = page.get_by_role("button", name=re.compile(r"^[0-9]+ · "))
    expect(buttons).to_have_count(expected)
    wait_idle(page)
    texts = buttons.all_inner_texts()
    return [t.strip().splitlines()[0].strip() for t in texts]


def grades_in_store(db_url: str, project: str, annotator: str) -> dict[str, int]:
    """fragment id → grade of one annotator's judgments, read back from the store."""
    from db.store.frames import judgments_frame
    from db.store.schema import init_db

    frame = judgments_frame(init_db(db_url), project)
    mine = frame[frame.annotator == annotator]
    return dict(zip(mine.fragment_id, mine.grade.astype(int), strict=True))


def planted_requests(page) -> list[str]:
    """Start recording every request the page makes to the planted address."""
    seen: list[str] = []
    page.on("request", lambda request: seen.append(request.url) if request.url.startswith(PLANT) else None)
    return seen


def no_markup_rendered(page) -> None:
    """No element came out of data: no image, no planted script (the app's own cookie script is allowed), no link
    to the planted address, and no bold, italic, heading, list or code element around planted text (all
    planted markup wraps text starting "zz")."""
    for area in ("stMain", "stSidebar"):
        assert page.get_by_test_id(area).locator(MARKUP_TAGS).evaluate_all(MADE_FROM_DATA) == [], area


def test_annotate_shows_every_planted_field_literally_and_loads_nothing(three: Server, page) -> None:
    requests = planted_requests(page)
    login(page, three.url, "ana", "ana-password")
    box = page.locator(FRAGMENT_BOX)
    expect(box).to_contain_text(FRAGMENT["text"])
    planted_fields = (
        PROJECT,
        QUERY_ID,
        QUERY_TEXT,
        FRAGMENT["id"],
        FRAGMENT["doc_id"],
        FRAGMENT["title"],
        FRAGMENT["text"],
    )
    wait_for_texts(page, *planted_fields)
    text = main_text(page)
    for planted in planted_fields:
        assert planted in text, planted
    no_markup_rendered(page)
    settled(page)
    assert requests == []


def test_fragment_box_shows_title_and_source_and_marks_query_terms(three: Server, page) -> None:
    login(page, three.url, "ana", "ana-password")
    box = page.locator(FRAGMENT_BOX)
    caption = box.get_by_test_id("stCaptionContainer").first
    assert caption.inner_text() == f"{FRAGMENT['title']} · source {FRAGMENT['doc_id']} · fragment {FRAGMENT['id']}"
    assert caption.locator("strong").inner_text() == FRAGMENT["title"]  # the title is bold, as the app makes it
    text = box.locator(".qrelkit-fragment")
    expect(text).to_be_visible()  # st.html inserts its sanitised content after the run ends: wait for it
    # the query's words of 3+ letters in the fragment, in order ("de" is too short); the planted image address
    # in the fragment shares http, 127 and png with the one in the query
    expect(text.locator("mark")).to_have_text(["plazo", "devolución", "http", "127", "png"], ignore_case=True)
    assert "monospace" not in text.evaluate("e => getComputedStyle(e).fontFamily")
    assert box.bounding_box()["height"] < 200  # one short paragraph: a box sized to it, not a fixed 260 px


def test_project_page_shows_planted_names_literally_and_loads_nothing(three: Server, page) -> None:
    requests = planted_requests(page)
    login(page, three.url, "lea", "lea-password")
    open_page(page, "Project")
    page.get_by_role("tab", name="Pool").click()
    wait_for_texts(page, RUN)
    assert RUN in main_text(page)
    page.get_by_role("tab", name="Assign").click()
    wait_for_texts(page, ANNOTATOR, PROJECT)
    assert ANNOTATOR in main_text(page)
    assert PROJECT in main_text(page)
    no_markup_rendered(page)
    settled(page)
    assert requests == []


def test_adjudicate_page_shows_planted_fields_literally_and_loads_nothing(three: Server, page) -> None:
    requests = planted_requests(page)
    login(page, three.url, "lea", "lea-password")
    open_page(page, "Adjudicate")
    page.get_by_role("combobox", name="Pair").click()  # the pair picker, beside the query and boundary filters
    page.get_by_role("option").filter(has_text="adjudicated").click()
    in_force = page.get_by_test_id("stAlertContentInfo")
    until(page, lambda: in_force.inner_text() == f"In force: final grade 2 by lea — {REASON}")  # the pick's rerun
    wait_idle(page)
    assert in_force.inner_text() == f"In force: final grade 2 by lea — {REASON}"
    wait_for_texts(page, PROJECT, QUERY_ID, QUERY_TEXT, "f2")
    text = main_text(page)
    for planted in (PROJECT, QUERY_ID, QUERY_TEXT, "f2"):
        assert planted in text, planted
    no_markup_rendered(page)
    settled(page)
    assert requests == []


def test_a_1_to_3_project_grades_with_its_own_keys_and_0_does_nothing(three: Server, page) -> None:
    login(page, three.url, "bo", "bo-password")
    assert grade_buttons(page, len(LABELS)) == [f"{g} · {n}" for g, n in LABELS.items()]
    first = shown_fragment_id(page)
    # 0 is no grade here. Nothing happening leaves nothing to wait for, so the next key is the proof: keys are
    # handled in order, and 3 must grade the pair 0 left on screen (had 0 graded, skipped or failed, the store
    # below would not hold exactly these grades).
    press(page, "0")
    graded = {first: 3}
    press_grade(page, "3")
    expect(page.get_by_test_id("stException")).to_have_count(0)
    for key in ("1", "2"):
        graded[shown_fragment_id(page)] = int(key)
        if len(graded) < 3:
            press_grade(page, key)
        else:
            press(page, key)
            expect(page.get_by_text("All your assigned pairs are judged. Thank you!")).to_be_visible()
    assert grades_in_store(three.db_url, PROJECT, "bo") == graded


def test_a_1_to_5_project_takes_grades_4_and_5_from_the_keyboard(five: Server, page) -> None:
    login(page, five.url, "cai", "cai-password")
    assert grade_buttons(page, 5) == [f"{g} · Grade {g}" for g in range(1, 6)]
    graded = {}
    for key in ("5", "4"):
        graded[shown_fragment_id(page)] = int(key)
        press_grade(page, key)
    assert grades_in_store(five.db_url, "five", "cai") == graded


def test_adjudicate_counters_and_the_grade_in_force_update_on_saving(three: Server, page) -> None:
    from db.store.frames import adjudications_frame
    from db.store.schema import init_db

    login(page, three.url, "lea", "lea-password")
    open_page(page, "Adjudicate")
    caption = page.get_by_text(re.compile(r"pair\(s\) adjudicated so far"))
    expect(caption).to_contain_text(" 1 pair(s) adjudicated so far.")
    page.get_by_role("combobox", name="Pair").click()
    page.get_by_role("option").filter(has_text=FRAGMENT["id"]).first.click()
    until(page, lambda: shown_fragment_id(page) == FRAGMENT["id"])  # the pick's rerun shows its fragment
    wait_idle(page)
    expect(page.get_by_test_id("stAlertContentInfo")).to_have_count(0)
    page.get_by_role("button", name="Save final grade").click()
    wait_idle(page)
    expect(page.get_by_text("Pick a final grade first.")).to_be_visible()
    page.get_by_test_id("stRadio").get_by_text("3 · Fully").click()
    page.get_by_role("textbox", name="Reason").fill("la nota de ben pesa más")
    page.get_by_role("button", name="Save final grade").click()
    wait_idle(page)
    expect(caption).to_contain_text(" 2 pair(s) adjudicated so far.")
    # saving opens the next open dispute (the in-force line of a decided pair: test_app_annotator's AppTest)
    expect(page.get_by_text(re.compile(r"^Final grade 3 saved for "))).to_be_visible()
    assert len(adjudications_frame(init_db(three.db_url), PROJECT)) == 2


def test_screenshots_of_every_page_of_a_1_to_3_project(returns: Server, page) -> None:
    login(page, returns.url, "ana", "ana-password")
    assert grade_buttons(page, 3) == ["1 · Menciona", "2 · Responde en parte", "3 · Responde del todo"]
    screenshot(page, "annotate_1-3")
    page = page.context.browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    login(page, returns.url, "lea", "lea-password")
    expect(page.get_by_test_id("stSidebarNav").get_by_role("link")).to_have_count(2 + len(LEAD_PAGES))
    links = page.get_by_test_id("stSidebarNav").get_by_role("link").all_inner_texts()
    titles = [text.strip().splitlines()[-1].strip() for text in links]
    assert titles[:2] == ["Annotate", "Guideline"] and len(titles) == 2 + len(LEAD_PAGES)
    for title in titles[1:]:
        open_page(page, title)
        if title == "Project":
            show_tab(page, "Annotators")
        screenshot(page, f"{page.url.rstrip('/').rsplit('/', 1)[1]}_1-3")
    page.context.close()
