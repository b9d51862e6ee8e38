"""Each annotator as the models see them: Dawid–Skene's confusion matrix and Raykar & Yu's spammer score from it,
MACE's competence with a CI by a bootstrap over queries, and a spammer flag that says what to do.

The CI holds the fitted MACE model fixed and resamples queries: each replicate's competence is the share of an
annotator's judgments MACE believes they knew (its per-judgment posterior of not spamming), summed over the
drawn queries — one matrix product per replicate, not a refit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from eval_core.consensus import PAIR, fit_model
from eval_core.consensus.models import knowing
from eval_core.io.judgments import check_judgments
from eval_core.thresholds import SPAMMER_COMPETENCE, SPAMMER_INFORMATION

CONFIDENCE = 0.95


@dataclass(frozen=True)
class AnnotatorModel:
    """One annotator: grades given, Dawid–Skene's confusion (row: the true grade, column: the grade given, each
    row a distribution; None where the model has no such true grade), MACE's competence and its CI, the flag."""

    annotator: str
    n: int
    n_queries: int
    confusion: list[list[float | None]]
    information: float
    competence: float
    ci: tuple[float, float] | None
    spammer: bool
    advice: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "annotator": self.annotator,
            "n": self.n,
            "n_queries": self.n_queries,
            "confusion": self.confusion,
            "information": self.information,
            "competence": self.competence,
            "competence_ci": list(self.ci) if self.ci else None,
            "spammer": self.spammer,
            "advice": self.advice,
        }


@dataclass(frozen=True)
class AnnotatorReport:
    """Every annotator's model figures, on the grades `grades` (the confusion matrices' rows and columns)."""

    grades: list[int]
    threshold: float
    replicates: int
    seed: int
    annotators: list[AnnotatorModel] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def spammers(self) -> list[AnnotatorModel]:
        return [a for a in self.annotators if a.spammer]

    def to_dict(self) -> dict[str, Any]:
        return {
            "grades": self.grades,
            "threshold": self.threshold,
            "replicates": self.replicates,
            "seed": self.seed,
            "confidence": CONFIDENCE,
            "annotators": [a.to_dict() for a in self.annotators],
            "notes": list(self.notes),
        }


def information(confusion: np.ndarray) -> float:
    """Raykar & Yu's (2012) spammer score of a confusion matrix (rows: true grade, each a distribution over the
    grade given): the mean squared difference between its rows, 1/(K(K−1)) Σ_{c<c'} Σ_k (a_ck − a_c'k)²; 0 for
    an annotator whose grade ignores the truth, 1 for a perfect one."""
    k = len(confusion)
    if k < 2:
        return 0.0
    diff = confusion[:, None, :] - confusion[None, :, :]
    return float((diff**2).sum() / 2 / (k * (k - 1)))


def _advice(name: str, competence: float, ci: tuple[float, float], n: int, threshold: float) -> str:
    return (
        f"{name}'s MACE competence {competence:.2f} (95% CI {ci[0]:.2f}-{ci[1]:.2f}) is near chance (below "
        f"{threshold:g}) and their Dawid-Skene confusion rows barely differ: their grades carry almost no "
        f"information about the truth. Give them a qualification round before more "
        f"work, and send their {n} judged pair(s) for re-judging by others."
    )


def annotator_report(
    judgments: pd.DataFrame,
    scale: tuple[int, int] = (0, 3),
    known: pd.DataFrame | None = None,
    replicates: int = 200,
    seed: int = 0,
    threshold: float = SPAMMER_COMPETENCE,
    min_information: float = SPAMMER_INFORMATION,
) -> AnnotatorReport:
    """Fit Dawid–Skene and MACE on the real grades (`known`: query_id, fragment_id, grade settled by a lead —
    controls and adjudications — as known truth) and describe every annotator; a spammer is one whose
    competence CI lies wholly below `threshold` and whose confusion's spammer score is below `min_information`
    (no CI, no flag: too few queries to say)."""
    frame = check_judgments(judgments, scale)
    frame = frame[frame["grade"].notna()].reset_index(drop=True)
    low, high = scale
    report = AnnotatorReport(list(range(low, high + 1)), threshold, replicates, seed)
    if frame.empty:
        report.notes.append("no real grades to fit a model on")
        return report
    keys = frame[PAIR].astype(str)
    pair_codes, pairs = pd.factorize(pd.MultiIndex.from_frame(keys), sort=True)
    truth: dict[int, int] = {}
    if known is not None and len(known):
        index = pd.MultiIndex.from_frame(known[PAIR].astype(str))
        where = pairs.get_indexer(index)
        truth = {int(w): int(g) for w, g in zip(where, known["grade"], strict=True) if w >= 0}
    grade = frame["grade"].to_numpy(dtype=np.int64)
    annotator = frame["annotator"].astype(str).to_numpy()
    ds = fit_model("dawid-skene", pair_codes, annotator, grade, truth)
    mace = fit_model("mace", pair_codes, annotator, grade, truth)
    assert ds.fit.confusion is not None and mace.fit.competence is not None
    crowd = mace.crowd
    share = knowing(crowd, mace.fit)
    query_codes, _ = pd.factorize(frame["query_id"].astype(str))
    n_q, n_w = int(query_codes.max()) + 1, crowd.n_workers
    cell = query_codes * n_w + crowd.worker
    know_qw = np.bincount(cell, weights=share, minlength=n_q * n_w).reshape(n_q, n_w)
    count_qw = np.bincount(cell, minlength=n_q * n_w).reshape(n_q, n_w).astype(np.float64)
    intervals: list[tuple[float, float] | None] = [None] * n_w
    if replicates > 0 and n_q > 1:
        rng = np.random.default_rng(seed)
        weights = rng.multinomial(n_q, np.full(n_q, 1.0 / n_q), size=replicates).astype(np.float64)
        know_b, count_b = weights @ know_qw, weights @ count_qw
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = know_b / count_b
        tail = (1 - CONFIDENCE) / 2
        for w in range(n_w):
            draws = ratio[:, w][np.isfinite(ratio[:, w])]
            if (count_qw[:, w] > 0).sum() > 1 and len(draws):
                intervals[w] = (float(np.quantile(draws, tail)), float(np.quantile(draws, 1 - tail)))
    positions = {g: i for i, g in enumerate(report.grades)}
    for w, name in enumerate(mace.annotators):
        matrix: list[list[float | None]] = [[None] * len(report.grades) for _ in report.grades]
        for t_code, t_grade in enumerate(ds.grades.tolist()):
            for g_code, g_grade in enumerate(ds.grades.tolist()):
                matrix[positions[t_grade]][positions[g_grade]] = float(ds.fit.confusion[w, t_code, g_code])
        n = int(count_qw[:, w].sum())
        competence = float(mace.fit.competence[w])
        ci = intervals[w]
        score = information(ds.fit.confusion[w])
        spammer = ci is not None and ci[1] < threshold and score < min_information
        report.annotators.append(
            AnnotatorModel(
                name,
                n,
                int((count_qw[:, w] > 0).sum()),
                matrix,
                score,
                competence,
                ci,
                spammer,
                _advice(name, competence, ci, n, threshold) if spammer and ci else None,
            )
        )
    return report
