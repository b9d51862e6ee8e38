"""The Agreement page through AppTest on 1–3 and 1–5 projects: κ and α first (as the reference libraries compute
them), the project's own cuts and grade labels, the heatmap only for three or more annotators, and every
user-supplied string (annotator names, query ids, the verdict's reasons) outside Markdown."""

from __future__ import annotations

import json
import re
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from streamlit.testing.v1 import AppTest

from annotator.app.components.agreement import APP_BOOTSTRAP
from annotator.cli import main
from tests.conftest import ROOT
from tests.helpers import write_jsonl

PAGE = ROOT / "annotator" / "app" / "screens" / "lead_agreement.py"
MARKDOWN_NAME = "![t](http://127.0.0.1:9/x.png)"
HTML_QUERY = "<b>x</b>"
LEAD = "lead"


def grades(annotators: list[str], scale: tuple[int, int], seed: int) -> list[dict]:
    """Seeded grades over the scale for 5 queries × 8 fragments; the planted annotator grades at random."""
    rng = np.random.default_rng(seed)
    low, high = scale
    rows = []
    for q, query in enumerate(["q1", "q2", "q3", "q4", HTML_QUERY]):
        for f in range(8):
            truth = int(rng.integers(low, high + 1))
            for annotator in annotators:
                grade = (
                    int(rng.integers(low, high + 1))
                    if annotator == MARKDOWN_NAME
                    else int(np.clip(truth + rng.choice([-1, 0, 1], p=[0.1, 0.8, 0.1]), low, high))
                )
                rows.append({"query_id": query, "fragment_id": f"f{q}_{f}", "annotator": annotator, "grade": grade})
    return rows


def matrix(rows: list[dict], annotators: list[str]) -> np.ndarray:
    """Annotators × units grades, the orientation krippendorff.alpha expects."""
    units = sorted({(r["query_id"], r["fragment_id"]) for r in rows})
    index = {u: i for i, u in enumerate(units)}
    out = np.full((len(annotators), len(units)), np.nan)
    for r in rows:
        out[annotators.index(r["annotator"]), index[(r["query_id"], r["fragment_id"])]] = r["grade"]
    return out


def page_for(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    annotators: list[str],
    scale: tuple[int, int],
    labels: dict[int, str],
    rows: list[dict] | None = None,
) -> tuple[AppTest, list[dict]]:
    """A project on `scale` whose judgments (`rows`, else seeded ones) come in through the store's import, and
    its Agreement page run."""
    from annotator.app.auth import TOKEN_KEY
    from db import imports, projects
    from db.accounts import users
    from db.accounts.permissions import OPERATOR
    from db.accounts.sessions import create_session
    from db.store.schema import init_db

    url = f"sqlite:///{tmp_path / 'agreement.db'}"
    engine = init_db(url)
    lead = users.create_user(engine, LEAD, "lead", password="lead-password-1", actor=OPERATOR)
    projects.create_project(engine, "scaled", scale=scale, threshold=0.99, labels=labels, actor=OPERATOR)
    rows = grades(annotators, scale, seed=scale[1] + len(annotators)) if rows is None else rows
    imports.import_queries(
        engine,
        "scaled",
        write_jsonl(
            tmp_path / "q.jsonl", [{"id": q, "text": f"query {q}"} for q in sorted({r["query_id"] for r in rows})]
        ),
        actor=OPERATOR,
    )
    imports.import_fragments(
        engine,
        "scaled",
        write_jsonl(
            tmp_path / "f.jsonl", [{"id": f, "text": f"fragment {f}"} for f in sorted({r["fragment_id"] for r in rows})]
        ),
        actor=OPERATOR,
    )
    imports.import_judgments(engine, "scaled", write_jsonl(tmp_path / "j.jsonl", rows), actor=OPERATOR)
    monkeypatch.setenv("QRELKIT_DB_URL", url)
    at = AppTest.from_file(str(PAGE), default_timeout=120)
    at.session_state[TOKEN_KEY] = create_session(engine, lead.id, client="apptest").token
    at.session_state["project"] = "scaled"
    return at.run(), rows


def expected_kappa(mat: np.ndarray, scale: tuple[int, int], weights: str | None) -> float:
    """Mean over annotator pairs of scikit-learn's Cohen's κ with the whole scale as labels."""
    labels = list(range(scale[0], scale[1] + 1))
    values = []
    for i in range(len(mat)):
        for j in range(i + 1, len(mat)):
            both = ~np.isnan(mat[i]) & ~np.isnan(mat[j])
            values.append(cohen_kappa_score(mat[i, both], mat[j, both], labels=labels, weights=weights))
    return float(np.mean(values))


CASES = [
    pytest.param(["ana", MARKDOWN_NAME], (1, 3), {1: "Partly", 2: "Mostly", 3: "Fully"}, id="1-3, two annotators"),
    pytest.param(
        ["ana", "bob", MARKDOWN_NAME],
        (1, 5),
        {1: "No", 2: "Barely", 3: "Partly", 4: "Mostly", 5: "Fully"},
        id="1-5, three annotators",
    ),
]


@pytest.mark.parametrize(("annotators", "scale", "labels"), CASES)
def test_kappa_and_alpha_come_first_on_any_scale(tmp_path, monkeypatch, annotators, scale, labels) -> None:
    """κ weighted, κ unweighted and ordinal α are the first three numbers, equal to scikit-learn and krippendorff
    on the project's scale; cuts and grade labels follow the scale; the heatmap appears only for 3+ annotators."""
    at, rows = page_for(tmp_path, monkeypatch, annotators, scale, labels)
    assert not at.exception
    mat = matrix(rows, annotators)
    alpha = krippendorff.alpha(mat, level_of_measurement="ordinal", value_domain=list(range(scale[0], scale[1] + 1)))
    metrics = [(m.label, m.value) for m in at.metric]
    assert metrics[:3] == [
        ("Cohen's κ, quadratic-weighted", f"{expected_kappa(mat, scale, 'quadratic'):.2f}"),
        ("Cohen's κ, unweighted", f"{expected_kappa(mat, scale, None):.2f}"),
        ("Krippendorff's α", f"{alpha:.2f}"),
    ]
    assert all(c.value.startswith("95% CI ") for c in at.caption[:3])
    cuts = at.dataframe[1].value.set_index("coefficient")
    assert list(cuts.index) == [f"α at boundary {g - 1}|{g}" for g in range(scale[0] + 1, scale[1] + 1)]
    for g in range(scale[0] + 1, scale[1] + 1):
        binary = np.where(np.isnan(mat), np.nan, (mat >= g).astype(float))
        expected = krippendorff.alpha(binary, level_of_measurement="nominal", value_domain=[0, 1])
        assert cuts.loc[f"α at boundary {g - 1}|{g}", "value"] == pytest.approx(expected, abs=1e-9)
    assert "Grades: " + " · ".join(f"{g} = {name}" for g, name in labels.items()) in [t.value for t in at.text]
    assert [r.label for r in at.radio] == (["Weights"] if len(annotators) >= 3 else [])


@pytest.mark.parametrize(("annotators", "scale", "labels"), CASES[1:])
def test_user_strings_never_reach_markdown(tmp_path, monkeypatch, annotators, scale, labels) -> None:
    """The flag's reasons (which name the planted annotator and the HTML query) are plain text; no Markdown or
    alert element carries an annotator name or query id."""
    at, _ = page_for(tmp_path, monkeypatch, annotators, scale, labels)
    assert not at.exception
    assert at.error and at.error[-1].value.startswith("All judgments: ordinal α ")
    texts = "\n".join(t.value for t in at.text)
    assert f"without {MARKDOWN_NAME} α would be" in texts
    assert HTML_QUERY in texts
    rendered = [
        e.value for kind in ("markdown", "caption", "error", "warning", "info", "success") for e in at.get(kind)
    ] + [m.label for m in at.metric]
    for planted in (MARKDOWN_NAME, HTML_QUERY, "](http"):
        assert not any(planted in value for value in rendered), planted


def test_headline_of_a_single_annotator_says_why_instead_of_a_number() -> None:
    """One annotator: no κ pair, α undefined — the tiles show "—" and the reason, never NaN or 0."""
    import pandas as pd

    from annotator.app.components import agreement
    from eval_core.agreement.report import agreement_report

    frame = pd.DataFrame(
        {
            "query_id": ["q1", "q2"],
            "fragment_id": ["a", "b"],
            "annotator": ["ana", "ana"],
            "grade": pd.array([0, 3], dtype="Int64"),
        }
    )
    report = agreement_report(frame, bootstrap=50)
    tiles = agreement.headline(report)
    assert [(t.value, t.caption.split(" · ")[0]) for t in tiles] == [("—", "undefined: one annotator")] * 3
    assert agreement.kappa_table(report).empty


def test_headline_without_a_ci_gives_the_reports_reason() -> None:
    """Four queries, 12 pairs (enough for a verdict): the report draws no bootstrap (a query-clustered interval
    needs at least five, so `qrelkit agreement` prints "CIs: none (… 4 queries, too few to resample …)"); the
    tiles say that same reason — not a rule the four queries already meet ("needs ≥ 2 queries")."""
    import pandas as pd

    from annotator.app.components import agreement
    from eval_core.agreement.report import MIN_CI_QUERIES, agreement_report

    grades = {"ana": [0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3], "ben": [0, 1, 2, 2, 0, 1, 3, 3, 0, 0, 2, 3]}
    frame = pd.DataFrame(
        [
            {"query_id": f"q{i // 3}", "fragment_id": f"d{i}", "annotator": who, "grade": g}
            for who, row in grades.items()
            for i, g in enumerate(row)
        ]
    )
    frame["grade"] = frame["grade"].astype("Int64")
    report = agreement_report(frame, bootstrap=200)
    assert MIN_CI_QUERIES == 5 and report.alpha["ordinal"].value is not None and report.alpha["ordinal"].ci is None
    captions = [t.caption.split(" · ")[0] for t in agreement.headline(report)]
    assert captions == ["no CI: 4 queries, too few to resample (a query-clustered interval needs at least 5)"] * 3


def _pairs(a: list[int], b: list[int]) -> list[dict]:
    """ana's and ben's grades of the same pairs, one query per pair."""
    return [
        {"query_id": f"q{i}", "fragment_id": f"f{i}", "annotator": who, "grade": g}
        for who, row in (("ana", a), ("ben", b))
        for i, g in enumerate(row)
    ]


def test_headline_over_three_pairs_says_too_few_to_judge(tmp_path, monkeypatch) -> None:
    """Three overlapping pairs, graded 0/1/2 by one and 3/3/0 by the other: α is far under the threshold, but three
    pairs judge no guideline. The tiles show "too few to judge" with n = 3 (no big number), no flag is raised and
    no coefficient is called "below threshold"."""
    from eval_core.thresholds import MIN_VERDICT_PAIRS

    assert MIN_VERDICT_PAIRS == 10
    labels = {0: "No", 1: "Some", 2: "Most", 3: "All"}
    at, rows = page_for(tmp_path, monkeypatch, ["ana", "ben"], (0, 3), labels, _pairs([0, 1, 2], [3, 3, 0]))
    assert not at.exception
    mat = matrix(rows, ["ana", "ben"])
    alpha = krippendorff.alpha(mat, level_of_measurement="ordinal", value_domain=[0, 1, 2, 3])
    assert alpha < 0  # what a number would have claimed
    metrics = [(m.label, m.value) for m in at.metric]
    assert metrics[:3] == [
        ("Cohen's κ, quadratic-weighted", "too few to judge"),
        ("Cohen's κ, unweighted", "too few to judge"),
        ("Krippendorff's α", "too few to judge"),
    ]
    captions = [c.value for c in at.caption[:3]]
    prefix = "n = 3 pairs with two grades, fewer than the 10 a verdict needs (the value on them"
    assert all(c.startswith(prefix) for c in captions), captions
    assert not at.error  # no ambiguity flag, for the project or its guideline version
    statuses = set(at.dataframe[0].value["status"]) | set(at.dataframe[1].value["status"])
    assert statuses == {"no verdict: n = 3 < 10 pairs"}


def test_headline_at_ten_pairs_gives_numbers_and_flags() -> None:
    """The same disagreement on ten pairs is a verdict: the tiles give κ and α as numbers (scikit-learn's and
    krippendorff's) and the project is flagged."""
    import pandas as pd

    from annotator.app.components import agreement
    from eval_core.agreement.report import agreement_report

    a, b = [0, 1, 2, 3, 0, 1, 2, 3, 0, 1], [3, 3, 0, 0, 2, 3, 0, 1, 3, 3]
    frame = pd.DataFrame(_pairs(a, b))
    frame["grade"] = frame["grade"].astype("Int64")
    report = agreement_report(frame, bootstrap=0)
    tiles = agreement.headline(report)
    quadratic = cohen_kappa_score(a, b, labels=[0, 1, 2, 3], weights="quadratic")
    alpha = krippendorff.alpha(np.array([a, b], dtype=float), level_of_measurement="ordinal", value_domain=[0, 1, 2, 3])
    assert [t.value for t in tiles] == [f"{quadratic:.2f}", f"{cohen_kappa_score(a, b):.2f}", f"{alpha:.2f}"]
    three = agreement_report(frame[frame["query_id"].isin(["q0", "q1", "q2"])], bootstrap=0)
    assert [t.value for t in agreement.headline(three)] == ["too few to judge"] * 3
    measured = agreement.ProjectAgreement(report, [], {})
    [flag] = agreement.agreement_flags(measured, 0.6)
    assert flag.banner.startswith(f"All judgments: ordinal α {alpha:.2f} < 0.6")
    assert agreement.agreement_flags(agreement.ProjectAgreement(three, [], {}), 0.6) == []


def test_headline_cis_are_the_clis_with_the_pages_replicates(tmp_path, monkeypatch, capsys) -> None:
    """The page says how many bootstrap replicates its CIs take, and `qrelkit agreement --bootstrap N` on the
    same judgments prints the same intervals (the CLI's default is 1,000, so without it the two differ)."""
    annotators, scale, labels = CASES[0].values
    at, rows = page_for(tmp_path, monkeypatch, annotators, scale, labels)
    assert not at.exception
    scope = next(c.value for c in at.caption if c.value.startswith("Scope: "))
    assert f"CIs: {APP_BOOTSTRAP} replicates resampling queries" in scope
    path = write_jsonl(tmp_path / "file.jsonl", rows)
    assert (
        main(
            [
                "agreement",
                str(path),
                "--scale",
                f"{scale[0]}-{scale[1]}",
                "--bootstrap",
                str(APP_BOOTSTRAP),
                "--format",
                "json",
            ]
        )
        == 0
    )
    printed = json.loads(capsys.readouterr().out)
    shown = [tuple(map(float, re.findall(r"95% CI (-?[\d.]+) – (-?[\d.]+)", c.value)[0])) for c in at.caption[:3]]
    pair = printed["kappa"][0]
    expected = [pair["quadratic"]["ci"], pair["unweighted"]["ci"], printed["alpha"]["ordinal"]["ci"]]
    assert shown == [(round(lo, 2), round(hi, 2)) for lo, hi in expected]
