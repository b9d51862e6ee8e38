"""The lead desk: chart builders against reference libraries, and every lead page run through AppTest."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score, confusion_matrix

from annotator.app.components import charts

SCALE = (0, 3)


def random_judgments(
    seed: int = 7, n_pairs: int = 60, annotators: tuple[str, ...] = ("ann", "bob", "cy"), missing: float = 0.25
) -> pd.DataFrame:
    """Seeded judgments in the store's frame form, with can't-judge (NA) grades and unjudged cells."""
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(n_pairs):
        truth = rng.integers(0, 4)
        for a in annotators:
            if rng.random() < missing:
                continue
            grade = None if rng.random() < 0.05 else int(np.clip(truth + rng.integers(-1, 2), 0, 3))
            rows.append({"query_id": f"q{p // 6}", "fragment_id": f"d{p}", "annotator": a, "grade": grade})
    frame = pd.DataFrame(rows)
    frame["grade"] = frame["grade"].astype("Int64")
    return frame


def test_confusion_frame_matches_scikit_learn():
    """Counts equal sklearn's confusion_matrix(labels=[0..3]) on the pairs both annotators graded."""
    judgments = random_judgments()
    frame = charts.confusion_frame(judgments, "ann", "bob", SCALE)
    wide = judgments.dropna(subset=["grade"]).pivot(
        index=["query_id", "fragment_id"], columns="annotator", values="grade"
    )
    both = wide[["ann", "bob"]].dropna()
    expected = confusion_matrix(both["ann"].astype(int), both["bob"].astype(int), labels=[0, 1, 2, 3])
    got = frame.pivot(index="grade_a", columns="grade_b", values="count").to_numpy()
    assert len(frame) == 16
    np.testing.assert_array_equal(got, expected)
    assert got.sum() == len(both) > 0


def test_confusion_frame_covers_unused_grades_of_a_shifted_scale():
    """A 1–5 scale with grades 1 and 2 only still yields all 25 cells, zeros included."""
    judgments = pd.DataFrame(
        {
            "query_id": ["q"] * 4,
            "fragment_id": ["a", "a", "b", "b"],
            "annotator": ["x", "y", "x", "y"],
            "grade": pd.array([1, 2, 2, 2], dtype="Int64"),
        }
    )
    frame = charts.confusion_frame(judgments, "x", "y", (1, 5))
    assert len(frame) == 25
    cells = {(a, b): c for a, b, c in frame.itertuples(index=False)}
    assert cells[(1, 2)] == 1 and cells[(2, 2)] == 1
    assert sum(cells.values()) == 2


def test_kappa_matrix_is_symmetric_and_keeps_undefined_pairs():
    """Both orders of each pair carry the pair's κ; an undefined κ stays None with its reason."""
    judgments = random_judgments(seed=3)
    wide = judgments.dropna(subset=["grade"]).pivot(
        index=["query_id", "fragment_id"], columns="annotator", values="grade"
    )
    both = wide[["ann", "bob"]].dropna().astype(int)
    kq = cohen_kappa_score(both["ann"], both["bob"], labels=[0, 1, 2, 3], weights="quadratic")
    from eval_core.agreement.types import Coefficient, KappaPair

    kappa = [
        KappaPair("ann", "bob", len(both), {"quadratic": Coefficient(kq, (kq - 0.1, kq + 0.1))}, []),
        KappaPair("ann", "zed", 0, {"quadratic": Coefficient(None, None, "undefined: no overlapping pairs")}, []),
    ]
    frame = charts.kappa_matrix(kappa, "quadratic")
    assert len(frame) == 4
    ab = frame[(frame["a"] == "ann") & (frame["b"] == "bob")].iloc[0]
    ba = frame[(frame["a"] == "bob") & (frame["b"] == "ann")].iloc[0]
    assert ab["value"] == pytest.approx(kq) and ba["value"] == pytest.approx(kq)
    assert ab["n"] == len(both)
    undefined = frame[frame["b"] == "zed"].iloc[0]
    assert undefined["value"] is None or pd.isna(undefined["value"])
    assert undefined["status"] == "undefined: no overlapping pairs"
    spec = charts.kappa_heatmap(kappa, "quadratic", 0.6).to_dict()
    assert "—" in {row["label"] for row in spec["datasets"][next(iter(spec["datasets"]))]}
    # sized by steps: Streamlit's default autosize "fit" would make Vega warn in the console on every draw
    assert spec["autosize"] == {"type": "pad", "contains": "padding"} and spec["width"] == {"step": 90}
    with pytest.raises(ValueError, match="weight"):
        charts.kappa_matrix(kappa, "cubic")


def test_run_history_chart_marks_only_flagged_drops():
    """Red points sit exactly on the releases db.evaluations.run_history flagged as drops."""
    history = pd.DataFrame(
        {
            "version": [1, 2, 3, 1, 2, 3],
            "metric": ["ndcg@10"] * 3 + ["mrr"] * 3,
            "value": [0.50, 0.40, 0.45, 0.3, 0.3, 0.3],
            "change": [None, -0.10, 0.05, None, 0.0, 0.0],
            "drop": [False, True, False, False, False, False],
        }
    )
    spec = charts.run_history_chart(history, "ndcg@10").to_dict()
    layers = spec["layer"]
    datasets = spec["datasets"]
    line_rows = datasets[layers[0]["data"]["name"]]
    drop_rows = datasets[layers[1]["data"]["name"]]
    assert [r["version"] for r in line_rows] == [1, 2, 3]
    assert [(r["version"], r["value"]) for r in drop_rows] == [(2, 0.40)]
    # no drop, no empty layer of drops (Vega warns "Infinite extent for field value" in the browser's console)
    steady = charts.run_history_chart(history, "mrr").to_dict()
    assert "layer" not in steady and steady["mark"] == {"type": "line", "point": True}
    assert [r["value"] for r in steady["datasets"][steady["data"]["name"]]] == [0.3, 0.3, 0.3]


def test_agreement_trend_chart_draws_the_threshold():
    """The trend carries one point per guideline version and the flag threshold as a rule."""
    trend = pd.DataFrame(
        {"guideline": [1, 2], "value": [0.45, 0.71], "low": [0.35, 0.62], "high": [0.55, 0.80], "n": [120, 140]}
    )
    spec = charts.agreement_trend_chart(trend, 0.6).to_dict()
    marks = [layer["mark"]["type"] if isinstance(layer["mark"], dict) else layer["mark"] for layer in spec["layer"]]
    assert marks == ["rule", "line", "rule"]
    values = [row.get("threshold") for rows in spec["datasets"].values() for row in rows]
    assert 0.6 in values


def test_recall_curve_chart_has_one_line_per_run():
    """recall@k points per run, on a fixed 0–1 axis (seed 000's curve 0.25/0.50/0.75 at k = 3/5/10)."""
    curve = pd.DataFrame({"k": [3, 5, 10], "recall": [0.25, 0.50, 0.75], "run": "seed000"})
    spec = charts.recall_curve_chart(curve).to_dict()
    assert spec["encoding"]["y"]["scale"]["domain"] == [0, 1]
    assert spec["encoding"]["color"]["field"] == "run"
    rows = spec["datasets"][spec["data"]["name"]]
    assert [(r["k"], r["recall"]) for r in rows] == [(3, 0.25), (5, 0.50), (10, 0.75)]


# ---------------------------------------------------------------- AppTest: every lead page on a seeded store

from types import SimpleNamespace  # noqa: E402

import krippendorff  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

from annotator.app import main as app  # noqa: E402
from tests.conftest import ROOT  # noqa: E402
from tests.helpers import (  # noqa: E402
    DENSE_RANKING,
    GUIDELINE_V2,
    PAGES,
    PROJECT,
    SEED_GRADES,
    SEED_RANKING,
    ben_grade,
    log_in,
    page_test,
    release,
    shown,
    write_jsonl,
    write_run,
)

NOT_ALLOWED = "Not allowed for your role: this page is for the lead role; you are logged in as annotator."
LEAD_PAGES = tuple(name for name, _ in app.LEAD_PAGES)
pytestmark = pytest.mark.usefixtures("scan_components_once")  # AppTest: scan for components once


def app_test(engine, username: str = "lea") -> AppTest:
    """The whole app (navigation by role) with `username` logged in."""
    return log_in(
        AppTest.from_file(str(ROOT / "annotator" / "app" / "main.py"), default_timeout=60), engine, username
    ).run()


def expected_alpha() -> float:
    """Ordinal α of the fixture's two annotators from the krippendorff package (annotators × units)."""
    ana = [SEED_GRADES[d] for d in SEED_GRADES]
    ben = [ben_grade(g) for g in ana]
    return float(
        krippendorff.alpha(
            reliability_data=np.array([ana, ben], dtype=float),
            level_of_measurement="ordinal",
            value_domain=[0, 1, 2, 3],
        )
    )


@pytest.mark.parametrize("page", LEAD_PAGES)
def test_annotator_opening_a_lead_page_by_url_is_stopped(store, page):
    """require_role("lead") stops the script before anything of the page is drawn."""
    at = page_test(store, page, "ana")
    assert not at.exception
    assert [e.value for e in at.error] == [NOT_ALLOWED]
    assert not at.title and not at.dataframe and not at.table and not at.button


def test_annotator_following_a_lead_link_is_not_allowed(store):
    """Through the app an annotator who reaches a lead page is told so, and sees nothing of it."""
    at = app_test(store, "ana")
    at.switch_page(str(PAGES / "lead_agreement.py")).run()
    assert not at.exception
    assert [e.value for e in at.error] == [NOT_ALLOWED]
    assert not at.dataframe and not at.table


def test_agreement_page_flags_the_guideline_with_krippendorff_alpha(store):
    """The banner names guideline version 1, α as the krippendorff package computes it, and the boundary."""
    alpha = expected_alpha()
    assert alpha < 0.6  # the fixture is built to be flagged
    at = page_test(store, "lead_agreement.py")
    assert not at.exception
    banner = at.error[0].value
    assert banner.startswith("Guideline version 1 flagged: ordinal α ")
    assert f"ordinal α {alpha:.2f}" in banner
    assert "The ambiguous boundary is" in banner
    table = at.dataframe[0].value.set_index("coefficient")
    assert table.loc["Krippendorff α (ordinal)", "value"] == pytest.approx(alpha, abs=1e-9)


def test_agreement_cuts_match_binarised_krippendorff(store):
    """Each boundary's α equals krippendorff's nominal α on the grades cut at that boundary."""
    at = page_test(store, "lead_agreement.py")
    cuts = at.dataframe[1].value.set_index("coefficient")
    ana = np.array(list(SEED_GRADES.values()))
    ben = np.array([ben_grade(g) for g in ana])
    for cut in (1, 2, 3):
        data = np.array([ana >= cut, ben >= cut], dtype=float)
        if len(np.unique(data)) < 2:
            continue
        expected = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal", value_domain=[0, 1])
        assert cuts.loc[f"α at boundary {cut - 1}|{cut}", "value"] == pytest.approx(expected, abs=1e-9)


def test_disputed_pair_opens_adjudication_and_the_grade_is_stored(store):
    """Adjudicate on a disputed pair switches page with the pair selected; the final grade lands in the store."""
    from db.store import frames

    at = app_test(store)
    at.switch_page(str(PAGES / "lead_agreement.py")).run()
    assert not at.exception
    line = next(t.value for t in at.text if " — spread " in t.value)  # beside the first "Adjudicate" button
    first = tuple(line.split(" — ")[0].split(" · "))
    pair = SimpleNamespace(query_id=first[0], fragment_id=first[1])
    at.button(key="adjudicate-0").click().run()
    assert not at.exception
    assert at.title[0].value == "Adjudication"
    # AppTest keeps the page it was told to show; follow the switch the page made so reruns stay here.
    at.switch_page(str(PAGES / "lead_adjudicate.py"))
    assert at.session_state["adjudicate_pair"] == frames.pair_id(store, PROJECT, *first)
    assert pair_picker(at).value.startswith(f"{pair.query_id} · {pair.fragment_id}")
    at.radio[0].set_value(2)
    at.text_area[0].input("Partial answer: the deadline without the refund rule")
    next(b for b in at.button if b.label == "Save final grade").click().run()
    assert not at.exception
    assert at.success, "no confirmation shown"
    decided = frames.adjudications_frame(store, PROJECT)
    assert decided[["query_id", "fragment_id", "grade", "by"]].values.tolist() == [
        [pair.query_id, pair.fragment_id, 2, "lea"]
    ]


def pair_picker(at: AppTest):
    """The Adjudication page's pair picker (beside its query and boundary filters)."""
    return next(s for s in at.selectbox if s.label == "Pair")


def test_adjudication_shows_every_grade_and_fragment_html_as_text(store):
    """d11 holds <script>: it is shown verbatim as text, next to both annotators' grades."""
    at = page_test(store, "lead_adjudicate.py")
    labels = pair_picker(at).options
    d11 = next(label for label in labels if label.startswith("q000 · d11 "))
    pair_picker(at).set_value(d11).run()
    assert not at.exception
    import html

    bodies = [e.proto.body for e in at.get("html")]
    assert any(html.escape("<script>alert('x')</script> Returns:", quote=True) in b for b in bodies)
    assert not any("<script>" in b for b in bodies)
    grades = at.dataframe[0].value
    assert dict(zip(grades["Annotator"], grades["Grade"], strict=True)) == {"ana": 0, "ben": 1}


def test_guidelines_page_diffs_versions_and_lists_the_rejudge_queue(store):
    """v1 → v2 diff shows the edited line; every v1 judgment (2 × 20) is queued for re-judging."""
    from db import projects

    at = page_test(store, "lead_guidelines.py")
    assert not at.exception
    diff = at.code[0].value
    assert "-2 answers partially.\n" in diff
    assert "+2 answers partially or gives essential context.\n" in diff
    queue = at.dataframe[0].value
    assert len(queue) == 40 and set(queue["Judged under version"].astype(str)) == {"1"}
    at.text_area[0].input(GUIDELINE_V2 + "\nCan't judge: say why.\n")
    at.button[0].click().run()
    assert not at.exception
    assert [g.version for g in projects.list_guidelines(store, PROJECT)] == [1, 2, 3]


def test_release_page_creates_a_median_release_with_seed_grades(store):
    """Median of (ana, lenient ben) is ana's grade: the released TREC qrels are seed 000's grades."""
    from db import releases

    at = page_test(store, "lead_releases.py")
    assert not at.exception
    at.selectbox[0].set_value("median")
    at.button[0].click().run()
    assert not at.exception
    assert [r.version for r in releases.list_releases(store, PROJECT)] == [1]
    qrels = releases.release_files(store, PROJECT, 1)["qrels.trec"].decode().split("\n")
    got = {line.split()[2]: int(line.split()[3]) for line in qrels if line}
    assert got == SEED_GRADES
    labels = [b.label for b in at.get("download_button")]
    assert labels[:3] == ["TREC qrels (gains)", "BEIR qrels (TSV, gains)", "JSONL (every grade)"]


def test_release_diff_lists_the_adjudicated_change(store):
    """After adjudicating d20 to 2, release 2 differs from release 1 by exactly that label."""
    from db import adjudication

    release(store)
    from db.store import frames

    adjudication.adjudicate(
        store, frames.pair_id(store, PROJECT, "q000", "d20"), 2, "answers with context", actor="lea"
    )
    at = page_test(store, "lead_releases.py")
    at.button[0].click().run()
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Labels changed"] == "1" and metrics["Labels added"] == "0"


def test_release_table_is_readable(store):
    """Headers for people, the hash shortened, times in UTC, and "—" where the card has no count."""
    release(store)
    at = page_test(store, "lead_releases.py")
    assert not at.exception
    table = at.dataframe[0].value
    assert list(table.columns) == [
        "Version",
        "Consensus rule",
        "Min. grades per pair",
        "Queries",
        "Pairs",
        "Adjudicated",
        "Content hash",
        "Created by",
        "Created at",
    ]
    row = table.iloc[0]
    assert (row["Version"], row["Consensus rule"], row["Created by"]) == (1, "median", "lea")
    assert (row["Queries"], row["Pairs"], row["Adjudicated"]) == (1, 20, 0)  # q000 × d1…d20, none adjudicated
    assert len(row["Content hash"]) == 12
    grades = at.dataframe[1].value
    assert list(grades.columns) == ["Grade", "Released labels", "Individual grades"]
    # The released labels are seed 000's: 16 × 0, d20 = 1, d7 and d12 = 2, d3 = 3; ben grades one up.
    assert grades["Released labels"].tolist() == [16, 1, 2, 1]
    assert grades["Individual grades"].tolist() == [16, 17, 3, 4]
    assert grades["Grade"].tolist()[0].startswith("0 · ")
    assert not at.warning


def test_release_card_warns_when_a_labelled_text_changed(store, tmp_path):
    """d7's text is edited after release 1: the card says 1 labelled pair now points at changed text."""
    from db import imports
    from db.accounts.permissions import OPERATOR

    release(store)
    imports.import_fragments(
        store,
        PROJECT,
        write_jsonl(tmp_path / "edit.jsonl", [{"id": "d7", "text": "Fragment d7 about orders, rewritten."}]),
        actor=OPERATOR,
    )
    at = page_test(store, "lead_releases.py")
    assert not at.exception
    assert [shown(w.value)[:70] for w in at.warning] == [
        "1 labelled pair(s) of this release point at text that changed since it"
    ]
    pairs = next(d.value for d in at.dataframe if "Text changed" in d.value.columns)
    assert pairs.values.tolist() == [["q000", "d7", "fragment"]]


def metric_tables(at: AppTest) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The Evaluate page's metric × k table of means and its whole-ranking table (mean, CI, definition)."""
    tables = [t.value for t in at.table]
    by_k = next(t for t in tables if "@10" in t.columns and not str(t.iloc[0, 0]).startswith("["))
    whole = next(t for t in tables if "Mean" in t.columns)
    return by_k, whole


def reference_means(ranking: list[str]) -> dict[str, float]:
    """trec_eval's numbers for the fixture's released qrels (seed 000 grades) and a ranking, via pytrec_eval."""
    import pytrec_eval

    cut = ("P", "recall", "ndcg_cut")
    measures = {f"{m}_{k}" for m in cut for k in (1, 3, 5, 10, 20, 100)}
    measures |= {"recip_rank", "map", "Rprec", "bpref", "ndcg", "set_recall"}
    run = {"q000": {d: float(100 - i) for i, d in enumerate(ranking)}}
    return pytrec_eval.RelevanceEvaluator({"q000": SEED_GRADES}, measures).evaluate(run)["q000"]


def test_evaluate_page_reproduces_seed_000_and_trec_eval(store):
    """Seed 000: recall@3/5/10 = 0.25/0.50/0.75, P@3/5/10 = 0.333/0.40/0.30, MRR 0.50; every other cell of both
    tables (mrr, map, rprec, bpref, ndcg, recall included: never empty) equals pytrec_eval at 4 decimals."""
    release(store)
    at = page_test(store, "lead_evaluate.py")
    assert not at.exception
    by_k, whole = metric_tables(at)
    for metric, k, value in (
        ("recall", 3, "0.2500"),
        ("recall", 5, "0.5000"),
        ("recall", 10, "0.7500"),
        ("P", 3, "0.3333"),
        ("P", 5, "0.4000"),
        ("P", 10, "0.3000"),
    ):
        assert by_k.loc[metric, f"@{k}"] == value
    assert list(by_k.columns) == ["@1", "@3", "@5", "@10", "@20", "@100"]
    assert list(by_k.index) == ["P", "recall", "ndcg", "success", "judged"]
    ref = reference_means(SEED_RANKING)
    for k in (1, 3, 5, 10, 20, 100):
        for row, name in (("P", "P"), ("recall", "recall"), ("ndcg", "ndcg_cut")):
            assert by_k.loc[row, f"@{k}"] == f"{ref[f'{name}_{k}']:.4f}", (row, k)
    assert [by_k.loc["success", f"@{k}"] for k in (1, 3, 10)] == ["0.0000", "1.0000", "1.0000"]  # first hit: rank 2
    assert by_k.loc["judged", "@10"] == "1.0000"  # d1…d20 are all judged
    assert list(whole.index) == ["mrr", "map", "rprec", "bpref", "ndcg", "recall"]
    for row, name in (
        ("mrr", "recip_rank"),
        ("map", "map"),
        ("rprec", "Rprec"),
        ("bpref", "bpref"),
        ("ndcg", "ndcg"),
        ("recall", "set_recall"),
    ):
        assert whole.loc[row, "Mean"] == f"{ref[name]:.4f}", row
        assert whole.loc[row, "95% CI"] == f"[{ref[name]:.4f}, {ref[name]:.4f}]"  # one query: a point
    assert whole.loc["mrr", "Mean"] == "0.5000" and whole.loc["map", "Mean"] == "0.3750"  # hits at 2, 4, 6


def test_evaluate_page_compares_runs_on_the_release(store):
    """baseline against dense on nDCG@10: both means are pytrec_eval's, in a table with readable headers."""
    release(store)
    at = page_test(store, "lead_evaluate.py")
    next(m for m in at.multiselect if m.label == "Runs to compare").set_value(["dense"]).run()
    assert not at.exception
    table = next(d.value for d in at.dataframe if "Run A" in d.value.columns)
    assert list(table.columns[:6]) == ["Metric", "Run A", "Run B", "Mean A", "Mean B", "B − A"]
    row = table.iloc[0]
    assert (row["Metric"], row["Run A"], row["Run B"]) == ("ndcg@10", "baseline", "dense")
    assert row["Mean A"] == pytest.approx(reference_means(SEED_RANKING)["ndcg_cut_10"], abs=1e-12)
    assert row["Mean B"] == pytest.approx(reference_means(DENSE_RANKING)["ndcg_cut_10"], abs=1e-12)
    assert any("dense" in shown(m.value) and "baseline" in shown(m.value) for m in at.markdown)


def test_evaluate_page_words_the_findings_as_the_data_says(store):
    """Seed 000's run reaches recall 0.75 at most (d12 is never retrieved), but it is only 10 deep: below the
    0.8 floor the curve is not called healthy, nor is retrieval blamed for ranks the run never returned — both
    verdicts are undetermined; one category ("returns") gets no "ranges from … to …" sentence; all queries are
    answered, so there is no missing-queries finding."""
    release(store)
    at = page_test(store, "lead_evaluate.py")
    assert not at.exception
    curve = next(shown(i.value) for i in at.info if i.value.startswith("Recall curve"))
    assert "healthy" not in curve.replace("not healthy", "")
    assert curve.startswith("Recall curve: undetermined: the run is only 10 deep, so recall@100 = 0.750 is recall@10")
    assert any(shown(i.value).startswith("Undetermined: the run is only 10 deep") for i in at.info)
    assert not any("ranges from" in shown(c.value) for c in at.caption)
    assert not any("Missing queries" in shown(w.value) for w in at.warning)


def test_evaluate_page_shows_every_chosen_cutoff(store):
    """Adding k = 50 adds an @50 column between @20 and @100; dropping 1 removes @1."""
    release(store)
    at = page_test(store, "lead_evaluate.py")
    at.multiselect[0].set_value([3, 5, 10, 20, 50, 100]).run()
    assert not at.exception
    by_k, _ = metric_tables(at)
    assert list(by_k.columns) == ["@3", "@5", "@10", "@20", "@50", "@100"]
    assert by_k.loc["recall", "@50"] == "0.7500"  # d12 is not in the 10-deep ranking


def test_evaluate_page_scores_the_run_once_across_reruns(store, monkeypatch):
    """A rerun that changes nothing the scores depend on (here: a widget below them) evaluates nothing again;
    a new cutoff does, once."""
    from annotator.app.components import evaluate

    calls: list[tuple] = []
    real = evaluate.evaluate
    monkeypatch.setattr(evaluate, "evaluate", lambda *a, **kw: calls.append(kw["k"]) or real(*a, **kw))
    evaluate.scored_run.clear()
    release(store)
    at = page_test(store, "lead_evaluate.py")
    assert not at.exception and len(calls) == 1
    at.run()
    assert len(calls) == 1
    at.multiselect[0].set_value([3, 5]).run()
    assert not at.exception and calls[1:] == [(3, 5)]


def test_evaluate_page_relevance_level_matches_trec_eval_cut(store):
    """Relevant from grade 2: R = {d3, d7, d12}; hits at ranks 2 and 4 ⇒ recall@5 = 2/3, MRR 0.5, P@5 0.4."""
    release(store)
    at = page_test(store, "lead_evaluate.py")
    next(s for s in at.selectbox if s.label == "Relevant from grade").set_value(2).run()
    assert not at.exception
    by_k, whole = metric_tables(at)
    assert by_k.loc["recall", "@5"] == "0.6667" and by_k.loc["P", "@5"] == "0.4000"
    assert whole.loc["mrr", "Mean"] == "0.5000"


def adjudicate(engine, fragment: str, grade: int) -> None:
    """The lead's final grade for (q000, fragment)."""
    from db import adjudication
    from db.store import frames

    adjudication.adjudicate(
        engine, frames.pair_id(engine, PROJECT, "q000", fragment), grade, "lead's call", actor="lea"
    )


def test_one_query_gives_point_intervals_that_raise_no_alert(store):
    """d20 (1 → 0 by adjudication) between releases 1 and 2. By hand, R becomes {d3, d7, d12}: baseline's
    recall@10 3/4 → 2/3, P@10 .3 → .2, map .375 → .333 all fall — but with one query every CI is the point
    itself, which cannot tell a fall from noise: no alert, and the page says why."""
    release(store)
    adjudicate(store, "d20", 0)
    from db import releases

    releases.create_release(store, PROJECT, rule="median", actor="lea")
    at = page_test(store, "lead_evaluate.py")
    assert not at.exception
    assert not [w.value for w in at.warning if " fell" in w.value or "golden set changed" in w.value]
    assert "No headline metric of any stored run fell beyond its CI." in [c.value for c in at.caption]
    assert any(
        "interval of zero width raises none" in c.value and "count grades ≥ 1 as relevant" in c.value
        for c in at.caption
    )  # the fixture's 0–3 scale: relevance from grade 1


def test_evaluate_page_escapes_a_run_name(store, tmp_path):
    """A run named with Markdown image and emphasis syntax reaches st.markdown only escaped."""
    from annotator.app.text import literal
    from db import imports
    from db.accounts.permissions import OPERATOR

    release(store)
    name = "![x](http://127.0.0.1:9/x.png) **bold**"
    imports.import_run(store, PROJECT, write_run(tmp_path / "md.run", SEED_RANKING, "md"), name=name, actor=OPERATOR)
    at = page_test(store, "lead_evaluate.py")
    at.selectbox[0].set_value(name).run()
    assert not at.exception
    assert at.subheader[0].value == f"Metrics of {literal(name)} on release 1"
    assert "![x](" not in "".join(m.value for m in [*at.subheader, *at.warning, *at.info, *at.caption])


def test_evaluate_page_warns_on_judged_and_sends_the_holes(store):
    """fresh has 2 unpooled fragments in its top 10: judged@10 = 0.8 < 0.9, and the button makes 2 pairs."""
    release(store)
    at = page_test(store, "lead_evaluate.py")
    at.selectbox[0].set_value("fresh").run()
    assert not at.exception
    assert any("judged@10 = 0.800" in shown(w.value) for w in at.warning)
    send = next(b for b in at.button if b.label.startswith("Send the 2 unjudged pairs"))
    send.click().run()
    assert not at.exception
    assert any(s.value.startswith("2 new pair(s) created") for s in at.success)


def test_project_import_reports_rejected_lines_by_upload_name_and_writes_nothing(store):
    """A queries file with a bad second line: the error names queries.jsonl:2, and no query is added."""
    from db.store import frames

    at = page_test(store, "lead_project.py")
    assert not at.exception
    at.radio[0].set_value("queries").run()
    bad = b'{"id": "q9", "text": "fine"}\n{"id": "q10"}\n'
    at.file_uploader[0].set_value(("queries.jsonl", bad, "application/x-ndjson")).run()
    next(b for b in at.button if b.label == "Import").click().run()
    assert not at.exception
    assert at.error and shown(at.error[0].value).startswith("Nothing imported: queries.jsonl:2: ")
    assert list(frames.queries_frame(store, PROJECT)["query_id"]) == ["q000"]
    good = b'{"id": "q9", "text": "Can I change the delivery address?", "category": "shipping"}\n'
    at.file_uploader[0].set_value(("queries.jsonl", good, "application/x-ndjson")).run()
    next(b for b in at.button if b.label == "Import").click().run()
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert (metrics["Created"], metrics["Rejected lines"]) == ("1", "0")
    assert list(frames.queries_frame(store, PROJECT)["query_id"]) == ["q000", "q9"]


def test_project_page_shows_each_annotators_progress(store):
    """Both annotators finished their 20 assigned pairs: progress 1.0 each."""
    at = page_test(store, "lead_project.py")
    stats = at.dataframe[0].value.set_index("Annotator")
    assert stats.loc[["ana", "ben"], ["Assigned", "Done"]].values.tolist() == [[20, 20], [20, 20]]
    assert stats.loc[["ana", "ben"], "Progress"].tolist() == [1.0, 1.0]


def test_new_judgment_invalidates_the_cached_agreement(store):
    """ben moves d3 from 3 to 0: the next render shows the new α (krippendorff on the changed grades)."""
    from db import grading

    at = page_test(store, "lead_agreement.py")
    before = at.dataframe[0].value.set_index("coefficient").loc["Krippendorff α (ordinal)", "value"]
    from db.store import frames

    pair_id = frames.pair_id(store, PROJECT, "q000", "d3")
    grading.record_judgment(store, pair_id, "ben", 0)  # stamped v2, the version in force: read the pooled scope
    at.run()
    next(r for r in at.radio if r.label == "Scope").set_value("all guideline versions pooled").run()
    after = at.dataframe[0].value.set_index("coefficient").loc["Krippendorff α (ordinal)", "value"]
    ana = [SEED_GRADES[d] for d in SEED_GRADES]
    ben = [0 if d == "d3" else ben_grade(SEED_GRADES[d]) for d in SEED_GRADES]
    expected = krippendorff.alpha(
        reliability_data=np.array([ana, ben], dtype=float), level_of_measurement="ordinal", value_domain=[0, 1, 2, 3]
    )
    assert before == pytest.approx(expected_alpha(), abs=1e-9)
    assert after == pytest.approx(expected, abs=1e-9) and after != pytest.approx(before)


def test_evaluate_page_scores_an_uploaded_run(store):
    """An uploaded TREC run of seed 000's ranking gives the same seed numbers as the stored one."""
    release(store)
    at = page_test(store, "lead_evaluate.py")
    at.radio[0].set_value("Upload a run").run()
    body = "".join(f"q000 Q0 {d} {i + 1} {10 - i} upload\n" for i, d in enumerate(SEED_RANKING)).encode()
    at.file_uploader[0].set_value(("seed000.run", body, "text/plain")).run()
    assert not at.exception
    by_k, _ = metric_tables(at)
    assert [by_k.loc["recall", f"@{k}"] for k in (3, 5, 10)] == ["0.2500", "0.5000", "0.7500"]
    assert shown(at.subheader[0].value) == "Metrics of seed000.run on release 1"


def test_project_page_renames_the_grades_and_refuses_an_empty_name(store):
    from db.projects import get_project

    before = get_project(store, PROJECT).labels
    at = page_test(store, "lead_project.py")
    field = next(t for t in at.text_input if t.label == "Grade 2")
    assert field.value == before[2]
    field.set_value("  *Mostly* on topic ")
    at = next(b for b in at.button if b.label == "Save grade names").click().run()
    assert not at.exception and not at.error
    assert get_project(store, PROJECT).labels == {**before, 2: "*Mostly* on topic"}
    next(t for t in at.text_input if t.label == "Grade 0").set_value("   ")
    at = next(b for b in at.button if b.label == "Save grade names").click().run()
    assert at.error and "The label of grade 0 is empty" in at.error[0].value
    assert get_project(store, PROJECT).labels == {**before, 2: "*Mostly* on topic"}  # nothing half-saved


def test_the_release_card_and_the_evaluate_page_name_their_averaging(store):
    """The Releases page's card and the Evaluate page say how their means were taken: missing queries as zero
    (trec_eval -c) and trec_eval 10's ranking; a card cut before cards named it says so, with what it used."""
    from annotator.app.components.releases import averaging_line
    from eval_core.ranking.evaluation import averaging

    sentence = averaging("zero", 10)["sentence"]
    release(store)
    at = page_test(store, "lead_releases.py")
    assert not at.exception
    assert f"Run metrics on this card. {sentence}" in [t.value for t in at.text]
    at = page_test(store, "lead_evaluate.py")
    assert not at.exception
    assert sentence in [t.value for t in at.text]
    assert averaging_line({}).startswith("Run metrics on this card (not recorded: cut before cards named")
    assert averaging_line({}).endswith(sentence)
