"""Control pairs are served blind: in a real browser, the page, its HTML and the websocket messages of a control
pair are those of any pair (the role tests' way: read what the annotator's browser receives)."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import CHROMIUM, Server, login, require, serving, wait_idle
from tests.browser.pages import FRAGMENT_BOX, press_grade, shown_fragment_id

pytestmark = pytest.mark.browser

REASON = "settled-reason-7f3a"  # the lead's reason: must never reach the annotator
CONTROL = "zz-ctl"
# The main area as a tree of tags, test ids and classes (digits masked: widget keys carry pair ids), down to
# each text element: the markup inside a paragraph or the fragment's text follows its words (a colon in a title
# adds break spans), not what kind of pair it is.
SKELETON = """() => {
  const TEXT = new Set(['P', 'STRONG', 'EM', 'SPAN', 'MARK', 'CODE', 'H1', 'H2', 'H3', 'H4', 'H5', 'H6', 'LI']);
  const out = [];
  const walk = (el, depth) => {
    const cls = [...el.classList].map(c => c.replace(/[0-9]+/g, '#')).sort().join('.');
    out.push(depth + ':' + el.tagName + '[' + (el.getAttribute('data-testid') || '') + ']' + cls);
    if (el.classList.contains('qrelkit-fragment') || TEXT.has(el.tagName)) return;
    for (const child of el.children) walk(child, depth + 1);
  };
  walk(document.querySelector('[data-testid="stMain"]'), 0);
  return out;
}"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The demo project with one more fragment in ana's current query, made a control pair (rate 1/2) by the
    lead with a reason: served beside her next pair of that query."""
    require(Path(CHROMIUM).exists(), f"Debian's Chromium not found at {CHROMIUM}")
    import sqlalchemy as sa

    from annotator.demo import build_demo
    from db.accounts.permissions import OPERATOR
    from db.control import add_control
    from db.grading import next_pair
    from db.store.models import Fragment, Pair, Query
    from db.store.schema import init_db

    folder = tmp_path_factory.mktemp("browser-control")
    db_url = f"sqlite:///{folder / 'control.db'}"
    engine = init_db(db_url)
    build_demo(engine)
    first = next_pair(engine, "demo", "ana")
    assert first is not None
    with engine.begin() as conn:
        like = conn.execute(
            sa.select(Fragment.project_id, Fragment.title, Fragment.doc_id).where(
                Fragment.external_id == first.fragment_external_id
            )
        ).one()
        fid = conn.execute(
            sa.insert(Fragment.__table__)
            .values(
                project_id=like.project_id,
                external_id=CONTROL,
                text="A plain fragment about return deadlines.",
                title=None if like.title is None else "A title",
                doc_id=None if like.doc_id is None else "doc-x",
                content_hash="ctl",
            )
            .returning(Fragment.__table__.c.id)
        ).scalar_one()
        qid = conn.execute(
            sa.select(Query.id).where(Query.external_id == first.query_external_id, Query.project_id == like.project_id)
        ).scalar_one()
        conn.execute(
            sa.insert(Pair.__table__).values(
                project_id=like.project_id, query_id=qid, fragment_id=fid, created_at=sa.func.now()
            )
        )
    report = add_control(engine, "demo", first.query_external_id, CONTROL, 2, REASON, "1/2", actor=OPERATOR)
    assert report.served.get("ana") == 1
    engine.dispose()
    with serving(db_url, folder) as running:
        yield running


def pairs_until_control(db_url: str) -> int:
    """How many of ana's pending pairs come before the control pair (it hides at a random place among the
    pending pairs of its query, which may be many)."""
    import sqlalchemy as sa

    from db.store.models import Assignment, Fragment, Pair, User

    engine = sa.create_engine(db_url)
    with engine.connect() as conn:
        rows = (
            conn.execute(
                sa.select(Fragment.external_id)
                .select_from(Assignment)
                .join(Pair, Pair.id == Assignment.pair_id)
                .join(Fragment, Fragment.id == Pair.fragment_id)
                .join(User, User.id == Assignment.user_id)
                .where(User.username == "ana", Assignment.done == sa.false())
                .order_by(Assignment.position)
            )
            .scalars()
            .all()
        )
    engine.dispose()
    return list(rows).index(CONTROL)


def test_a_control_pair_looks_like_any_pair(server: Server, page) -> None:
    frames: list[bytes] = []
    page.on(
        "websocket",
        lambda ws: ws.on(
            "framereceived", lambda payload: frames.append(payload if isinstance(payload, bytes) else payload.encode())
        ),
    )
    login(page, server.url, "ana", "ana-demo")
    seen: dict[str, tuple[list[str], list[bytes]]] = {}
    for _ in range(pairs_until_control(server.db_url) + 2):  # and one regular pair after it, if it came first
        expect(page.locator(FRAGMENT_BOX).locator(".qrelkit-fragment")).to_be_visible()
        wait_idle(page)
        fragment = shown_fragment_id(page)
        seen[fragment] = (page.evaluate(SKELETON), list(frames))
        frames.clear()
        if CONTROL in seen and len(seen) >= 2:
            break
        press_grade(page, "1")
    assert CONTROL in seen, f"the control pair was not served among {list(seen)}"
    regular = [f for f in seen if f != CONTROL]
    control_tree, control_frames = seen[CONTROL]
    nearest = min(regular, key=lambda f: len(set(seen[f][0]) ^ set(control_tree)))
    assert seen[nearest][0] == control_tree, "the control pair's page is built differently: " + "\n".join(
        difflib.unified_diff(seen[nearest][0], control_tree, nearest, CONTROL, lineterm="", n=1)
    )
    html = page.content()
    received = b"".join(b for _, fs in seen.values() for b in fs)
    for secret in (REASON, "control pair", "control_pair", "settled"):
        assert secret not in html
        assert secret.encode() not in received.lower()
    words = re.compile(rb"control", re.IGNORECASE)
    # whatever Streamlit itself sends that contains the word, a control pair's page sends no more of it
    assert len(words.findall(b"".join(control_frames))) <= max(
        len(words.findall(b"".join(seen[f][1]))) for f in regular
    )
