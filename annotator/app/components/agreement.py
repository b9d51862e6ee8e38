"""Agreement helpers for the lead pages: the cached report, its headline, tables, flags and disputed pairs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import altair as alt
import pandas as pd
import streamlit as st
from pandas.io.formats.style import Styler
from sqlalchemy.engine import Engine

from annotator.app.text import literal
from annotator.app.views import scale_of
from db.adjudication import DISPUTE_ORDERS, disputes
from db.annotator_models import project_annotator_report
from db.projects import ProjectInfo, current_guideline
from db.store import frames
from eval_core.agreement.report import agreement_report, too_few
from eval_core.agreement.table import DIGITS, coefficient_rows, cut_rows
from eval_core.agreement.types import OK, AgreementReport, Boundary, Coefficient, DisputedPair, GroupAlpha
from eval_core.judges.calibration import (
    CONSENSUS,
    CalibrationReport,
    Comparison,
    GroupCalibration,
    ModelCalibration,
    calibration,
)
from eval_core.thresholds import MIN_VERDICT_PAIRS, SPAMMER_COMPETENCE, SPAMMER_INFORMATION
from eval_core.vocab import AnnotatorKind

PAGES = Path(__file__).resolve().parent.parent / "screens"
ADJUDICATE_KEY = "adjudicate_pair"  # the store's pair id the Adjudication page shows
# Bootstrap replicates for the CIs shown in the app: enough for two stable decimals, cheap at 1M judgments.
APP_BOOTSTRAP = 200
DISPUTED_SHOWN = 25
MISSING = "—"
BELOW = "below threshold"
TOO_FEW = "too few to judge"
POOLED = "all guideline versions pooled"


@dataclass(frozen=True)
class VersionAgreement:
    """Ordinal α of one guideline version's judgments and the boundary its annotators blur most."""

    alpha: Coefficient
    weakest: Boundary | None
    n_units: int
    n_pairable: int  # pairs with at least two grades: under MIN_VERDICT_PAIRS the version is never flagged


@dataclass(frozen=True)
class ProjectAgreement:
    """The project's report over every judgment (α broken down by query) with α per category and per guideline
    version, and the full report of the guideline version in force (None when nothing was graded under it)."""

    report: AgreementReport
    by_category: list[GroupAlpha]
    by_version: dict[str, VersionAgreement]
    in_force: str | None = None
    in_force_report: AgreementReport | None = None

    def scopes(self) -> dict[str, AgreementReport]:
        """The reports a lead can read, by scope, the one the page leads with first: the version in force
        (when anything was graded under it), then every judgment pooled."""
        pooled = {POOLED if self.by_version else "all judgments": self.report}
        if self.in_force_report is None:
            return pooled
        return {f"guideline version {self.in_force} (in force)": self.in_force_report, **pooled}


@dataclass(frozen=True)
class Tile:
    """One headline number: a short label (never truncated), the value, and its CI as a caption."""

    label: str
    value: str
    caption: str


def pair_id_of(engine: Engine, project: str, pair: DisputedPair) -> int:
    """The store's pair id of a disputed pair."""
    return frames.pair_id(engine, project, pair.query_id, pair.fragment_id)


@st.cache_resource(max_entries=2, show_spinner=False)
def cached_judgments(_engine: Engine, url: str, project: str, fingerprint: tuple) -> pd.DataFrame:
    """The project's judgments, shared read-only across reruns and sessions until the fingerprint moves."""
    return frames.judgments_frame(_engine, project)


@st.cache_data(max_entries=16, show_spinner=False)
def cached_agreement(
    _engine: Engine,
    url: str,
    project: str,
    fingerprint: tuple,
    scale: tuple[int, int],
    threshold: float,
    in_force: str | None = None,
) -> ProjectAgreement | None:
    """The agreement report (α by query, by guideline version; by category when queries have one), computed
    once per judgments fingerprint: 1M judgments take seconds, a cached rerun milliseconds."""
    frame = cached_judgments(_engine, url, project, fingerprint)
    if frame.empty:
        return None
    report = agreement_report(
        frame, scale=scale, threshold=threshold, by="query", bootstrap=APP_BOOTSTRAP, top=DISPUTED_SHOWN
    )
    by_category: list[GroupAlpha] = []
    if "category" in frame.columns and frame["category"].notna().any():
        by_category = (
            agreement_report(frame, scale=scale, threshold=threshold, by="category", bootstrap=0, top=0).diagnostics.by
            or []
        )
    by_version = {}
    current = None
    if "guideline" in frame.columns:
        for version, part in frame.dropna(subset=["guideline"]).groupby("guideline", sort=False):
            sub = agreement_report(
                part.drop(columns=["guideline"]), scale=scale, threshold=threshold, bootstrap=APP_BOOTSTRAP, top=0
            )
            by_version[version_label(version)] = VersionAgreement(
                sub.alpha["ordinal"], sub.weakest, sub.n_units, sub.n_pairable_units
            )
            if version_label(version) == in_force:
                current = sub
    return ProjectAgreement(report, by_category, by_version, in_force, current)


def project_agreement(engine: Engine, project: ProjectInfo) -> tuple[pd.DataFrame, ProjectAgreement | None]:
    """Judgments and agreement of a project (None without judgments), from cache when nothing changed."""
    fingerprint = frames.judgments_fingerprint(engine, project.name)
    url = str(engine.url)
    guideline = current_guideline(engine, project.name)
    with st.spinner("Computing agreement…"):
        frame = cached_judgments(engine, url, project.name, fingerprint)
        agreement = cached_agreement(
            engine,
            url,
            project.name,
            fingerprint,
            scale_of(project),
            float(project.threshold),
            None if guideline is None else str(guideline.version),
        )
    return frame, agreement


def open_adjudication(engine: Engine, project: str, pair: DisputedPair) -> None:
    """Carry a disputed pair (its store id) to the adjudication page, where it opens selected."""
    st.session_state[ADJUDICATE_KEY] = pair_id_of(engine, project, pair)
    st.switch_page(PAGES / "lead_adjudicate.py")


def value_text(c: Coefficient, digits: int = 2) -> str:
    """The value alone, or "—" when undefined."""
    return MISSING if c.value is None else f"{c.value:.{digits}f}"


def ci_caption(c: Coefficient, digits: int = 2, why: str = "") -> str:
    """`95% CI 0.41 – 0.62`, or why there is none (`why`: the report's reason, e.g. too few queries)."""
    if c.value is None:
        return c.status
    return f"95% CI {c.ci_text(digits, ' – ')}" if c.ci else f"no CI: {why}" if why else "no CI"


def no_ci_reason(report: AgreementReport) -> str:
    """Why the report's coefficients may lack a CI: the bootstrap's own reason (too few queries to resample, as
    `qrelkit agreement` prints it), else the percentile interval's (most resamples left it undefined)."""
    if report.bootstrap.status != OK:
        return report.bootstrap.status.removeprefix("no CIs: ")
    return "undefined in most resamples"


def _tile(label: str, c: Coefficient, caption: str, n_pairable: int, rest: str) -> Tile:
    """A headline tile: the value and its CI, or — over too few pairs — "too few to judge" with the n, the
    value on them only in the caption, named as no measurement."""
    if c.value is None or not too_few(n_pairable):
        return Tile(label, value_text(c), caption + rest)
    return Tile(
        label,
        TOO_FEW,
        f"n = {n_pairable} pairs with two grades, fewer than the {MIN_VERDICT_PAIRS} a verdict needs "
        f"(the value on them, {value_text(c)}, is no measurement){rest}",
    )


def headline(report: AgreementReport, scope: str = "all judgments") -> list[Tile]:
    """Cohen's κ (quadratic-weighted, unweighted) and ordinal Krippendorff's α, each with its CI and its scope
    (which judgments): the numbers a lead reads first. With three or more annotators κ is the mean over
    annotator pairs (Light's κ). Over fewer than MIN_VERDICT_PAIRS pairs with two grades each tile says
    "too few to judge" and gives the n instead of a final-looking number."""
    pairs = len(report.kappa)
    kappa = report.light_kappa
    suffix = ("" if pairs <= 1 else f" · mean of {pairs} annotator pairs (Light's κ)") + f" · {scope}"
    why = no_ci_reason(report)
    n = report.n_pairable_units
    return [
        _tile(
            "Cohen's κ, quadratic-weighted",
            kappa["quadratic"],
            ci_caption(kappa["quadratic"], why=why),
            n,
            f" · quadratic weights{suffix}",
        ),
        _tile("Cohen's κ, unweighted", kappa["unweighted"], ci_caption(kappa["unweighted"], why=why), n, suffix),
        _tile(
            "Krippendorff's α",
            report.alpha["ordinal"],
            ci_caption(report.alpha["ordinal"], why=why),
            n,
            f" · ordinal, all annotators · {scope}",
        ),
    ]


def pooled_line(agreement: ProjectAgreement) -> str | None:
    """The pooled α, labelled as such, when the page leads with the version in force; else None."""
    current = agreement.in_force_report
    if current is None or current.n_units == agreement.report.n_units:  # every judgment is under it
        return None
    alpha = agreement.report.alpha["ordinal"]
    return (
        f"All guideline versions pooled: ordinal α {alpha.text(2)} on {agreement.report.n_units} pairs — not "
        f"the agreement under the guideline in force (version {agreement.in_force}, above)."
    )


def status_text(c: Coefficient, threshold: float, n_pairable: int | None = None) -> str:
    """A coefficient's status for people: why it is undefined, no verdict over fewer than MIN_VERDICT_PAIRS
    pairs with two grades (when `n_pairable` is given), "below threshold" under it, else "ok"."""
    if c.value is None:
        return c.status
    if n_pairable is not None and too_few(n_pairable):
        return f"no verdict: n = {n_pairable} < {MIN_VERDICT_PAIRS} pairs"
    return BELOW if c.value < threshold else c.status


def styled(frame: pd.DataFrame) -> Styler:
    """A table for people: numbers to three decimals, "—" wherever a value is missing."""
    return frame.style.format(precision=3, na_rep=MISSING)


TABLE_COLUMNS = ["coefficient", "value", "95% CI", "status", "scope"]


def _frame(rows: list[tuple[str, Coefficient]], threshold: float, scope: str, n_pairable: int) -> pd.DataFrame:
    """Rows of eval_core.agreement.table as a page table: value, CI, status (the reason when undefined, "below
    threshold" under the project's threshold) and which judgments it covers."""
    return pd.DataFrame(
        [
            {
                "coefficient": name,
                "value": c.value,
                "95% CI": c.ci_text(DIGITS, " – ") or MISSING,
                "status": status_text(c, threshold, n_pairable),
                "scope": scope,
            }
            for name, c in rows
        ],
        columns=TABLE_COLUMNS,
    )


def coefficients_table(report: AgreementReport, threshold: float, scope: str) -> pd.DataFrame:
    """Every coefficient side by side (the CLI's table, eval_core.agreement.table.coefficient_rows)."""
    return _frame(coefficient_rows(report), threshold, scope, report.n_pairable_units)


def cuts_table(report: AgreementReport, threshold: float, scope: str) -> pd.DataFrame:
    """α of the scale binarised at each grade, labelled by the boundary it tests (e.g. 1|2)."""
    return _frame(cut_rows(report), threshold, scope, report.n_pairable_units)


def kappa_table(report: AgreementReport) -> pd.DataFrame:
    """Cohen's κ of every annotator pair, each weighting as `value [CI]`, "—" when undefined."""
    return pd.DataFrame(
        [
            {
                "annotator A": k.a,
                "annotator B": k.b,
                "pairs both graded": k.n,
                **{f"κ {w}": (c.text(2) if c.defined else MISSING) for w, c in k.kappa.items()},
            }
            for k in report.kappa
        ]
    )


@dataclass(frozen=True)
class Flag:
    """A banner (numbers and fixed words only) and the reasons behind it, shown as literal text."""

    banner: str
    reasons: list[str]


def agreement_flags(agreement: ProjectAgreement, threshold: float) -> list[Flag]:
    """One flag per guideline version whose ordinal α is under the threshold, naming its ambiguous boundary,
    then one for the whole project when it is under too, with the report's reasons; never over fewer than
    MIN_VERDICT_PAIRS pairs with two grades (three pairs say nothing about a guideline)."""
    flags = []
    for version, sub in sorted(agreement.by_version.items(), key=lambda item: _version_key(item[0])):
        if sub.alpha.value is not None and sub.alpha.value < threshold and not too_few(sub.n_pairable):
            boundary = sub.weakest
            flags.append(
                Flag(
                    f"Guideline version {version} flagged: ordinal α {sub.alpha.text(2)} < {threshold:g} "
                    f"on its {sub.n_units} pairs."
                    + (f" The ambiguous boundary is {boundary.label} (α {boundary.alpha:.2f})." if boundary else ""),
                    [],
                )
            )
    report = agreement.report
    alpha = report.alpha["ordinal"]
    if alpha.value is not None and alpha.value < threshold and not too_few(report.n_pairable_units):
        boundary = report.weakest
        flags.append(
            Flag(
                f"All judgments: ordinal α {alpha.text(2)} < {threshold:g}"
                + (f"; the ambiguous boundary is {boundary.label} (α {boundary.alpha:.2f})" if boundary else "")
                + f". Verdict: {report.assessment.verdict}. Scope: "
                + (f"{POOLED}." if agreement.by_version else "no guideline version."),
                report.assessment.reasons,
            )
        )
    return flags


def _version_key(version: str) -> tuple[bool, int, str]:
    """Sort guideline versions numerically, labels like '(none)' last."""
    return (not version.isdigit(), int(version) if version.isdigit() else 0, version)


def version_label(value: Any) -> str:
    """A guideline version as people write it: '2', not '2.0' (NA-holding columns come back as floats)."""
    text = str(value)
    try:
        number = float(text)
    except ValueError:
        return text
    return str(int(number)) if number.is_integer() else text


def guideline_trend(agreement: ProjectAgreement) -> pd.DataFrame:
    """α with its CI per guideline version, oldest first, for the trend chart (undefined versions left out)."""
    rows = []
    for version, sub in sorted(agreement.by_version.items(), key=lambda item: _version_key(item[0])):
        if sub.alpha.value is None:
            continue
        low, high = sub.alpha.ci or (None, None)
        rows.append({"guideline": version, "value": sub.alpha.value, "low": low, "high": high, "n": sub.n_units})
    return pd.DataFrame(rows, columns=["guideline", "value", "low", "high", "n"])


def group_status(r: GroupAlpha, threshold: float) -> str:
    """A group's verdict, or none over a handful of pairs: α on fewer than MIN_VERDICT_PAIRS pairs with two
    grades swings by a pair, so it is shown with its n and judged by nobody."""
    return status_text(r.alpha, threshold, r.n_pairable)


def _group_table(rows: list[GroupAlpha], name: str, threshold: float) -> pd.DataFrame:
    """α per group (query or category) as a table, lowest first."""
    return pd.DataFrame(
        [
            {
                name: r.group,
                "ordinal α": r.alpha.value,
                "status": group_status(r, threshold),
                "pairs": r.n_units,
                "pairs with ≥ 2 grades": r.n_pairable,
            }
            for r in rows
        ],
        columns=[name, "ordinal α", "status", "pairs", "pairs with ≥ 2 grades"],
    )


def breakdown_tables(agreement: ProjectAgreement, threshold: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """α per query and per category (over every judgment)."""
    return (
        _group_table(agreement.report.diagnostics.by or [], "query", threshold),
        _group_table(agreement.by_category, "category", threshold),
    )


def disputed_pairs(agreement: ProjectAgreement | None) -> list[DisputedPair]:
    """The report's most disputed pairs, widest spread first (none without judgments)."""
    return [] if agreement is None else list(agreement.report.diagnostics.disputed_pairs)


def pair_key(pair: DisputedPair) -> tuple[str, str]:
    """(query id, fragment id) of a disputed pair."""
    return pair.key


def disputed_line(pair: DisputedPair) -> str:
    """A disputed pair with every grade, as one plain-text line."""
    grades = ", ".join(f"{a}: {'can’t judge' if g is None else g}" for a, g in pair.grades.items())
    return f"{pair.query_id} · {pair.fragment_id} — spread {pair.spread} — {grades}"


# ---- model judges beside the humans ----

COMPARISON_HEADERS = {
    "against": "Against",
    "n": "Pairs graded by both",
    "unweighted": "κ unweighted",
    "linear": "κ linear",
    "quadratic": "κ quadratic",
    "alpha": "α ordinal",
    "mean_difference": "Mean diff.",
}
SIDE_HEADERS = {"who": "Who", "on": "On", "n": "Pairs", "quadratic": "κ quadratic", "alpha": "α ordinal"}
GROUP_HEADERS = {
    "group": "Group",
    "n": "Pairs graded by both",
    "quadratic": "κ quadratic vs consensus",
    "alpha": "α ordinal vs consensus",
    "mean_difference": "Mean difference",
    "humans": "Humans' α on the same pairs",
}
COMPARISON_DIGITS = {"unweighted": 3, "linear": 3, "quadratic": 3, "alpha": 3, "mean_difference": 2}
GROUP_DIGITS = {"quadratic": 3, "alpha": 3, "mean_difference": 2, "humans": 3}


@st.cache_data(max_entries=16, show_spinner=False)
def cached_calibration(
    _engine: Engine, url: str, project: str, fingerprint: tuple, scale: tuple[int, int]
) -> CalibrationReport | None:
    """Every model judge against the humans (None when no model judge graded), once per judgments fingerprint;
    the consensus takes the lead's decisions like a release does."""
    frame = cached_judgments(_engine, url, project, fingerprint)
    if frame.empty or not frame["annotator_kind"].eq(AnnotatorKind.MODEL).any():
        return None
    adjudications = frames.adjudications_frame(_engine, project)[["query_id", "fragment_id", "grade"]]
    return calibration(frame, scale=scale, adjudications=adjudications)


def project_calibration(engine: Engine, project: ProjectInfo) -> CalibrationReport | None:
    """The project's model-judge calibration, from cache when nothing changed."""
    fingerprint = frames.judgments_fingerprint(engine, project.name)
    with st.spinner("Comparing model judges with the humans…"):
        return cached_calibration(engine, str(engine.url), project.name, fingerprint, scale_of(project))


def _comparison_row(against: str, c: Comparison) -> dict[str, Any]:
    """One reference a model is compared with (κ, α and mean difference; None where undefined)."""
    return {
        "against": against,
        "n": c.n,
        **{w: k.value for w, k in c.kappa.items()},
        "alpha": c.alpha.value,
        "mean_difference": c.bias.mean_difference,
    }


def comparison_table(m: ModelCalibration) -> pd.DataFrame:
    """A model against the human consensus and each human, then the humans among themselves on its pairs."""
    rows = [_comparison_row(CONSENSUS, m.vs_consensus), *(_comparison_row(c.reference, c) for c in m.vs_humans)]
    rows.append(
        {
            "against": "humans with each other (same pairs, mean pairwise κ)",
            "n": m.humans.n_pairable,
            **{w: k.value for w, k in m.humans.kappa.items()},
            "alpha": m.humans.alpha.value,
            "mean_difference": None,
        }
    )
    return pd.DataFrame(rows, columns=list(COMPARISON_HEADERS))


def side_by_side(report: AgreementReport, calibrated: CalibrationReport) -> pd.DataFrame:
    """Human–human agreement on all pairs, then per model judge: the model with the consensus and the humans
    with each other on the model's pairs (quadratic κ, ordinal α)."""
    rows = [
        {
            "who": "human–human",
            "on": "all pairs with two human grades",
            "n": report.n_pairable_units,
            "quadratic": report.light_kappa["quadratic"].value,
            "alpha": report.alpha["ordinal"].value,
        }
    ]
    for m in calibrated.models:
        rows.append(
            {
                "who": f"{m.model} vs human consensus",
                "on": f"pairs {m.model} graded",
                "n": m.vs_consensus.n,
                "quadratic": m.vs_consensus.kappa["quadratic"].value,
                "alpha": m.vs_consensus.alpha.value,
            }
        )
        rows.append(
            {
                "who": "human–human",
                "on": f"pairs {m.model} graded",
                "n": m.humans.n_pairable,
                "quadratic": m.humans.kappa["quadratic"].value,
                "alpha": m.humans.alpha.value,
            }
        )
    return pd.DataFrame(rows, columns=list(SIDE_HEADERS))


def group_table(groups: list[GroupCalibration]) -> pd.DataFrame:
    """A model against the consensus within each category or guideline version, beside the humans there."""
    return pd.DataFrame(
        [
            {
                "group": g.group,
                "n": g.vs_consensus.n,
                "quadratic": g.vs_consensus.kappa["quadratic"].value,
                "alpha": g.vs_consensus.alpha.value,
                "mean_difference": g.vs_consensus.bias.mean_difference,
                "humans": g.humans.alpha.value,
            }
            for g in groups
        ],
        columns=list(GROUP_HEADERS),
    )


def confusion_table(c: Comparison, scale: tuple[int, int]) -> pd.DataFrame:
    """The confusion matrix against the consensus: a row per consensus grade, a column per model grade."""
    grades = [str(g) for g in range(scale[0], scale[1] + 1)]
    frame = pd.DataFrame(c.confusion, columns=[f"model {g}" for g in grades])
    return frame.assign(**{"consensus": grades})[["consensus", *frame.columns]]


# --- Annotators as the models see them (Dawid–Skene's confusion, MACE's competence, the spammer flag)

MODEL_HEADERS = {
    "annotator": "Annotator",
    "n": "Grades",
    "n_queries": "Queries",
    "competence": "MACE competence",
    "ci": "95% CI",
    "information": "Spammer score",
    "control_accuracy": "Control accuracy",
    "spammer": "Spammer",
}


@st.cache_data(max_entries=8, show_spinner=False)
def cached_annotator_models(_engine: Engine, url: str, project: str, fingerprint: tuple) -> dict[str, Any]:
    """The annotator models' report (db.annotator_models) as a dict with control accuracy on each annotator,
    computed once per judgments fingerprint with the app's bootstrap and seed 0 (`qrelkit annotators`'s)."""
    report, accuracy = project_annotator_report(_engine, project, APP_BOOTSTRAP, 0)
    data = report.to_dict()
    for entry in data["annotators"]:
        entry["control_accuracy"] = accuracy.get(entry["annotator"])
    return data


def _three(value: float | None) -> str:
    return MISSING if value is None else f"{value:.3f}"


def annotator_models_table(data: dict[str, Any]) -> pd.DataFrame:
    """One row per annotator: grades, queries, competence and its CI, spammer score, control accuracy, flag
    (numbers as text with three decimals, as `qrelkit annotators` prints them; names escaped for st.table)."""
    rows = [
        {
            "annotator": literal(a["annotator"]),  # st.table renders Markdown in its cells
            "n": str(a["n"]),
            "n_queries": str(a["n_queries"]),
            "competence": _three(a["competence"]),
            "ci": MISSING
            if a["competence_ci"] is None
            else f"{a['competence_ci'][0]:.3f} – {a['competence_ci'][1]:.3f}",
            "information": _three(a["information"]),
            "control_accuracy": _three(a["control_accuracy"]),
            "spammer": "yes" if a["spammer"] else "no",
        }
        for a in data["annotators"]
    ]
    return pd.DataFrame(rows, columns=list(MODEL_HEADERS)).rename(columns=MODEL_HEADERS)


def model_confusion_frame(data: dict[str, Any], annotator: str) -> pd.DataFrame:
    """Long frame (true, given, p) of one annotator's Dawid–Skene confusion (p None where the model has no such
    true grade)."""
    entry = next(a for a in data["annotators"] if a["annotator"] == annotator)
    grades = data["grades"]
    return pd.DataFrame(
        [
            {"true": t, "given": g, "p": entry["confusion"][i][j]}
            for i, t in enumerate(grades)
            for j, g in enumerate(grades)
        ]
    )


def model_confusion_table(data: dict[str, Any], annotator: str) -> pd.DataFrame:
    """The confusion matrix as the page's table: a row per true grade, a column per grade given."""
    entry = next(a for a in data["annotators"] if a["annotator"] == annotator)
    grades = data["grades"]
    return pd.DataFrame(
        [[f"true {t}", *(_three(v) for v in row)] for t, row in zip(grades, entry["confusion"], strict=True)],
        columns=["", *(f"given {g}" for g in grades)],
    )


def model_confusion_chart(frame: pd.DataFrame, annotator: str) -> alt.LayerChart:
    """One annotator's estimated confusion as a heatmap with each probability printed in its cell."""
    frame = frame.assign(label=[MISSING if v is None or pd.isna(v) else f"{v:.2f}" for v in frame["p"]])
    base = alt.Chart(frame).encode(
        x=alt.X("given:O", title="grade given"),
        y=alt.Y("true:O", title="true grade (Dawid-Skene)"),
        tooltip=[
            alt.Tooltip("true:O", title="true grade"),
            alt.Tooltip("given:O", title="grade given"),
            alt.Tooltip("p:Q", format=".3f", title="P(given | true)"),
        ],
    )
    cells = base.mark_rect(stroke="white").encode(
        color=alt.Color("p:Q", title="P(given | true)", scale=alt.Scale(domain=[0, 1], scheme="blues"))
    )
    text = base.mark_text(baseline="middle", fontSize=14, fontWeight="bold").encode(text="label:N")
    return (cells + text).properties(
        title=alt.Title(
            f"Estimated confusion of {annotator}", subtitle="rows: the true grade; columns: the grade given"
        ),
        width=alt.Step(70),
        height=alt.Step(70),
        autosize=alt.AutoSizeParams(type="pad", contains="padding"),
    )


def annotator_models_section(engine: Engine, project: Any) -> None:
    """Agreement-page section: every person under Dawid–Skene and MACE — the table, spammer advice, and the
    chosen annotator's confusion matrix as a heatmap and a table (user strings shown literally)."""
    st.subheader("Annotators as the models see them")
    st.caption(
        "Dawid-Skene learns each person's confusion matrix and MACE their competence (the chance they grade "
        "from knowledge, not at random), with control pairs and adjudications as known truth; the CI resamples "
        f"queries ({APP_BOOTSTRAP} replicates). Spammer: competence CI below {SPAMMER_COMPETENCE:g} and a "
        f"spammer score (how much the confusion rows differ; 0 = grades ignore the truth) below "
        f"{SPAMMER_INFORMATION:g}. Same numbers: `qrelkit annotators --project`."
    )
    fingerprint = frames.judgments_fingerprint(engine, project.name)
    with st.spinner("Fitting the annotator models…"):
        data = cached_annotator_models(engine, str(engine.url), project.name, fingerprint)
    if not data["annotators"]:
        st.info("No human grades to fit a model on yet.")
        return
    st.table(annotator_models_table(data))
    for a in data["annotators"]:
        if a["spammer"]:
            st.warning("Spammer flagged", icon=":material/person_off:")
            st.text(a["advice"])
    names = [a["annotator"] for a in data["annotators"]]
    chosen = st.selectbox("Annotator (confusion matrix)", names, index=0)
    left, right = st.columns(2)
    with left:
        st.altair_chart(model_confusion_chart(model_confusion_frame(data, chosen), chosen), width="content")
    with right:
        st.caption("P(grade given | true grade), each row sums to 1 over the grades given.")
        st.table(model_confusion_table(data, chosen))


def dispute_order(engine: Engine, project: Any, every: pd.DataFrame) -> pd.DataFrame:
    """Adjudicate-page picker of the queue's order (db.adjudication.DISPUTE_ORDERS) and the disputes in it: by
    doubt, the pairs Dawid–Skene is least sure of come first (posterior entropy, the lead's settled grades as
    known truth)."""
    order = st.segmented_control(
        "Order",
        list(DISPUTE_ORDERS),
        default="spread",
        help=" · ".join(f"{name}: {text}" for name, text in DISPUTE_ORDERS.items()),
    )
    if order in (None, "spread"):
        return every
    with st.spinner("Fitting Dawid-Skene…"):
        ordered = disputes(engine, project.name, order)
    st.caption(
        "Least sure first: each pair's posterior entropy in bits (0 = settled; 2 = all four grades equally "
        "likely) and its top posterior — " + ", ".join(f"{e:.2f} bits" for e in ordered["entropy"].head(3)) + " …"
    )
    return ordered
