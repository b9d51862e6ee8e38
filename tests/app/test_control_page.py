"""The Agreement page's control-pair section (AppTest) on the lead-page fixture (seed 000's query)."""

from __future__ import annotations

import pytest
from sklearn.metrics import cohen_kappa_score

from tests.helpers import PROJECT, page_test, shown

pytestmark = pytest.mark.usefixtures("scan_components_once")  # AppTest: scan for components once


def _pair_id(engine, fragment: str) -> int:
    import sqlalchemy as sa

    from db.store.models import Fragment, Pair

    with engine.connect() as conn:
        return conn.execute(
            sa.select(Pair.id).join(Fragment, Fragment.id == Pair.fragment_id).where(Fragment.external_id == fragment)
        ).scalar_one()


def test_agreement_page_shows_each_annotator_against_the_controls(store):
    """d3, d7, d12 become control pairs (settled 3, 2, 2); ana and ben graded them before, so they are not
    measured; lea grades them 3, 2, 1 afterwards: accuracy 2/3, κ = scikit-learn's linear-weighted κ."""
    from db.accounts.permissions import OPERATOR
    from db.control import add_control
    from db.grading import record_judgment

    for fragment, grade in (("d3", 3), ("d7", 2), ("d12", 2)):
        add_control(store, PROJECT, "q000", fragment, grade, f"settled by the lead: {fragment}", actor=OPERATOR)
    for fragment, grade in (("d3", 3), ("d7", 2), ("d12", 1)):
        record_judgment(store, _pair_id(store, fragment), "lea", grade)
    at = page_test(store, "lead_agreement.py")
    assert not at.exception
    assert any(s.value == "Against the control pairs" for s in at.subheader)
    table = next(d.value for d in at.dataframe if "Accuracy" in d.value.columns)
    assert table["Annotator"].map(shown).tolist() == ["lea"]
    expected = cohen_kappa_score([3, 2, 2], [3, 2, 1], labels=[0, 1, 2, 3], weights="linear")
    assert table.iloc[0]["Accuracy"] == "0.667" and table.iloc[0]["κ"] == f"{expected:.3f}"
    assert table.iloc[0]["Pairs"] == "3"
