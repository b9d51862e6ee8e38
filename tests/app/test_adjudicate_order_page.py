"""The Adjudicate page ordered by doubt (AppTest, on the demo project) lists the disputes in the order
`qrelkit disputes --order doubt --format json` prints them, and its caption's entropies are the CLI's first three."""

from __future__ import annotations

import json
import math
import re

import pytest
from streamlit.testing.v1 import AppTest

from annotator.cli import main
from db.adjudication import DISPUTE_ORDERS
from tests.helpers import PAGES, human_disputes, log_in, private_store

pytestmark = pytest.mark.usefixtures("scan_components_once")  # AppTest: scan for components once

DEMO = "demo"
BITS = re.compile(r"(\d+\.\d\d) bits")


@pytest.fixture
def demo(demo_template, tmp_path, monkeypatch):
    """A private copy of the demo store (people who disagree on many pairs); QRELKIT_DB_URL points the app at it."""
    return private_store(demo_template, "demo.db", DEMO, tmp_path, monkeypatch)


def test_doubt_order_lists_the_disputes_as_the_cli_prints_them(demo, capsys):
    assert list(DISPUTE_ORDERS) == ["spread", "doubt"]
    at = log_in(AppTest.from_file(str(PAGES / "lead_adjudicate.py"), default_timeout=120), demo, "lea")
    at.session_state["project"] = DEMO
    at.run()
    assert not at.exception
    order = next(w for w in at.segmented_control if w.label == "Order")
    assert order.options == ["spread", "doubt"] and order.value == "spread"
    assert not any(BITS.search(c.value) for c in at.caption)  # by spread: no entropies
    assert any("largest spread first" in c.value for c in at.caption)
    order.set_value("doubt").run()
    assert not at.exception and not at.error

    assert main(["disputes", "--project", DEMO, "--order", "doubt", "--format", "json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    # The tests' own count of the pairs people differ on (straight from the judgments table), as a set.
    assert sorted((d["query_id"], d["fragment_id"]) for d in printed) == sorted(
        (q, f) for q, f, _, _ in human_disputes(demo)
    )
    entropies = [d["entropy"] for d in printed]
    assert entropies == sorted(entropies, reverse=True)  # least sure first
    for d in printed:
        # Over four grades 0 ≤ H ≤ log2 4 = 2 bits, and H ≥ −log2 (top posterior): min-entropy bounds Shannon's.
        assert 0 <= d["entropy"] <= 2 + 1e-9 and d["entropy"] >= -math.log2(d["top_posterior"]) - 1e-9
    assert entropies[0] > entropies[-1]  # the order says something: not every pair equally doubtful

    pairs = next(s for s in at.selectbox if s.label == "Pair")
    shown = [tuple(label.split(" · ")[:2]) for label in pairs.options]
    assert shown == [(d["query_id"], d["fragment_id"]) for d in printed]
    spreads = [int(label.split(" · ")[2].removeprefix("spread ")) for label in pairs.options]
    assert spreads == [d["spread"] for d in printed]
    captions = [c.value for c in at.caption if BITS.search(c.value)]
    assert len(captions) == 1
    assert BITS.findall(captions[0]) == [f"{e:.2f}" for e in entropies[:3]]
    # The count line says the order the picker follows (it said "largest spread first" whatever the order).
    count = next(c.value for c in at.caption if "disputed pair(s) among people" in c.value)
    assert f"showing {len(printed)}, least sure first" in count
