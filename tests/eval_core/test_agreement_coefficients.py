"""Agreement coefficients on plain arrays against published tables and reference libraries."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score

from eval_core.agreement.coefficients import (
    cohen_kappa,
    fleiss_kappa,
    gwet_ac,
    kappa_from_confusion,
    krippendorff_alpha,
    percent_agreement,
)
from eval_core.agreement.types import Coefficient

NAN = np.nan

# Krippendorff, K. (2011) "Computing Krippendorff's Alpha-Reliability", section C: 4 observers × 12 units,
# values 1–5, missing data. Published: nominal 0.743, ordinal 0.815, interval 0.849. The same matrix is
# irrCAC's `cac.raw4raters` (units as rows there).
KRIPP_2011 = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
        [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
    ]
)

# Hayes, A. F. & Krippendorff, K. (2007) "Answering the call for a standard reliability measure for coding
# data", Communication Methods and Measures 1(1), Table 1: 40 news articles × 5 observers, tone 0–3, "." missing.
# Published ordinal α = 0.7598. Rows are units (obs1..obs5); transcribed from the table as distributed in
# jucor/krippendorff data-raw/hayes2007table1.csv.
HAYES_2007_ROWS = """
1 1 2 . 2|1 1 0 1 .|2 3 3 3 .|. 0 0 . 0|0 0 0 . 0|0 0 0 . 0|1 0 2 . 1|1 . 2 0 .|2 2 2 . 2|2 1 1 1 .
. 1 0 0 .|0 0 0 0 .|1 2 2 2 .|3 3 2 2 3|1 1 1 . 1|1 1 1 . 1|2 1 2 . 2|1 2 3 3 .|1 1 0 1 .|0 0 0 . 0
0 0 1 1 .|0 0 . 0 0|2 3 3 3 .|0 0 0 0 .|1 2 . 2 2|0 1 1 1 .|0 0 0 1 0|1 2 1 2 .|1 1 2 2 .|1 1 2 . 2
1 1 0 . 0|2 1 2 1 .|2 2 . 2 2|3 2 2 2 .|2 2 2 . 2|2 2 3 . 2|2 2 2 . 2|2 2 . 1 2|2 2 2 2 .|1 1 1 . 1
"""


def hayes_2007() -> np.ndarray:
    """Annotators × units matrix of Hayes & Krippendorff (2007) Table 1."""
    units = [u.split() for line in HAYES_2007_ROWS.strip().splitlines() for u in line.split("|")]
    assert len(units) == 40
    return np.array([[NAN if v == "." else float(v) for v in u] for u in units]).T


@pytest.mark.parametrize(("level", "published"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)])
def test_krippendorff_2011_published(level: str, published: float) -> None:
    result = krippendorff_alpha(KRIPP_2011, level, scale=(1, 5))
    assert result.status == "ok"
    assert result.value == pytest.approx(published, abs=5e-4)


def test_hayes_krippendorff_2007_ordinal() -> None:
    """Published ordinal α 0.7598 (Hayes & Krippendorff 2007, p. 87)."""
    assert krippendorff_alpha(hayes_2007(), "ordinal").value == pytest.approx(0.7598, abs=5e-5)


def test_hayes_2007_all_levels_match_package() -> None:
    data = hayes_2007()
    for level in ("nominal", "ordinal", "interval"):
        expected = krippendorff.alpha(data, level_of_measurement=level, value_domain=[0, 1, 2, 3])
        assert krippendorff_alpha(data, level).value == pytest.approx(expected, abs=1e-12)


def test_transposed_matrix_is_a_different_answer() -> None:
    """Units × annotators fed as annotators × units is silently wrong in the package; we take the right one."""
    data = hayes_2007()
    right = krippendorff.alpha(data, level_of_measurement="ordinal", value_domain=[0, 1, 2, 3])
    wrong = krippendorff.alpha(data.T, level_of_measurement="ordinal", value_domain=[0, 1, 2, 3])
    ours = krippendorff_alpha(data, "ordinal").value
    assert ours == pytest.approx(right, abs=1e-12)
    assert abs(ours - wrong) > 0.05


def test_package_default_level_is_interval_not_ordinal() -> None:
    """The package's default is interval; our default is ordinal (DESIGN.md)."""
    data = hayes_2007()
    assert krippendorff.alpha(data, value_domain=[0, 1, 2, 3]) == pytest.approx(
        krippendorff_alpha(data, "interval").value, abs=1e-12
    )
    assert krippendorff_alpha(data).value == pytest.approx(0.7598, abs=5e-5)


def test_cohen_wikipedia_example() -> None:
    """Wikipedia "Cohen's kappa", worked example: 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no → κ = 0.4."""
    a = np.array([1] * 20 + [1] * 5 + [0] * 10 + [0] * 15, dtype=float)
    b = np.array([1] * 20 + [0] * 5 + [1] * 10 + [0] * 15, dtype=float)
    assert cohen_kappa(a, b, scale=(0, 1)).value == pytest.approx(0.4, abs=1e-12)


def test_weighted_kappa_published_tables() -> None:
    """SAS/STAT PROC FREQ "Agreement Study" (skin condition, 4×4): simple κ 0.3449, Cicchetti-Allison (linear)
    weighted κ 0.5082; irrCAC kappa2.table(cont3x3abstractors, quadratic.weights) = 0.8921569."""
    skin = np.array([[10, 4, 1, 0], [5, 10, 12, 2], [2, 4, 12, 5], [0, 2, 6, 13]], dtype=float)
    assert float(kappa_from_confusion(skin, "unweighted")) == pytest.approx(0.3449, abs=5e-5)
    assert float(kappa_from_confusion(skin, "linear")) == pytest.approx(0.5082, abs=5e-5)
    abstractors = np.array([[13, 0, 0], [0, 20, 7], [0, 4, 56]], dtype=float)
    assert float(kappa_from_confusion(abstractors, "unweighted")) == pytest.approx(0.7964094, abs=5e-8)
    assert float(kappa_from_confusion(abstractors, "quadratic")) == pytest.approx(0.8921569, abs=5e-8)


def test_fleiss_wikipedia_example() -> None:
    """Wikipedia "Fleiss' kappa" worked example: 10 subjects × 14 raters × 5 categories → κ = 0.210."""
    table = [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
    data = np.array([[c for c, n in enumerate(row, start=1) for _ in range(n)] for row in table], dtype=float).T
    assert data.shape == (14, 10)
    assert fleiss_kappa(data, scale=(1, 5)).value == pytest.approx(0.210, abs=5e-4)


def test_gwet_irrcac_raw4raters() -> None:
    """irrCAC README and "weighting" vignette on cac.raw4raters (= Krippendorff 2011 data): percent agreement
    0.8181818, AC1 0.77544, Fleiss 0.76117, AC2 quadratic 0.914 (pa 0.9753788)."""
    scale = (1, 5)
    assert percent_agreement(KRIPP_2011, scale).value == pytest.approx(0.8181818, abs=5e-8)
    assert gwet_ac(KRIPP_2011, "unweighted", scale).value == pytest.approx(0.77544, abs=5e-6)
    assert fleiss_kappa(KRIPP_2011, scale).value == pytest.approx(0.76117, abs=5e-6)
    assert gwet_ac(KRIPP_2011, "quadratic", scale).value == pytest.approx(0.914, abs=5e-4)


def test_gwet_irrcac_distrib_6raters() -> None:
    """irrCAC README, distrib.6raters (15 subjects × 6 raters × 5 categories): AC1 0.4448007, Fleiss 0.4139265;
    weighting vignette: AC2 quadratic 0.4837438."""
    dist = [
        [0, 0, 0, 6, 0],
        [0, 3, 0, 0, 3],
        [0, 1, 4, 0, 1],
        [0, 0, 0, 0, 6],
        [0, 3, 0, 3, 0],
        [2, 0, 4, 0, 0],
        [0, 0, 4, 0, 2],
        [2, 0, 3, 1, 0],
        [2, 0, 0, 4, 0],
        [0, 0, 0, 0, 6],
        [1, 0, 0, 5, 0],
        [1, 1, 0, 4, 0],
        [0, 3, 3, 0, 0],
        [1, 0, 0, 5, 0],
        [0, 2, 0, 3, 1],
    ]
    data = np.array([[c for c, n in enumerate(row, start=1) for _ in range(n)] for row in dist], dtype=float).T
    assert gwet_ac(data, "unweighted", (1, 5)).value == pytest.approx(0.4448007, abs=5e-8)
    assert fleiss_kappa(data, (1, 5)).value == pytest.approx(0.4139265, abs=5e-8)
    assert gwet_ac(data, "quadratic", (1, 5)).value == pytest.approx(0.4837438, abs=5e-8)


def _random_matrix(rng: np.random.Generator, annotators: int, units: int, missing: float) -> np.ndarray:
    truth = rng.integers(0, 4, units)
    data = np.clip(truth + rng.integers(-1, 2, (annotators, units)), 0, 3).astype(float)
    data[rng.random(data.shape) < missing] = np.nan
    return data


@pytest.mark.parametrize("seed", range(5))
def test_alpha_matches_package_on_random_data(seed: int) -> None:
    rng = np.random.default_rng(seed)
    data = _random_matrix(rng, 3 + seed % 3, 60, 0.3)
    for level in ("nominal", "ordinal", "interval"):
        expected = krippendorff.alpha(data, level_of_measurement=level, value_domain=[0, 1, 2, 3])
        assert krippendorff_alpha(data, level).value == pytest.approx(expected, abs=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["unweighted", "linear", "quadratic"]))
def test_kappa_matches_sklearn_full_label_set(seed: int, weights: str) -> None:
    rng = np.random.default_rng(seed)
    data = _random_matrix(rng, 2, 40, 0.2)
    both = ~np.isnan(data).any(axis=0)
    ours = cohen_kappa(data[0], data[1], weights)
    expected = cohen_kappa_score(
        data[0, both], data[1, both], labels=[0, 1, 2, 3], weights=None if weights == "unweighted" else weights
    )
    if np.isnan(expected):
        assert ours.value is None
    else:
        assert ours.value == pytest.approx(expected, abs=1e-12)


def test_unused_grade_still_shapes_weights() -> None:
    """Grade 2 never used: 1 and 3 stay two steps apart, as sklearn with labels=[0,1,2,3], not the observed ones."""
    a = np.array([0, 1, 3, 1, 0, 3, 1], dtype=float)
    b = np.array([0, 3, 3, 1, 1, 3, 0], dtype=float)
    full = cohen_kappa_score(a, b, labels=[0, 1, 2, 3], weights="quadratic")
    observed = cohen_kappa_score(a, b, weights="quadratic")
    assert cohen_kappa(a, b, "quadratic").value == pytest.approx(full, abs=1e-12)
    assert abs(full - observed) > 1e-3


def test_degenerate_inputs_are_undefined_with_reason() -> None:
    one = np.array([[0, 1, 2, 3.0]])
    assert krippendorff_alpha(one) == Coefficient(None, None, "undefined: one annotator")
    no_overlap = np.array([[0, 1, NAN, NAN], [NAN, NAN, 2, 3]])
    assert krippendorff_alpha(no_overlap).status == "undefined: no overlapping pairs"
    assert gwet_ac(no_overlap).status == "undefined: no overlapping pairs"
    assert cohen_kappa(no_overlap[0], no_overlap[1]).status == "undefined: no overlapping pairs"
    flat = np.array([[2, 2, 2.0], [2, 2, 2.0]])
    for result in (krippendorff_alpha(flat), fleiss_kappa(flat), cohen_kappa(flat[0], flat[1])):
        assert result == Coefficient(None, None, "undefined: no variation")
    all_missing = np.full((3, 4), NAN)
    assert krippendorff_alpha(all_missing).status == "undefined: one annotator"


def test_constant_annotator_against_varying_one_is_a_real_zero() -> None:
    """κ is defined (0, as sklearn) when only one annotator varies: that is not 'no variation'."""
    a, b = np.array([1, 1, 1, 1.0]), np.array([0, 1, 2, 3.0])
    expected = cohen_kappa_score(a, b, labels=[0, 1, 2, 3])
    assert cohen_kappa(a, b) == Coefficient(pytest.approx(expected), None, "ok")


def test_off_scale_values_rejected() -> None:
    with pytest.raises(ValueError, match="integers in 0-3"):
        krippendorff_alpha(np.array([[0, 4.0], [1, 1.0]]))
    with pytest.raises(ValueError, match="integers in 0-3"):
        krippendorff_alpha(np.array([[0, 1.5], [1, 1.0]]))
