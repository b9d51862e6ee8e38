"""Every threshold qrelkit decides by, in one place and standard library only, so the CLI can show the defaults
without pandas: the agreement flag, the model judge's gate, and the run diagnostics' thresholds."""

from __future__ import annotations

from dataclasses import dataclass

# Agreement (α, κ) below this marks a guideline version ambiguous: a project's default threshold.
AGREEMENT_THRESHOLD = 0.6
# A model judge that graded (a grade, not can't judge) under this share of the pairs graded at all gets no robustness
# condition of its own: its few pairs would rank the runs on other queries than everyone else's, and any flip there
# says nothing about the labels (eval_core.robustness; its grades still join "humans + models").
MIN_MODEL_SHARE = 0.5
# Fewer queries than this: no query-clustered bootstrap CI (agreement, a model judge's calibration, accuracy and κ
# against control pairs or a reference) — a handful of clusters has only a few distinct resamples (3 for 2 queries),
# and its interval would claim a precision that is not there.
MIN_CI_QUERIES = 5
# Fewer pairs with two grades than this (a project, a guideline version, a query, a category): agreement is shown
# with its n and "too few to judge", never as a verdict or a flag — one pair more or less swings it.
MIN_VERDICT_PAIRS = 10
# The least quadratic-weighted κ with the human consensus that lets a model judge fill a release's gaps.
MODEL_THRESHOLD = 0.6
# A model rule's pair whose most probable grade has a posterior below this is named as doubtful on the card.
DOUBT_THRESHOLD = 0.6
# An annotator is flagged a spammer when both say their answers carry next to nothing: MACE's competence (its
# bootstrap CI's upper end) is below SPAMMER_COMPETENCE, and their Dawid–Skene confusion rows barely differ
# (Raykar & Yu's spammer score below SPAMMER_INFORMATION: 0 when the grade given ignores the truth, 1 when
# perfect) — MACE alone also marks a consistently harsh or lenient annotator, whom Dawid–Skene decodes.
SPAMMER_COMPETENCE = 0.25
SPAMMER_INFORMATION = 0.2


@dataclass(frozen=True)
class Thresholds:
    """Every threshold the diagnostics use, so a verdict can always say which rule produced it."""

    min_candidate_recall: float = 0.8  # recall@candidate below this ⇒ retrieval problem (0.60 is one)
    min_context_share: float = 0.8  # recall@context / recall@candidate below this ⇒ ranking problem (0.55/0.95)
    min_context_ndcg: float = 0.5  # nDCG@context below this with good candidates ⇒ ranking problem
    curve_fast_k: int = 10  # a healthy recall curve has reached most of its height by this k
    curve_share: float = 0.8  # … namely this share of the recall at the deepest k measured
    curve_min_gain: float = 0.02  # the curve is flat from the first k whose deeper recall adds less than this
    low_recall: float = 0.2  # queries with recall@k strictly below this are listed
    min_judged: float = 0.9  # mean judged@k below this flags incomplete annotation
