"""The Agreement page's "vs reference" section: a reference's grades (an imported qrels) and each person against
them, κ as scikit-learn computes it on the pairs both graded; the reference stays out of the people's agreement."""

from __future__ import annotations

from sklearn.metrics import cohen_kappa_score

from db.accounts.permissions import OPERATOR
from db.imports import Judges, JudgmentsSource, import_judgments
from db.store.frames import judgments_frame
from tests.helpers import PROJECT, page_test


def test_each_person_is_measured_against_the_reference(store, tmp_path):
    engine = store
    people = judgments_frame(engine, PROJECT)
    graded = people[people["grade"].notna()].drop_duplicates(["query_id", "fragment_id"])
    # the reference grades each pair 3 − (ana's grade), floored at 0: a disagreement that κ must show
    ana = people[(people["annotator"] == "ana") & people["grade"].notna()]
    qrels = tmp_path / "nist.qrels"
    qrels.write_text(
        "".join(
            f"{q} 0 {f} {max(0, 3 - int(g))}\n"
            for q, f, g in ana[["query_id", "fragment_id", "grade"]].itertuples(index=False)
        )
    )
    import_judgments(engine, PROJECT, qrels, actor=OPERATOR, judges=Judges("reference"), source=JudgmentsSource("nist"))
    assert len(graded)
    at = page_test(engine, "lead_agreement.py")
    assert not at.exception
    assert "vs reference nist" in [s.value for s in at.subheader]
    table = next(
        d.value
        for d in at.dataframe
        if "κ" in d.value.columns
        and "ana" in d.value["Annotator"].tolist()
        and "nist" not in d.value["Annotator"].tolist()
        and len(d.value) == 2
    )
    everyone = judgments_frame(engine, PROJECT)
    truth = everyone[everyone["annotator"] == "nist"].set_index(["query_id", "fragment_id"])["grade"]
    for name in ("ana", "ben"):
        own = everyone[(everyone["annotator"] == name) & everyone["grade"].notna()].set_index(
            ["query_id", "fragment_id"]
        )["grade"]
        both = own.index.intersection(truth.index)
        expected = cohen_kappa_score(
            truth[both].astype(int), own[both].astype(int), labels=[0, 1, 2, 3], weights="linear"
        )
        shown = table.set_index("Annotator").loc[name, "κ"]
        assert shown.startswith(f"{expected:.3f}"), (name, shown, expected)
