"""The Evaluate page's reliability section (AppTest) on the lead-page fixture: seed 000's one query, two pooled
runs (baseline, dense) and one unpooled run (fresh)."""

from __future__ import annotations

import pytest

from db.reliability import project_reliability
from tests.helpers import page_test, release, shown

pytestmark = pytest.mark.usefixtures("scan_components_once")  # AppTest: scan for components once


def test_evaluate_page_shows_the_sentence_and_the_pool_drops(store):
    """One query cannot size a t-test, and the sentence says so; the pool-bias table marks fresh (not pooled)
    with — and gives the pooled runs the store's drops."""
    release(store)
    at = page_test(store, "lead_evaluate.py")
    assert not at.exception
    assert any(s.value == "Is this release reliable?" for s in at.subheader)
    sentence = next(shown(i.value) for i in at.info if "paired t-test" in shown(i.value))
    assert sentence.startswith("1 query and 3 run(s) are too few to size a paired t-test for ndcg@10.")
    table = next(d.value for d in at.dataframe if "Drop without them" in d.value.columns)
    assert table.loc["fresh", "Drop without them"] == "—"
    report = project_reliability(store, "shop", 1)
    drops = {b.run: f"{b.drop:.4f}" for b in report.metrics[0].pool_bias}
    assert {r: table.loc[r, "Drop without them"] for r in ("baseline", "dense")} == drops
    assert sentence == shown(report.sentence())
    # the x axis counts run pairs: whole numbers ("1", not "1.000000" under the one pair of two runs)
    from annotator.app.components.reliability import asl_chart

    axis = asl_chart(report.metrics[0], 0.05).to_dict()["layer"][0]["encoding"]["x"]["axis"]
    assert axis == {"format": "d", "tickMinStep": 1}
