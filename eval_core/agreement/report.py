"""The agreement report a lead reads before trusting a golden set: κ, α, AC1/AC2 side by side, with CIs.

`agreement_report(judgments)` returns a typed `AgreementReport` (its `to_dict()` is the JSON of
`qrelkit agreement --format json`); `assess(report, threshold)` turns it into a verdict with reasons a
person can act on.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from eval_core.agreement.bootstrap import bootstrap_sums, percentile_ci
from eval_core.agreement.coefficients import (
    LEVELS,
    UNDEFINED_ONE,
    UNDEFINED_OVERLAP,
    UNDEFINED_VARIATION,
    WEIGHTS,
    alpha_from_coincidence,
    binarise_coincidence,
    coef,
    cut_points,
    gwet_from_sums,
    kappa_from_confusion,
    multi_status,
)
from eval_core.agreement.data import (
    Encoded,
    PairConfusions,
    encode,
    pair_confusions,
    sum_by_group,
    unit_counts,
    unit_stats,
)
from eval_core.agreement.diagnostics import disputed_pairs, disputed_queries, grade_bias, leave_one_out
from eval_core.agreement.groups import GroupStats, group_alphas, group_query_block, group_stats
from eval_core.agreement.types import (
    AgreementReport,
    Assessment,
    Bootstrap,
    Boundary,
    Coefficient,
    Diagnostics,
    GuidelineVerdict,
    KappaPair,
)
from eval_core.io.judgments import annotator_kinds, check_judgments, read_judgments
from eval_core.thresholds import AGREEMENT_THRESHOLD, MIN_CI_QUERIES, MIN_VERDICT_PAIRS
from eval_core.vocab import AnnotatorKind

BY_FIELDS = {"query": "query_id", "category": "category", "guideline": "guideline"}
RELIABLE, TENTATIVE = 0.800, 0.667


def _column(rows: np.ndarray, names: list[str], prefix: str) -> np.ndarray:
    """The columns of a statistics block whose names start with `prefix` (keeps their order)."""
    return rows[..., [i for i, n in enumerate(names) if n.startswith(prefix)]]


def _coefficients(stats: np.ndarray, names: list[str], k: int, scale: tuple[int, int]) -> dict[str, np.ndarray]:
    """Every multi-annotator coefficient from summed statistics (one row, or one per bootstrap replicate)."""
    o = stats[..., : k * k].reshape(*stats.shape[:-1], k, k)
    out = {f"alpha_{level}": alpha_from_coincidence(o, level) for level in LEVELS}
    for label, cut in cut_points(scale):
        out[f"cut_{label}"] = alpha_from_coincidence(binarise_coincidence(o, cut), "nominal")
    n2, n1 = stats[..., names.index("n2")], stats[..., names.index("n1")]
    pi = _column(stats, names, "pi")
    for kind in WEIGHTS:
        gw = gwet_from_sums(stats[..., names.index(f"pa_{kind}")], n2, pi, n1, kind)
        out[f"ac_{kind}"] = gw["ac"]
        if kind == "unweighted":
            out["pa"], out["fleiss"] = gw["pa"], gw["fleiss"]
    return out


def _c(value: np.ndarray | float, status: str, replicates: np.ndarray | None, confidence: float) -> Coefficient:
    """A Coefficient from a point value and its replicates (status "no variation" when the arithmetic is 0/0)."""
    value = float(value)
    if status == "ok" and not np.isfinite(value):
        status = UNDEFINED_VARIATION
    if status != "ok":
        return coef(None, status)
    ci = percentile_ci(replicates, confidence) if replicates is not None else None
    return coef(value, "ok", ci)


def human_judgments(judgments: pd.DataFrame, models: Sequence[str] = ()) -> pd.DataFrame:
    """Only people's judgments: a model judge never counts in human–human agreement."""
    if "annotator_kind" not in judgments.columns and not models:
        return judgments
    kinds = annotator_kinds(judgments, models)
    return judgments[judgments["annotator"].astype(str).map(kinds).eq(AnnotatorKind.HUMAN).to_numpy()]


def _load(judgments: pd.DataFrame | str | Path, scale: tuple[int, int], models: Sequence[str]) -> pd.DataFrame:
    """Checked judgments of people only (a file or a frame)."""
    frame: Any = read_judgments(judgments, scale) if isinstance(judgments, str | Path) else judgments
    frame = human_judgments(frame, models)
    return check_judgments(frame, scale, duplicates=False)  # encode() checks them on integer codes


def agreement_report(
    judgments: pd.DataFrame | str | Path,
    scale: tuple[int, int] = (0, 3),
    level: str = "ordinal",
    threshold: float = AGREEMENT_THRESHOLD,
    by: str | None = None,
    bootstrap: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    top: int = 10,
    progress: bool = False,
    models: Sequence[str] = (),
) -> AgreementReport:
    """Agreement of a judgments set: every coefficient with a query-clustered bootstrap CI, diagnostics, verdict.

    Units are (query_id, fragment_id) pairs; a None/NA grade is "can't judge" and never counts as a grade.
    Human–human only: judgments of model judges (annotator_kind 'model', or annotators named in `models`)
    are left out; eval_core.judges.calibration compares those with the humans.
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}, got {level!r}")
    if by is not None and by not in BY_FIELDS:
        raise ValueError(f"by must be one of {', '.join(BY_FIELDS)}, got {by!r}")
    if bootstrap < 0:
        raise ValueError(f"bootstrap must be ≥ 0, got {bootstrap}")
    frame = _load(judgments, scale, models)
    if by is not None and BY_FIELDS[by] not in frame.columns:
        raise ValueError(f"judgments have no {BY_FIELDS[by]} column to break agreement down by")
    enc = encode(frame, scale)
    k, low = enc.k, scale[0]
    counts = unit_counts(enc)
    rows, names = unit_stats(counts)
    per_query = sum_by_group(rows, enc.unit_query, len(enc.queries))
    totals = per_query.sum(axis=0)
    confusions = pair_confusions(enc)
    valid = enc.grade >= 0
    n_graders = len(np.unique(enc.annotator[valid]))
    n_pairable = int((counts.sum(axis=1) >= 2).sum())
    status = multi_status(n_graders, n_pairable)

    fields = [f for f in dict.fromkeys([by, "guideline" if "guideline" in frame.columns else None]) if f]
    groups = {field: _group_stats(frame, enc, BY_FIELDS[field]) for field in fields}
    resampled = [f for f in groups if f != "query"]  # one query's α does not vary over query resamples

    point = _coefficients(totals, names, k, scale)
    reps: dict[str, np.ndarray] = {}
    kappa_reps = None
    group_reps: dict[str, np.ndarray] = {}
    n_reps, boot_status = _replicates(bootstrap, len(enc.queries), status)
    if n_reps:
        blocks = [per_query, confusions.per_query, *(group_query_block(groups[f], enc) for f in resampled)]
        base, kappa_block, *group_blocks = bootstrap_sums(blocks, n_reps, seed, progress)
        reps = _coefficients(base, names, k, scale)
        kappa_reps = kappa_block.reshape(n_reps, -1, k, k)
        group_reps = dict(zip(resampled, group_blocks, strict=True))

    def c(name: str) -> Coefficient:
        return _c(point[name], status, reps.get(name), confidence)

    alpha = {lv: c(f"alpha_{lv}") for lv in LEVELS}
    cuts = {label: c(f"cut_{label}") for label, _ in cut_points(scale)}
    kappa, light = _kappas(enc, confusions, kappa_reps, confidence)
    diagnostics = Diagnostics(
        leave_one_out=leave_one_out(enc, counts, level, alpha[level].value),
        bias=grade_bias(enc, counts, low),
        disputed_pairs=disputed_pairs(enc, counts, frame, low, top),
        disputed_queries=disputed_queries(enc, counts, top),
        by_field=by,
        by=group_alphas(groups[by], level, group_reps.get(by), confidence) if by is not None else None,
        guidelines=(
            group_alphas(groups["guideline"], level, group_reps.get("guideline"), confidence)
            if "guideline" in groups
            else None
        ),
    )
    raw = c("pa")
    prevalence = _prevalence(counts, low)
    weakest = weakest_boundary(cuts)
    return AgreementReport(
        n_units=len(enc.units),
        n_annotators=len(enc.annotators),
        n_judgments=len(frame),
        n_grades=int(valid.sum()),
        n_cant_judge=int((~valid).sum()),
        n_queries=len(enc.queries),
        n_pairable_units=n_pairable,
        scale=(scale[0], scale[1]),
        level=level,
        bootstrap=Bootstrap(n_reps, seed, confidence, status=boot_status),
        raw_agreement=raw,
        prevalence=prevalence,
        alpha=alpha,
        fleiss_kappa=c("fleiss"),
        ac1=c("ac_unweighted"),
        ac2={"linear": c("ac_linear"), "quadratic": c("ac_quadratic")},
        kappa=kappa,
        light_kappa=light,
        cuts=cuts,
        weakest=weakest,
        diagnostics=diagnostics,
        assessment=assess(
            alpha[level],
            level,
            threshold,
            weakest=weakest,
            diagnostics=diagnostics,
            raw=raw.value,
            prevalence=prevalence,
            ac2=c("ac_quadratic").value,
            n_pairable=n_pairable,
        ),
    )


def _replicates(bootstrap: int, n_queries: int, status: str) -> tuple[int, str]:
    """The bootstrap replicates to draw and the CIs' status: none below MIN_CI_QUERIES queries, since resampling
    a handful of query clusters gives an interval far narrower than the uncertainty (with 3 queries there are
    only 10 distinct resamples), and a printed interval would claim a precision that is not there."""
    if not bootstrap or status != "ok":
        return 0, "ok" if not bootstrap else f"no CIs: {status}"
    if n_queries < MIN_CI_QUERIES:
        return 0, (
            f"no CIs: {n_queries} quer{'y' if n_queries == 1 else 'ies'}, too few to resample (a "
            f"query-clustered interval needs at least {MIN_CI_QUERIES})"
        )
    return bootstrap, "ok"


def _group_stats(frame: pd.DataFrame, enc: Encoded, column: str) -> GroupStats:
    """Group judgments by a column's values (missing values form the group "(none)")."""
    codes, names = pd.factorize(frame[column].astype(object).where(frame[column].notna(), "(none)"), sort=True)
    return group_stats(enc, codes.astype(np.int64), [str(n) for n in names])


def _prevalence(counts: np.ndarray, low: int) -> dict[str, float | None]:
    """Share of each grade among all real grades: the base rates behind the kappa paradox."""
    per_grade = counts.sum(axis=0)
    total = per_grade.sum()
    return {str(low + i): (float(n / total) if total else None) for i, n in enumerate(per_grade)}


def _kappas(
    enc: Encoded, confusions: PairConfusions, kappa_reps: np.ndarray | None, confidence: float
) -> tuple[list[KappaPair], dict[str, Coefficient]]:
    """Cohen's κ for every pair of annotators who graded anything (with overlap and confusion matrix), and
    Light's κ: the mean over the pairs whose κ is defined, its CI from the same replicates."""
    valid = enc.grade >= 0
    graders = np.unique(enc.annotator[valid])
    index = {(int(a), int(b)): i for i, (a, b) in enumerate(zip(confusions.a, confusions.b, strict=True))}
    pairs: list[KappaPair] = []
    points: dict[str, list[float]] = {w: [] for w in WEIGHTS}
    replicates: dict[str, list[np.ndarray | None]] = {w: [] for w in WEIGHTS}
    for x_pos, a in enumerate(graders):
        for b in graders[x_pos + 1 :]:
            i = index.get((int(a), int(b)))
            conf = confusions.total[i] if i is not None else np.zeros((enc.k, enc.k))
            n = int(conf.sum())
            kappa = {}
            for kind in WEIGHTS:
                status = "ok" if n else UNDEFINED_OVERLAP
                reps = None if kappa_reps is None or i is None else kappa_from_confusion(kappa_reps[:, i], kind)
                kappa[kind] = _c(kappa_from_confusion(conf, kind), status, reps, confidence)
                value = kappa[kind].value
                if value is not None:
                    points[kind].append(value)
                    replicates[kind].append(reps)
            pairs.append(KappaPair(enc.annotators[a], enc.annotators[b], n, kappa, conf.astype(int).tolist()))
    light = {}
    for kind in WEIGHTS:
        if not points[kind]:
            light[kind] = coef(None, UNDEFINED_OVERLAP if len(graders) >= 2 else UNDEFINED_ONE)
            continue
        known = [r for r in replicates[kind] if r is not None]
        reps = np.mean(known, axis=0) if len(known) == len(replicates[kind]) else None
        light[kind] = coef(
            float(np.mean(points[kind])), "ok", percentile_ci(reps, confidence) if reps is not None else None
        )
    return pairs, light


def band(value: float | None) -> str | None:
    """Krippendorff's (2004) bands: ≥ 0.800 reliable, 0.667–0.800 tentative conclusions only, below: unreliable."""
    if value is None:
        return None
    if value >= RELIABLE:
        return "reliable"
    return "tentative" if value >= TENTATIVE else "unreliable"


def too_few(n_pairable: int) -> bool:
    """Fewer pairs with two grades than MIN_VERDICT_PAIRS: a coefficient on them swings by a pair, so it is
    shown with its n and judged by nobody (no verdict, no flag, no "below threshold")."""
    return n_pairable < MIN_VERDICT_PAIRS


def too_few_reason(n_pairable: int) -> str:
    return f"too few to judge: {n_pairable} pairs with two grades, fewer than the {MIN_VERDICT_PAIRS} a verdict needs"


def verdict(c: Coefficient, threshold: float, n_pairable: int | None = None) -> str:
    """ok if the CI's low end clears the threshold, ambiguous if its high end is below, else inconclusive;
    insufficient_data without a value or a CI, or over too few pairs with two grades (`too_few`)."""
    if c.value is None or c.ci is None or (n_pairable is not None and too_few(n_pairable)):
        return "insufficient_data"
    lo, hi = c.ci
    return "ok" if lo >= threshold else "ambiguous" if hi < threshold else "inconclusive"


def weakest_boundary(cuts: dict[str, Coefficient]) -> Boundary | None:
    """The cut of the scale with the lowest binarised α: the grade boundary the guideline leaves ambiguous."""
    defined = [(label, c.value) for label, c in cuts.items() if c.value is not None]
    if not defined:
        return None
    label, value = min(defined, key=lambda item: item[1])
    return Boundary(label, value)


def assess(
    alpha: Coefficient,
    level: str,
    threshold: float = AGREEMENT_THRESHOLD,
    *,
    weakest: Boundary | None,
    diagnostics: Diagnostics,
    raw: float | None,
    prevalence: dict[str, float | None],
    ac2: float | None,
    n_pairable: int | None = None,
) -> Assessment:
    """Verdict on α with reasons a lead can act on; guideline versions are judged the same way. Over fewer
    than MIN_VERDICT_PAIRS pairs with two grades there is no verdict (`too_few`), whatever α is."""
    value = alpha.value
    overall = verdict(alpha, threshold, n_pairable)
    if value is not None and n_pairable is not None and too_few(n_pairable):
        # nothing is judged on a handful of pairs: no band, no boundary, no hints
        reasons = [f"{too_few_reason(n_pairable)} ({level} α {value:.2f} on them is no measurement)"]
        return Assessment(threshold, overall, None, reasons, [])
    if value is None:
        reasons = [f"{level} α {alpha.status}"]
    elif alpha.ci is None:
        reasons = [
            f"{level} α {value:.2f} has no confidence interval "
            f"(needs ≥ {MIN_CI_QUERIES} queries and a bootstrap of ≥ 1 replicate)"
        ]
    else:
        relation = {"ok": "≥", "ambiguous": "<", "inconclusive": "straddles"}[overall]
        reasons = [f"{level} α {alpha.text(2)} {relation} {threshold:g}"]
    if value is not None:
        reasons.append(f"Krippendorff's bands: {band(value)} (≥ 0.800 reliable, 0.667–0.800 tentative)")
    if weakest is not None and (weakest.alpha < threshold or overall != "ok"):
        reasons.append(f"boundary {weakest.label} α {weakest.alpha:.2f} (weakest cut: grade ≥ {weakest.cut} vs below)")
    if overall != "ok":
        reasons += _why(diagnostics, value, threshold, raw, prevalence, ac2)
    guidelines = [
        GuidelineVerdict(row.group, row.alpha, verdict(row.alpha, threshold, row.n_pairable))
        for row in diagnostics.guidelines or []
    ]
    for g, row in zip(guidelines, diagnostics.guidelines or [], strict=True):
        if too_few(row.n_pairable):
            continue
        if g.verdict == "ambiguous":
            reasons.append(
                f"guideline {g.guideline} is ambiguous: {level} α {g.alpha.text(2)} < {threshold:g}; revise it"
            )
        elif g.alpha.value is not None and g.alpha.value < threshold:
            reasons.append(f"guideline {g.guideline} may be ambiguous: {level} α {g.alpha.text(2)}")
    return Assessment(threshold, overall, band(value), reasons, guidelines)


def _why(
    diag: Diagnostics,
    alpha: float | None,
    threshold: float,
    raw: float | None,
    prevalence: dict[str, float | None],
    ac2: float | None,
) -> list[str]:
    """Actionable hints: disputed queries, the kappa paradox, outlying annotators."""
    out = []
    queries = [q.query_id for q in diag.disputed_queries[:3]]
    if queries:
        out.append(f"queries {', '.join(queries)} most disputed")
    shares = {g: s for g, s in prevalence.items() if s is not None}
    if raw is not None and alpha is not None and shares and raw >= 0.8 and alpha < threshold:
        grade, share = max(shares.items(), key=lambda item: item[1])
        out.append(
            f"raw agreement {raw:.2f} but grade {grade} is {share:.0%} of grades: chance correction "
            f"shrinks α and κ (kappa paradox); AC2 {ac2:.2f}"
            if ac2 is not None
            else f"raw agreement {raw:.2f} but grade {grade} is {share:.0%} of grades (kappa paradox)"
        )
    for row in diag.leave_one_out:
        if row.delta is not None and row.delta >= 0.05:
            out.append(f"without {row.annotator} α would be {row.alpha.value:.2f} ({row.delta:+.2f})")
    for bias in diag.bias:
        if abs(bias.bias) >= 0.5:
            out.append(f"{bias.annotator} grades {bias.bias:+.2f} vs the others on shared pairs")
    return out
