"""agreement_report on judgments: reference libraries, invariances, bootstrap, degenerate sets, verdicts."""

from __future__ import annotations

import json

import krippendorff
import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from eval_core.agreement.bootstrap import cluster_weights
from eval_core.agreement.coefficients import gwet_ac
from eval_core.agreement.report import agreement_report, assess, weakest_boundary
from eval_core.agreement.types import (
    AgreementReport,
    Boundary,
    Coefficient,
    Diagnostics,
    DisputedQuery,
)

DOMAIN = [0, 1, 2, 3]


def make_judgments(
    seed: int,
    queries: int = 12,
    per_query: int = 8,
    annotators: int = 4,
    absent: float = 0.2,
    cant: float = 0.05,
    prevalence=(0.4, 0.25, 0.2, 0.15),
    noise: float = 1.0,
) -> pd.DataFrame:
    """Seeded judgments with absent records and can't-judge grades (None); `noise` = chance of a ±1 slip draw."""
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(queries):
        for f in range(per_query):
            truth = rng.choice(4, p=prevalence)
            for a in range(annotators):
                if rng.random() < absent:
                    continue
                slip = rng.integers(-1, 2) if rng.random() < noise else 0
                grade = None if rng.random() < cant else int(np.clip(truth + slip, 0, 3))
                rows.append((f"q{q}", f"f{q}_{f}", f"ann{a}", grade, f"note {q}/{f}/{a}" if grade == 3 else None))
    frame = pd.DataFrame(rows, columns=["query_id", "fragment_id", "annotator", "grade", "note"])
    frame["grade"] = frame["grade"].astype("Int64")
    return frame


def matrix(frame: pd.DataFrame) -> tuple[np.ndarray, list[str]]:
    """Annotators × units matrix (NaN = absent or can't judge), built independently with pandas pivot."""
    pivot = frame.pivot_table(
        index="annotator", columns=["query_id", "fragment_id"], values="grade", aggfunc="first", dropna=False
    )
    return pivot.to_numpy(dtype=float, na_value=np.nan), list(pivot.index)


@pytest.fixture(scope="module")
def judgments() -> pd.DataFrame:
    return make_judgments(3)


@pytest.fixture(scope="module")
def report(judgments: pd.DataFrame) -> AgreementReport:
    return agreement_report(judgments, bootstrap=200, seed=5, by="query")


def test_json_shape_is_the_documented_one(report: AgreementReport) -> None:
    text = json.dumps(report.to_dict(), allow_nan=False)
    data = json.loads(text)
    for key in (
        "n_units",
        "n_annotators",
        "raw_agreement",
        "alpha",
        "fleiss_kappa",
        "ac1",
        "ac2",
        "kappa",
        "cuts",
        "assessment",
    ):
        assert key in data
    assert set(data["alpha"]) == {"ordinal", "nominal", "interval"}
    assert set(data["ac2"]) == {"linear", "quadratic"}
    assert set(data["cuts"]) == {"1", "2", "3"}
    for c in [
        *data["alpha"].values(),
        data["fleiss_kappa"],
        data["ac1"],
        *data["ac2"].values(),
        *data["cuts"].values(),
    ]:
        assert set(c) == {"value", "ci", "status"} and c["status"] == "ok"
        assert c["ci"][0] <= c["value"] <= c["ci"][1]
    for k in data["kappa"]:
        assert {"a", "b", "n", "unweighted", "linear", "quadratic"} <= set(k)
    assert set(data["assessment"]) >= {"threshold", "verdict", "reasons"}


def test_alpha_matches_krippendorff_package(judgments: pd.DataFrame, report: AgreementReport) -> None:
    mat, _ = matrix(judgments)
    for level in ("nominal", "ordinal", "interval"):
        expected = krippendorff.alpha(mat, level_of_measurement=level, value_domain=DOMAIN)
        assert report.alpha[level].value == pytest.approx(expected, abs=1e-9)


def test_pairwise_kappa_matches_sklearn(judgments: pd.DataFrame, report: AgreementReport) -> None:
    mat, names = matrix(judgments)
    assert len(report.kappa) == len(names) * (len(names) - 1) // 2
    for entry in report.kappa:
        x, y = mat[names.index(entry.a)], mat[names.index(entry.b)]
        both = ~np.isnan(x) & ~np.isnan(y)
        assert entry.n == both.sum()
        confusion = pd.crosstab(pd.Categorical(x[both], DOMAIN), pd.Categorical(y[both], DOMAIN), dropna=False)
        assert entry.confusion == confusion.to_numpy().tolist()
        for kind in ("unweighted", "linear", "quadratic"):
            expected = cohen_kappa_score(
                x[both], y[both], labels=DOMAIN, weights=None if kind == "unweighted" else kind
            )
            assert entry.kappa[kind].value == pytest.approx(expected, abs=1e-9)


def test_cuts_match_binarised_nominal_alpha(judgments: pd.DataFrame, report: AgreementReport) -> None:
    mat, _ = matrix(judgments)
    for cut in (1, 2, 3):
        binary = np.where(np.isnan(mat), np.nan, (mat >= cut).astype(float))
        expected = krippendorff.alpha(binary, level_of_measurement="nominal", value_domain=[0, 1])
        assert report.cuts[str(cut)].value == pytest.approx(expected, abs=1e-9)


def test_gwet_and_raw_agreement_match_array_functions(judgments: pd.DataFrame, report: AgreementReport) -> None:
    """The report's per-query sums give the same AC1/AC2 as the unit-level functions (checked vs irrCAC)."""
    mat, _ = matrix(judgments)
    assert report.ac1.value == pytest.approx(gwet_ac(mat, "unweighted").value, abs=1e-12)
    assert report.ac2["quadratic"].value == pytest.approx(gwet_ac(mat, "quadratic").value, abs=1e-12)


def test_by_query_and_leave_one_out_match_package(judgments: pd.DataFrame, report: AgreementReport) -> None:
    groups = {g.group: g for g in report.diagnostics.by}
    for query in ("q0", "q5"):
        mat, _ = matrix(judgments[judgments["query_id"] == query])
        expected = krippendorff.alpha(mat, level_of_measurement="ordinal", value_domain=DOMAIN)
        assert groups[query].alpha.value == pytest.approx(expected, abs=1e-9)
    full = report.alpha["ordinal"].value
    for row in report.diagnostics.leave_one_out:
        mat, _ = matrix(judgments[judgments["annotator"] != row.annotator])
        expected = krippendorff.alpha(mat, level_of_measurement="ordinal", value_domain=DOMAIN)
        assert row.alpha.value == pytest.approx(expected, abs=1e-9)
        assert row.delta == pytest.approx(expected - full, abs=1e-9)


def test_grade_bias_by_hand() -> None:
    """a grades 3,3; b grades 1,2; c grades 2 on the first pair: a's bias = mean(3-1.5, 3-2) = 1.25."""
    frame = pd.DataFrame(
        {
            "query_id": ["q"] * 5,
            "fragment_id": ["x", "x", "x", "y", "y"],
            "annotator": ["a", "b", "c", "a", "b"],
            "grade": pd.array([3, 1, 2, 3, 2], dtype="Int64"),
        }
    )
    bias = {r.annotator: r for r in agreement_report(frame, bootstrap=0).diagnostics.bias}
    assert bias["a"].bias == pytest.approx(1.25)
    assert bias["a"].mean_grade == pytest.approx(3.0)
    assert bias["b"].bias == pytest.approx(((1 - 2.5) + (2 - 3)) / 2)
    assert bias["c"].bias == pytest.approx(2 - 2.0)


def test_disputed_pairs_carry_every_grade_and_note() -> None:
    frame = pd.DataFrame(
        {
            "query_id": ["q1"] * 6,
            "fragment_id": ["x", "x", "x", "y", "y", "z"],
            "annotator": ["a", "b", "c", "a", "b", "a"],
            "grade": pd.array([0, 3, None, 1, 2, 3], dtype="Int64"),
            "note": ["no answer", "exact answer", "broken page", None, None, None],
        }
    )
    disputed = agreement_report(frame, bootstrap=0).diagnostics.disputed_pairs
    assert [(d.fragment_id, d.spread) for d in disputed] == [("x", 3), ("y", 1)]
    assert disputed[0].grades == {"a": 0, "b": 3, "c": None}
    assert disputed[0].notes == {"a": "no answer", "b": "exact answer", "c": "broken page"}


def test_invariant_to_shuffling_and_single_graded_units(judgments: pd.DataFrame, report: AgreementReport) -> None:
    shuffled = judgments.sample(frac=1.0, random_state=11).reset_index(drop=True)
    renamed = shuffled.assign(
        annotator=shuffled["annotator"].map({"ann0": "zed", "ann1": "amy", "ann2": "kim", "ann3": "bob"})
    )
    extra = pd.DataFrame(
        {
            "query_id": ["q0", "q3", "q99"],
            "fragment_id": ["solo1", "solo2", "solo3"],
            "annotator": ["ann1", "ann2", "ann0"],
            "grade": pd.array([3, 0, 1], dtype="Int64"),
        }
    )
    padded = pd.concat([renamed, extra.assign(annotator=["amy", "kim", "zed"])], ignore_index=True)
    for frame in (shuffled, renamed, padded):
        other = agreement_report(frame, bootstrap=0)
        for level in ("nominal", "ordinal", "interval"):
            assert other.alpha[level].value == pytest.approx(report.alpha[level].value, abs=1e-12)
        assert other.raw_agreement.value == pytest.approx(report.raw_agreement.value, abs=1e-12)
        ours = sorted(k.kappa["quadratic"].value for k in other.kappa)
        assert ours == pytest.approx(sorted(k.kappa["quadratic"].value for k in report.kappa), abs=1e-12)


def test_bootstrap_is_seeded_and_reproducible(judgments: pd.DataFrame) -> None:
    a = agreement_report(judgments, bootstrap=100, seed=1)
    b = agreement_report(judgments, bootstrap=100, seed=1)
    c = agreement_report(judgments, bootstrap=100, seed=2)
    assert a.alpha["ordinal"].ci == b.alpha["ordinal"].ci
    assert a.alpha["ordinal"].ci != c.alpha["ordinal"].ci


def test_reweighting_equals_resampling_queries(judgments: pd.DataFrame) -> None:
    """Each replicate's α from W @ per-query sums equals krippendorff.alpha on the explicitly resampled data."""
    from eval_core.agreement.bootstrap import bootstrap_sums
    from eval_core.agreement.coefficients import alpha_from_coincidence
    from eval_core.agreement.data import encode, sum_by_group, unit_counts, unit_stats
    from eval_core.io.judgments import check_judgments

    frame = check_judgments(judgments)
    enc = encode(frame, (0, 3))
    rows, _ = unit_stats(unit_counts(enc))
    per_query = sum_by_group(rows, enc.unit_query, len(enc.queries))
    (sums,) = bootstrap_sums([per_query[:, :16]], 5, seed=9)
    weights = next(cluster_weights(len(enc.queries), 5, seed=9))
    for rep in range(5):
        copies = []
        for q, times in enumerate(weights[rep].astype(int)):
            part = frame[frame["query_id"] == enc.queries[q]]
            copies += [part.assign(query_id=f"{enc.queries[q]}#{t}") for t in range(times)]
        mat, _ = matrix(pd.concat(copies, ignore_index=True))
        expected = krippendorff.alpha(mat, level_of_measurement="ordinal", value_domain=DOMAIN)
        assert float(alpha_from_coincidence(sums[rep].reshape(4, 4), "ordinal")) == pytest.approx(expected, abs=1e-9)


def test_degenerate_sets_are_undefined_never_nan() -> None:
    one = pd.DataFrame(
        {
            "query_id": ["q", "q"],
            "fragment_id": ["a", "b"],
            "annotator": ["x", "x"],
            "grade": pd.array([0, 3], dtype="Int64"),
        }
    )
    disjoint = pd.DataFrame(
        {
            "query_id": ["q", "q"],
            "fragment_id": ["a", "b"],
            "annotator": ["x", "y"],
            "grade": pd.array([0, 3], dtype="Int64"),
        }
    )
    flat = pd.DataFrame(
        {
            "query_id": ["q", "q", "r", "r"],
            "fragment_id": ["a", "a", "b", "b"],
            "annotator": ["x", "y", "x", "y"],
            "grade": pd.array([2, 2, 2, 2], dtype="Int64"),
        }
    )
    cant = disjoint.assign(fragment_id=["a", "a"], grade=pd.array([None, None], dtype="Int64"))
    cases = [
        (one, "undefined: one annotator"),
        (disjoint, "undefined: no overlapping pairs"),
        (flat, "undefined: no variation"),
        (cant, "undefined: one annotator"),
    ]
    for frame, status in cases:
        report = agreement_report(frame, bootstrap=50)
        data = json.loads(json.dumps(report.to_dict(), allow_nan=False))
        assert data["alpha"]["ordinal"] == {"value": None, "ci": None, "status": status}
        assert report.alpha["ordinal"] == Coefficient(None, None, status)
        assert report.fleiss_kappa.value is None
        assert report.assessment.verdict == "insufficient_data"
    flat_report = agreement_report(flat, bootstrap=50)
    assert flat_report.raw_agreement.value == 1.0
    assert flat_report.kappa[0].kappa["unweighted"].status == "undefined: no variation"
    assert all(c.status == "undefined: no variation" for c in flat_report.cuts.values())
    assert flat_report.weakest is None
    assert (
        agreement_report(disjoint, bootstrap=0).kappa[0].kappa["unweighted"].status == "undefined: no overlapping pairs"
    )


def test_assess_verdicts() -> None:
    good = make_judgments(1, queries=30, annotators=3, prevalence=(0.25, 0.25, 0.25, 0.25))
    assert agreement_report(good, bootstrap=200, threshold=0.3).assessment.verdict == "ok"
    verdict = agreement_report(good, bootstrap=200, threshold=0.99).assessment
    assert verdict.verdict == "ambiguous"
    assert any("queries" in r and "most disputed" in r for r in verdict.reasons)
    assert any(r.startswith("boundary ") for r in verdict.reasons)
    value = agreement_report(good, bootstrap=200).alpha["ordinal"]
    middle = (value.ci[0] + value.ci[1]) / 2
    assert agreement_report(good, bootstrap=200, threshold=middle).assessment.verdict == "inconclusive"
    assert agreement_report(good, bootstrap=0).assessment.verdict == "insufficient_data"
    few = agreement_report(good[good["query_id"].isin(sorted(good["query_id"].unique())[:4])], bootstrap=200)
    assert few.assessment.verdict == "insufficient_data"  # 4 queries: no interval, and the reason says why
    assert few.assessment.reasons[0].endswith(
        "has no confidence interval (needs ≥ 5 queries and a bootstrap of ≥ 1 replicate)"
    )


def test_assess_bands_and_reason_format() -> None:
    diagnostics = Diagnostics(
        leave_one_out=[],
        bias=[],
        disputed_pairs=[],
        disputed_queries=[DisputedQuery("q7", 5, 1.2, 2), DisputedQuery("q12", 5, 1.0, 1)],
    )
    cuts = {"1": Coefficient(0.7), "2": Coefficient(0.31), "3": Coefficient(0.6)}

    def assessed(alpha: Coefficient):
        return assess(
            alpha,
            "ordinal",
            0.6,
            weakest=weakest_boundary(cuts),
            diagnostics=diagnostics,
            raw=0.6,
            prevalence={"0": 0.5},
            ac2=0.7,
        )

    out = assessed(Coefficient(0.52, (0.44, 0.58)))
    assert out.verdict == "ambiguous" and out.band == "unreliable"
    assert out.reasons[0] == "ordinal α 0.52 [0.44, 0.58] < 0.6"
    assert "boundary 1|2 α 0.31 (weakest cut: grade ≥ 2 vs below)" in out.reasons
    assert "queries q7, q12 most disputed" in out.reasons
    assert assessed(Coefficient(0.85, (0.81, 0.9))).band == "reliable"
    assert assessed(Coefficient(0.7, (0.67, 0.73))).band == "tentative"


def test_weakest_boundary_is_the_lowest_defined_cut_and_shared_with_the_app(
    judgments: pd.DataFrame, report: AgreementReport
) -> None:
    """The weakest boundary is computed once in the report: the cut whose binarised α (krippendorff) is lowest."""
    mat, _ = matrix(judgments)
    expected = {}
    for cut in (1, 2, 3):
        binary = np.where(np.isnan(mat), np.nan, (mat >= cut).astype(float))
        expected[str(cut)] = krippendorff.alpha(binary, level_of_measurement="nominal", value_domain=[0, 1])
    cut = min(expected, key=expected.get)
    assert report.weakest.cut == cut and report.weakest.label == f"{int(cut) - 1}|{cut}"
    assert report.weakest.alpha == pytest.approx(expected[cut], abs=1e-9)
    assert weakest_boundary(
        {"1": Coefficient(None, None, "undefined: no variation"), "2": Coefficient(0.4)}
    ) == Boundary("2", 0.4)


def test_light_kappa_is_the_mean_of_sklearn_pairwise_kappas(judgments: pd.DataFrame, report: AgreementReport) -> None:
    """Mean pairwise Cohen's κ (Light 1971) from scikit-learn, and its CI brackets it."""
    mat, names = matrix(judgments)
    for kind in ("unweighted", "linear", "quadratic"):
        values = []
        for i in range(len(names)):
            for j in range(i + 1, len(names)):
                both = ~np.isnan(mat[i]) & ~np.isnan(mat[j])
                values.append(
                    cohen_kappa_score(
                        mat[i, both], mat[j, both], labels=DOMAIN, weights=None if kind == "unweighted" else kind
                    )
                )
        light = report.light_kappa[kind]
        assert light.value == pytest.approx(np.mean(values), abs=1e-12)
        assert light.ci[0] <= light.value <= light.ci[1]


def test_coefficient_text() -> None:
    assert Coefficient(0.5204, (0.4401, 0.6)).text() == "0.520 [0.440, 0.600]"
    assert Coefficient(0.5204).text(2) == "0.52"
    assert Coefficient(None, None, "undefined: one annotator").text() == "undefined: one annotator"
    assert Coefficient(0.5, (0.25, 0.75)).to_dict() == {"value": 0.5, "ci": [0.25, 0.75], "status": "ok"}


def test_kappa_paradox_is_explained() -> None:
    """88 pairs 0/0, 5 0/1, 5 1/0, 2 1/1: raw agreement 0.90 but κ = (0.90 - 0.8698) / 0.1302 ≈ 0.232
    (Feinstein & Cicchetti's high-agreement, low-κ paradox); AC1 stays high. The verdict must say why."""
    cells = [(0, 0)] * 88 + [(0, 1)] * 5 + [(1, 0)] * 5 + [(1, 1)] * 2
    order = np.random.default_rng(0).permutation(len(cells))
    rows = []
    for i, idx in enumerate(order):
        for annotator, grade in zip(("a", "b"), cells[idx], strict=True):
            rows.append((f"q{i % 10}", f"f{i}", annotator, grade))
    frame = pd.DataFrame(rows, columns=["query_id", "fragment_id", "annotator", "grade"])
    report = agreement_report(frame, bootstrap=300, seed=3)
    assert report.raw_agreement.value == pytest.approx(0.90)
    assert report.kappa[0].kappa["unweighted"].value == pytest.approx((0.90 - 0.8698) / (1 - 0.8698), abs=1e-9)
    assert report.prevalence["0"] == pytest.approx(0.93)
    assert report.ac1.value > 0.85 > 0.3 > report.alpha["ordinal"].value
    assert report.assessment.verdict in {"ambiguous", "inconclusive"}
    assert any("kappa paradox" in r and "grade 0 is 93%" in r for r in report.assessment.reasons)


def test_guideline_versions_flagged() -> None:
    good = make_judgments(6, queries=15, annotators=3, noise=0.3).assign(guideline="v1")
    rng = np.random.default_rng(0)
    noisy = make_judgments(7, queries=10, annotators=3).assign(guideline="v2")
    noisy["grade"] = pd.array(np.where(noisy["grade"].isna(), None, rng.integers(0, 4, len(noisy))), dtype="Int64")
    noisy["query_id"] = "n" + noisy["query_id"]
    noisy["fragment_id"] = "n" + noisy["fragment_id"]
    both = pd.concat([good, noisy], ignore_index=True)
    report = agreement_report(both, bootstrap=200)
    versions = {g.group: g.alpha for g in report.diagnostics.guidelines}
    assert versions["v2"].ci[1] < 0.6 < versions["v1"].ci[0]
    flags = {g.guideline: g.verdict for g in report.assessment.guidelines}
    assert flags == {"v1": "ok", "v2": "ambiguous"}
    assert any(r.startswith("guideline v2 is ambiguous: ordinal α") for r in report.assessment.reasons)
    for version in ("v1", "v2"):
        mat, _ = matrix(both[both["guideline"] == version])
        expected = krippendorff.alpha(mat, level_of_measurement="ordinal", value_domain=DOMAIN)
        assert versions[version].value == pytest.approx(expected, abs=1e-9)


def test_bad_arguments() -> None:
    frame = make_judgments(0, queries=2)
    with pytest.raises(ValueError, match="level"):
        agreement_report(frame, level="ratio")
    with pytest.raises(ValueError, match="category"):
        agreement_report(frame, by="category")
    with pytest.raises(ValueError, match="outside the scale"):
        agreement_report(frame.assign(grade=pd.array([5] * len(frame), dtype="Int64")))
    twice = pd.concat([frame, frame.iloc[[3]]], ignore_index=True)
    row = frame.iloc[3]
    with pytest.raises(
        ValueError, match=f"duplicate judgment of \\({row['query_id']}, {row['fragment_id']}\\) by {row['annotator']}"
    ):
        agreement_report(twice)


def test_single_guideline_group_equals_overall(judgments: pd.DataFrame) -> None:
    """One guideline version: its α and bootstrap CI (sparse per-group path) equal the overall ones (dense)."""
    report = agreement_report(judgments.assign(guideline="v1"), bootstrap=100, seed=4)
    (row,) = report.diagnostics.guidelines
    overall = report.alpha["ordinal"]
    assert row.alpha.value == pytest.approx(overall.value, abs=1e-12)
    assert row.alpha.ci == pytest.approx(overall.ci, abs=1e-9)


def test_sparse_statistics_path_equals_dense(judgments: pd.DataFrame, monkeypatch: pytest.MonkeyPatch) -> None:
    """Large projects keep per-query κ and group blocks sparse; the numbers must not change."""
    import eval_core.agreement.data as data
    import eval_core.agreement.groups as groups

    frame = judgments.assign(guideline=np.where(np.arange(len(judgments)) % 3, "v1", "v2"))
    dense = agreement_report(frame, bootstrap=60, seed=8)
    monkeypatch.setattr(data, "DENSE_LIMIT", 0)
    monkeypatch.setattr(groups, "DENSE_LIMIT", 0)
    sparse_report = agreement_report(frame, bootstrap=60, seed=8)
    for a, b in zip(dense.kappa, sparse_report.kappa, strict=True):
        assert a.kappa["quadratic"].ci == pytest.approx(b.kappa["quadratic"].ci, abs=1e-12)
    for a, b in zip(dense.diagnostics.guidelines, sparse_report.diagnostics.guidelines, strict=True):
        assert a.alpha.ci == pytest.approx(b.alpha.ci, abs=1e-12)


def test_percentile_ci_gives_up_when_most_replicates_are_undefined() -> None:
    from eval_core.agreement.bootstrap import percentile_ci

    assert percentile_ci(np.array([0.1, 0.2, np.nan, np.nan, np.nan])) is None
    lo, hi = percentile_ci(np.array([0.0, 1.0, 2.0, 3.0, np.nan]), confidence=0.5)
    assert (lo, hi) == pytest.approx(np.quantile([0.0, 1.0, 2.0, 3.0], [0.25, 0.75]))


def test_too_few_pairs_get_no_verdict_whatever_alpha_says() -> None:
    """Two annotators agreeing exactly on 9 pairs (α = 1 with a CI of [1, 1] over 9 queries) get no verdict and no
    band: 9 < MIN_VERDICT_PAIRS (10) pairs with two grades; on 10 such pairs the same agreement is 'ok'."""
    import pandas as pd

    def exact(n: int) -> pd.DataFrame:
        return pd.DataFrame(
            [
                {"query_id": f"q{i}", "fragment_id": "f", "annotator": who, "grade": i % 4}
                for i in range(n)
                for who in ("a", "b")
            ]
        )

    nine = agreement_report(exact(9), bootstrap=100).assessment
    assert nine.verdict == "insufficient_data" and nine.band is None
    assert nine.reasons == [
        "too few to judge: 9 pairs with two grades, fewer than the 10 a verdict needs "
        "(ordinal α 1.00 on them is no measurement)"
    ]
    ten = agreement_report(exact(10), bootstrap=100).assessment
    assert ten.verdict == "ok" and ten.band == "reliable"
