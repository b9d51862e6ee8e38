"""How far a model judge can be trusted: the agreement statistics used for people, on the pairs it shares with them.

For each model judge, on the pairs graded by both: Cohen's κ (every weighting), ordinal Krippendorff's α and
the confusion matrix against each human and against the human consensus (median rule by default); its bias
against the consensus (mean signed difference, the share of the consensus' lower half it calls upper half and
the reverse); the same per category and per guideline version; and human–human agreement on the same pairs,
so a model is compared with what people reach on exactly those pairs. Every coefficient comes from the
agreement core (eval_core.agreement.coefficients, eval_core.agreement.report).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from eval_core.agreement.bootstrap import bootstrap_sums, percentile_ci
from eval_core.agreement.coefficients import (
    UNDEFINED_ONE,
    UNDEFINED_OVERLAP,
    WEIGHTS,
    alpha_from_coincidence,
    coef,
    cohen_kappa,
    kappa_from_confusion,
    krippendorff_alpha,
)
from eval_core.agreement.report import agreement_report, annotator_kinds
from eval_core.agreement.types import Coefficient
from eval_core.consensus import consensus
from eval_core.io.judgments import check_judgments
from eval_core.thresholds import MIN_CI_QUERIES
from eval_core.vocab import AnnotatorKind

PAIR = ["query_id", "fragment_id"]
CONSENSUS = "human consensus"
GROUP_FIELDS = ("category", "guideline")


def upper_half(scale: tuple[int, int]) -> int:
    """The first grade of the scale's upper half (2 on 0–3): the boundary the over-call share is read at."""
    low, high = scale
    return low + (high - low + 1) // 2


def grade_range(low: int, high: int) -> str:
    """`0–1`, or `3` for a single grade."""
    return str(low) if low == high else f"{low}–{high}"


@dataclass(frozen=True)
class Bias:
    """A model's grades against a reference on shared pairs: mean signed difference (model − reference), the
    share of the reference's lower-half grades it puts in the upper half, and the reverse."""

    n: int
    mean_difference: float | None
    n_lower: int
    over_share: float | None
    n_upper: int
    under_share: float | None

    def sentence(self, scale: tuple[int, int]) -> str:
        """`grades 0.40 higher on average; calls 25% of the humans' 0–1 grades 2–3 (n 8), 0% of their 2–3 …`."""
        if self.mean_difference is None:
            return "no shared pairs"
        diff = self.mean_difference
        words = [
            f"grades {abs(diff):.2f} {'higher' if diff > 0 else 'lower'} on average"
            if diff
            else "grades the same on average"
        ]
        lower, upper = grade_range(scale[0], upper_half(scale) - 1), grade_range(upper_half(scale), scale[1])
        if self.over_share is not None:
            words.append(f"calls {self.over_share:.0%} of the humans' {lower} grades {upper} (n {self.n_lower})")
        if self.under_share is not None:
            words.append(f"calls {self.under_share:.0%} of their {upper} grades {lower} (n {self.n_upper})")
        return "; ".join(words)

    def to_dict(self) -> dict[str, Any]:
        """JSON object."""
        return {
            "n": self.n,
            "mean_difference": self.mean_difference,
            "n_lower": self.n_lower,
            "over_share": self.over_share,
            "n_upper": self.n_upper,
            "under_share": self.under_share,
        }


@dataclass(frozen=True)
class Comparison:
    """A model judge against one reference (a human, or the human consensus) on the pairs both graded;
    confusion rows are the reference's grades, columns the model's."""

    model: str
    reference: str
    n: int
    kappa: dict[str, Coefficient]
    alpha: Coefficient
    confusion: list[list[int]]
    bias: Bias
    n_queries: int = 0
    ci_status: str = "ok"  # or why κ and α have no CI (no bootstrap, too few queries)

    def to_dict(self) -> dict[str, Any]:
        """JSON object (κ per weighting, ordinal α, each with its query-clustered CI; confusion, bias)."""
        return {
            "model": self.model,
            "reference": self.reference,
            "n": self.n,
            "n_queries": self.n_queries,
            "kappa": {w: c.to_dict() for w, c in self.kappa.items()},
            "alpha_ordinal": self.alpha.to_dict(),
            "ci_status": self.ci_status,
            "confusion": self.confusion,
            "bias": self.bias.to_dict(),
        }


@dataclass(frozen=True)
class HumanBaseline:
    """Human–human agreement on a set of pairs (only pairs with ≥ 2 human grades count)."""

    n_pairable: int
    alpha: Coefficient
    kappa: dict[str, Coefficient]

    def to_dict(self) -> dict[str, Any]:
        """JSON object (ordinal α and the mean pairwise Cohen's κ per weighting)."""
        return {
            "n_pairable": self.n_pairable,
            "alpha_ordinal": self.alpha.to_dict(),
            "kappa_mean": {w: c.to_dict() for w, c in self.kappa.items()},
        }


@dataclass(frozen=True)
class GroupCalibration:
    """A model against the consensus within one category or guideline version, beside the humans there."""

    field: str
    group: str
    vs_consensus: Comparison
    humans: HumanBaseline

    def to_dict(self) -> dict[str, Any]:
        """JSON object."""
        return {
            "field": self.field,
            "group": self.group,
            "vs_consensus": self.vs_consensus.to_dict(),
            "humans": self.humans.to_dict(),
        }


@dataclass(frozen=True)
class ModelCalibration:
    """Everything known about one model judge's agreement with the humans."""

    model: str
    n_grades: int
    vs_consensus: Comparison
    vs_humans: list[Comparison]
    humans: HumanBaseline
    by_category: list[GroupCalibration]
    by_guideline: list[GroupCalibration]

    def guideline(self, version: str) -> GroupCalibration | None:
        """The calibration on one guideline version's judgments, if the model graded under it."""
        return next((g for g in self.by_guideline if g.group == version), None)

    def to_dict(self) -> dict[str, Any]:
        """JSON object."""
        return {
            "model": self.model,
            "n_grades": self.n_grades,
            "vs_consensus": self.vs_consensus.to_dict(),
            "vs_humans": [c.to_dict() for c in self.vs_humans],
            "humans": self.humans.to_dict(),
            "by_category": [g.to_dict() for g in self.by_category],
            "by_guideline": [g.to_dict() for g in self.by_guideline],
        }


@dataclass(frozen=True)
class CalibrationReport:
    """Every model judge calibrated against the humans of one judgments set."""

    scale: tuple[int, int]
    rule: str
    boundary: int
    humans: list[str]
    models: list[ModelCalibration]

    def to_dict(self) -> dict[str, Any]:
        """The JSON of the calibration part of `qrelkit agreement --by kind --format json`."""
        return {
            "scale": list(self.scale),
            "rule": self.rule,
            "boundary": self.boundary,
            "humans": self.humans,
            "models": [m.to_dict() for m in self.models],
        }


def bias(model: np.ndarray, reference: np.ndarray, boundary: int) -> Bias:
    """Bias of aligned grade arrays (model − reference) and the over/under-call shares at `boundary`."""
    n = len(model)
    lower, upper = reference < boundary, reference >= boundary
    n_lower, n_upper = int(lower.sum()), int(upper.sum())
    return Bias(
        n,
        float(np.mean(model - reference)) if n else None,
        n_lower,
        float(np.mean(model[lower] >= boundary)) if n_lower else None,
        n_upper,
        float(np.mean(model[upper] < boundary)) if n_upper else None,
    )


@dataclass(frozen=True)
class Resampling:
    """How calibration CIs are made: a query-clustered bootstrap (eval_core.agreement.bootstrap)."""

    replicates: int = 0
    seed: int = 0
    confidence: float = 0.95


def compare(
    model_name: str,
    reference_name: str,
    model: np.ndarray,
    reference: np.ndarray,
    scale: tuple[int, int],
    queries: np.ndarray | None = None,
    resampling: Resampling = Resampling(),
) -> Comparison:
    """κ (every weighting), ordinal α, confusion (reference × model) and bias of aligned real grades; with
    `queries` (each pair's query) and replicates, κ and α get query-clustered bootstrap CIs: per-query
    confusion matrices resampled by multinomial weights, κ from each replicate's confusion and α from its
    coincidences (C + Cᵀ: two coders, one grade each)."""
    model, reference = np.asarray(model, dtype=float), np.asarray(reference, dtype=float)
    k, low = scale[1] - scale[0] + 1, scale[0]
    cells = (reference - low).astype(int) * k + (model - low).astype(int)
    conf = np.bincount(cells, minlength=k * k).reshape(k, k)
    codes, uniques = pd.factorize(pd.Series(queries, dtype=object)) if queries is not None else (None, [])
    n_queries = len(uniques)
    if len(model):
        kappa = {w: cohen_kappa(reference, model, w, scale) for w in WEIGHTS}
        alpha = krippendorff_alpha(np.vstack([reference, model]), "ordinal", scale)
    else:
        kappa = {w: coef(None, UNDEFINED_OVERLAP) for w in WEIGHTS}
        alpha = coef(None, UNDEFINED_OVERLAP)
    status = "ok"
    if not resampling.replicates or codes is None:
        status = "no bootstrap"
    elif n_queries < MIN_CI_QUERIES:
        status = (
            f"no CIs: {n_queries} quer{'y' if n_queries == 1 else 'ies'} shared, too few to resample (a "
            f"query-clustered interval needs at least {MIN_CI_QUERIES})"
        )
    elif len(model):
        block = np.zeros((n_queries, k * k))
        np.add.at(block, (codes, cells), 1.0)
        (sums,) = bootstrap_sums([block], resampling.replicates, resampling.seed)
        confs = sums.reshape(-1, k, k)
        kappa = {w: _with_ci(c, kappa_from_confusion(confs, w), resampling.confidence) for w, c in kappa.items()}
        alpha = _with_ci(
            alpha, alpha_from_coincidence(confs + confs.transpose(0, 2, 1), "ordinal"), resampling.confidence
        )
    return Comparison(
        model_name,
        reference_name,
        len(model),
        kappa,
        alpha,
        conf.astype(int).tolist(),
        bias(model, reference, upper_half(scale)),
        n_queries,
        status,
    )


def _with_ci(c: Coefficient, replicates: np.ndarray, confidence: float) -> Coefficient:
    """The coefficient with the percentile interval of its replicates (none when it is undefined)."""
    if c.value is None:
        return c
    return coef(c.value, c.status, percentile_ci(replicates, confidence))


def human_baseline(
    humans: pd.DataFrame, pairs: pd.DataFrame, scale: tuple[int, int], resampling: Resampling = Resampling()
) -> HumanBaseline:
    """Human–human ordinal α and mean pairwise κ on `pairs` (the agreement report, with its query-clustered
    CIs when `resampling` asks for replicates)."""
    on = humans.merge(pairs[PAIR].drop_duplicates(), on=PAIR)
    if on.empty:
        undefined = coef(None, UNDEFINED_ONE)
        return HumanBaseline(0, undefined, dict.fromkeys(WEIGHTS, undefined))
    report = agreement_report(
        on[["query_id", "fragment_id", "annotator", "grade"]],
        scale=scale,
        bootstrap=resampling.replicates,
        seed=resampling.seed,
        confidence=resampling.confidence,
        top=0,
    )
    return HumanBaseline(report.n_pairable_units, report.alpha["ordinal"], report.light_kappa)


def _groups(
    model_rows: pd.DataFrame,
    humans: pd.DataFrame,
    name: str,
    field: str,
    scale: tuple[int, int],
    resampling: Resampling,
) -> list[GroupCalibration]:
    """The model against the consensus within each value of `field` (of the model's own judgments)."""
    if field not in model_rows.columns or model_rows[field].isna().all():
        return []
    out = []
    for group, part in model_rows.dropna(subset=[field]).groupby(field, sort=True):
        out.append(
            GroupCalibration(
                field,
                _label(group),
                compare(
                    name,
                    CONSENSUS,
                    part["grade"].to_numpy(),
                    part["consensus"].to_numpy(),
                    scale,
                    part["query_id"].to_numpy(),
                    resampling,
                ),
                human_baseline(humans, part, scale, resampling),
            )
        )
    return out


def _label(value: Any) -> str:
    """A group value as people write it ('2', not '2.0')."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def calibration(
    judgments: pd.DataFrame,
    scale: tuple[int, int] = (0, 3),
    models: Sequence[str] = (),
    adjudications: pd.DataFrame | None = None,
    rule: str = "median",
    bootstrap: int = 0,
    seed: int = 0,
    confidence: float = 0.95,
) -> CalibrationReport:
    """Calibrate every model judge (annotator_kind 'model', or named in `models`) against the humans.

    `judgments`: query_id, fragment_id, annotator, grade (NA = can't judge), optionally annotator_kind,
    category, guideline. The consensus is `rule` over the humans' real grades, lead decisions winning; a
    reference's grades (kind 'reference', e.g. NIST's qrels) join neither it nor the humans' baseline.
    With `bootstrap` replicates every κ and α gets a query-clustered percentile CI (none over fewer than
    MIN_CI_QUERIES shared queries, with the reason in `ci_status`).
    """
    resampling = Resampling(bootstrap, seed, confidence)
    kinds = annotator_kinds(judgments, models)
    frame = check_judgments(judgments.drop(columns=["annotator_kind"], errors="ignore"), scale)
    frame = frame[frame["grade"].notna()]
    kind = frame["annotator"].map(kinds)
    # a reference (e.g. NIST's qrels) is not a person: it joins neither the consensus nor the humans' baseline
    humans, machines = frame[kind.eq(AnnotatorKind.HUMAN).to_numpy()], frame[kind.eq(AnnotatorKind.MODEL).to_numpy()]
    agreed = consensus(humans, rule=rule, adjudications=adjudications, scale=scale)
    reference = agreed[[*PAIR, "grade"]].rename(columns={"grade": "consensus"})
    result = []
    for name, rows in machines.groupby("annotator", sort=True):
        with_consensus = rows.merge(reference, on=PAIR)
        vs_consensus = compare(
            name,
            CONSENSUS,
            with_consensus["grade"].to_numpy(),
            with_consensus["consensus"].to_numpy(),
            scale,
            with_consensus["query_id"].to_numpy(),
            resampling,
        )
        shared = rows[[*PAIR, "grade"]].merge(humans[[*PAIR, "annotator", "grade"]], on=PAIR, suffixes=("", "_human"))
        vs_humans = [
            compare(
                name,
                str(human),
                part["grade"].to_numpy(),
                part["grade_human"].to_numpy(),
                scale,
                part["query_id"].to_numpy(),
                resampling,
            )
            for human, part in shared.groupby("annotator", sort=True)
        ]
        result.append(
            ModelCalibration(
                str(name),
                len(rows),
                vs_consensus,
                vs_humans,
                human_baseline(humans, rows, scale, resampling),
                *(_groups(with_consensus, humans, str(name), f, scale, resampling) for f in GROUP_FIELDS),
            )
        )
    return CalibrationReport(
        (scale[0], scale[1]),
        rule,
        upper_half(scale),
        sorted(a for a, kind in kinds.items() if kind == AnnotatorKind.HUMAN),
        result,
    )
