"""`qrelkit agreement` (is the guideline understood?) and `qrelkit consensus` (one label per pair)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from annotator.cli.common import LazyChoices, scale_type
from eval_core.errors import InputError
from eval_core.thresholds import AGREEMENT_THRESHOLD

DEFAULT_SCALE = (0, 3)

if TYPE_CHECKING:
    import pandas as pd

    from eval_core.agreement.reference import ReferenceCheck
    from eval_core.agreement.types import AgreementReport, Coefficient
    from eval_core.judges.calibration import CalibrationReport, Comparison


def with_references(frame, names: Sequence[str]):
    """The judgments with the annotators `names` marked as references (annotator_kind 'reference'); a
    ValueError when one has no judgment in the file."""
    if not names:
        return frame
    have = set(frame["annotator"].astype(str))
    missing = [n for n in names if n not in have]
    if missing:
        raise ValueError(f"--reference {', '.join(missing)}: no judgments by that annotator in the file")
    frame = frame.copy()
    if "annotator_kind" not in frame.columns:
        frame["annotator_kind"] = "human"
    frame.loc[frame["annotator"].astype(str).isin(list(names)).to_numpy(), "annotator_kind"] = "reference"
    return frame


def judgments_on_scale(args: argparse.Namespace):
    """The judgments file read at --scale, else on the scale the file names (qrelkit's exports do), else 0-3;
    args.scale is set to the scale read. On the default 0-3, a grade outside it also says how to name the scale."""
    from eval_core.io.judgments import declared_scale, read_judgments

    named = args.scale is not None
    if not named:
        args.scale = declared_scale(args.judgments) or DEFAULT_SCALE
    try:
        return read_judgments(args.judgments, args.scale, keep=args.keep, progress=True)
    except InputError as exc:
        if named or args.scale != DEFAULT_SCALE or "outside the scale" not in exc.problem:
            raise
        raise InputError(
            exc.path, exc.line, f"{exc.problem}; grades on another scale need --scale LOW-HIGH, e.g. --scale 1-5"
        ) from None


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `agreement` and `consensus` to the `qrelkit` parser."""
    p = subparsers.add_parser(
        "agreement",
        help="inter-annotator agreement (κ, α, AC1/AC2) with bootstrap CIs",
        description="Agreement of a judgments file (JSONL/CSV with query_id, fragment_id, "
        "annotator, grade; empty grade = can't judge).",
    )
    p.add_argument("judgments", metavar="JUDGMENTS")
    p.add_argument(
        "--scale",
        type=scale_type,
        default=None,
        help="grading scale low-high (default: the scale the file names, as qrelkit's exports do, else 0-3)",
    )
    p.add_argument(
        "--level",
        choices=["ordinal", "nominal", "interval"],
        default="ordinal",
        help="level of Krippendorff's α used for the verdict (default ordinal)",
    )
    p.add_argument(
        "--threshold",
        type=float,
        default=AGREEMENT_THRESHOLD,
        help="α below this marks the guideline ambiguous (default %(default)s)",
    )
    p.add_argument(
        "--by",
        choices=["query", "category", "guideline", "kind"],
        help="α per query, category or guideline; kind: human–human beside each model judge against "
        "each human and the human consensus (κ, α, bias)",
    )
    p.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="ANNOTATOR",
        help="count this annotator as a model judge (repeatable; a file's annotator_kind column does "
        "the same); model judges never count in human–human agreement",
    )
    p.add_argument("--bootstrap", type=int, default=1000, help="query-clustered bootstrap replicates (0: no CIs)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (same seed, same CIs)")
    p.add_argument("--format", choices=["table", "json"], default="table")
    p.add_argument(
        "--keep",
        choices=["error", "latest"],
        default="error",
        help="duplicate (pair, annotator) records: error (default) or keep the latest",
    )
    p.add_argument(
        "--cross-check",
        action="store_true",
        help="recompute α with krippendorff.alpha and κ with scikit-learn and report the largest "
        "difference (exit 1 above 1e-9; needs `pip install qrelkit[reference]`)",
    )
    p.add_argument(
        "--control",
        metavar="CONTROL.qrels",
        help="settled grades of control pairs (TREC qrels, grade − LOW as gain): each annotator's "
        "accuracy and linear-weighted κ against them, by guideline and over time, with drift alerts",
    )
    p.add_argument(
        "--reference",
        action="append",
        metavar="NAME",
        help="annotator NAME is a reference (e.g. nist; repeatable; a file's annotator_kind column may say so "
        "too): left out of human-human agreement, and each person is measured against it (vs reference: "
        "accuracy and linear-weighted κ with 95%% CIs over queries)",
    )
    p.set_defaults(func=cmd_agreement)

    c = subparsers.add_parser(
        "consensus",
        help="one graded label per pair: qrels with provenance",
        description="Turn several grades per (query, fragment) into graded qrels.",
    )
    c.add_argument("judgments", metavar="JUDGMENTS")
    c.add_argument(
        "--rule",
        choices=LazyChoices("eval_core.consensus", "RULES"),
        metavar="RULE",
        default="median",
        help="median (lower on ties), majority (ties → lower), mean (half up), min, or an annotator model: "
        "dawid-skene, mace, glad (crowd-kit's defaults; adjudications are known truth; JSONL lines carry each "
        "pair's posterior)",
    )
    c.add_argument(
        "--decision",
        default="most-probable",
        metavar="DECISION",
        choices=LazyChoices("eval_core.consensus", "DECISIONS"),
        help="a model rule's grade from the posterior: %(choices)s (default most-probable; least-abs-error: "
        "smallest expected absolute error, grades as ordered)",
    )
    c.add_argument(
        "--adjudications",
        metavar="FILE",
        help="lead decisions (query_id, fragment_id, grade; e.g. `qrelkit export --adjudications`); they win",
    )
    c.add_argument(
        "--with-models",
        action="store_true",
        help="let model judges vote (default: left out, as in `agreement` and a humans-only release)",
    )
    c.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="NAME",
        help="annotator NAME is a model judge (files without annotator_kind; repeatable)",
    )
    c.add_argument(
        "--grades",
        default="gains",
        metavar="GRADES",
        choices=LazyChoices("eval_core.io.writers", "QrelsGrades"),
        help="%(choices)s (default gains): TREC and BEIR qrels hold grade minus the scale's lowest "
        "grade, as a release's export does; JSONL keeps the grades as judged",
    )
    c.add_argument("--min-grades", type=int, default=1, help="leave out pairs with fewer real grades (default 1)")
    c.add_argument("-o", "--output", required=True, metavar="OUT")
    c.add_argument("--format", choices=["trec", "beir", "jsonl"], default="trec")
    c.add_argument(
        "--scale",
        type=scale_type,
        default=None,
        help="grading scale low-high (default: the scale the file names, as qrelkit's exports do, else 0-3)",
    )
    c.add_argument("--keep", choices=["error", "latest"], default="error")
    c.set_defaults(func=cmd_consensus)


def cmd_agreement(args: argparse.Namespace) -> int:
    """Print the report as a table a lead can read, or as JSON; with --cross-check, the reference libraries' verdict."""
    from eval_core.agreement.report import agreement_report

    if args.cross_check:
        from eval_core.agreement.reference import reference_libraries

        try:
            reference_libraries()
        except ImportError as exc:  # the optional [reference] extra is missing: the CLI's one error path, exit 2
            raise RuntimeError(str(exc)) from None
    frame = with_references(judgments_on_scale(args), args.reference or ())
    by_kind = args.by == "kind"
    calibrated = None
    try:
        report = agreement_report(
            frame,
            scale=args.scale,
            level=args.level,
            threshold=args.threshold,
            by=None if by_kind else args.by,
            bootstrap=args.bootstrap,
            seed=args.seed,
            progress=True,
            models=args.model,
        )
        if by_kind:
            from eval_core.judges.calibration import calibration

            calibrated = calibration(
                frame, scale=args.scale, models=args.model, bootstrap=args.bootstrap, seed=args.seed
            )
    except ValueError as exc:
        raise InputError(args.judgments, None, str(exc)) from None
    checks = None
    if args.cross_check:
        from eval_core.agreement.reference import cross_check
        from eval_core.agreement.report import human_judgments

        checks = cross_check(human_judgments(frame, args.model), args.scale, report)
    from annotator.cli.control import format_control, read_control

    control = read_control(args.control, frame, args) if args.control else None
    from eval_core.agreement.control import vs_reference

    references = vs_reference(frame, args.scale, replicates=args.bootstrap, seed=args.seed, threshold=args.threshold)
    if args.format == "json":
        data = report.to_dict()
        if calibrated is not None:
            data = {"human_human": data, "calibration": calibrated.to_dict()}
        if control is not None:
            data["control"] = control.to_dict()
        if references:
            data["vs_reference"] = {name: r.to_dict() for name, r in references.items()}
        if checks is not None:
            data["cross_check"] = [c.to_dict() for c in checks]
        json.dump(data, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    else:
        if calibrated is not None:
            sys.stdout.write("human–human agreement (model judges left out):\n")
        sys.stdout.write(format_table(report))
        if calibrated is not None:
            sys.stdout.write(format_calibration(calibrated))
        if checks is not None:
            sys.stdout.write(format_cross_check(checks))
        if control is not None:
            sys.stdout.write(format_control(control))
        for name, against in references.items():
            sys.stdout.write("\n" + format_control(against, f"vs reference {name}"))
    return 1 if checks is not None and not all(c.agrees for c in checks) else 0


def format_cross_check(checks: list[ReferenceCheck]) -> str:
    """One line per coefficient: the reference library, how many values compared, the largest difference."""
    lines = ["", "cross-check against the reference libraries (largest |qrelkit − reference|):"]
    for c in checks:
        where = f" ({c.worst})" if c.worst else ""
        lines.append(
            f"  {c.coefficient:<28}{c.library:<36}{c.compared:>4} compared  "
            f"max |diff| {c.largest_difference:.1e}{where}"
            + (f"  {c.mismatched} defined on one side only" if c.mismatched else "")
            + ("" if c.agrees else "  MISMATCH")
        )
    verdict = "agree" if all(c.agrees for c in checks) else "DISAGREE"
    lines.append(f"  qrelkit and the reference libraries {verdict} (tolerance 1e-9)")
    return "\n".join(lines) + "\n"


def format_table(report: AgreementReport) -> str:
    """Plain-text report: chance-corrected coefficients beside raw agreement and prevalence (kappa paradox); the
    coefficients are eval_core.agreement.table's rows, as the Agreement page shows them ("*": the level the
    verdict reads)."""
    from eval_core.agreement.table import coefficient_rows, cut_rows

    boot = report.bootstrap
    lines = [
        f"{report.n_units} pairs, {report.n_queries} queries, {report.n_annotators} annotators, "
        f"{report.n_grades} grades ({report.n_cant_judge} can't judge), "
        f"{report.n_pairable_units} pairs with ≥ 2 grades; scale {report.scale[0]}-{report.scale[1]}",
        f"CIs: {boot.confidence:.0%} percentile, {boot.replicates} replicates resampling queries, seed {boot.seed}"
        if boot.replicates
        else f"CIs: none ({'no bootstrap' if boot.status == 'ok' else boot.status})",
        "",
        "grade prevalence  "
        + "  ".join(f"{g}: {s:.1%}" if s is not None else f"{g}: -" for g, s in report.prevalence.items()),
    ]
    primary = f"Krippendorff α ({report.level})"
    rows = [(name + (" *" if name == primary else ""), c) for name, c in coefficient_rows(report) + cut_rows(report)]
    width = max(len(name) for name, _ in rows) + 2
    lines += [f"{name:<{width}}{_c(c)}" for name, c in rows]
    lines += [
        "",
        "Cohen's κ per annotator pair (on pairs both graded):",
        f"  {'a':<12}{'b':<12}{'n':>6}  {'unweighted':<28}{'linear':<28}quadratic",
    ]
    for k in report.kappa:
        lines.append(
            f"  {k.a:<12}{k.b:<12}{k.n:>6}  {_c(k.kappa['unweighted']):<28}{_c(k.kappa['linear']):<28}"
            f"{_c(k.kappa['quadratic'])}"
        )
    diag = report.diagnostics
    lines += ["", f"{report.level} α without each annotator (Δ vs all):"]
    lines += [
        f"  {r.annotator:<16}{_c(r.alpha):<30}" + (f"Δ {r.delta:+.3f}" if r.delta is not None else "")
        for r in diag.leave_one_out
    ]
    lines += ["", "grade bias (mean grade − mean of the others on the same pairs):"]
    lines += [
        f"  {r.annotator:<16}{r.bias:+.3f}  (n {r.n_shared}, mean {r.mean_grade:.2f} vs {r.others_mean:.2f})"
        for r in diag.bias
    ]
    for title, groups in ((f"by {diag.by_field}", diag.by), ("by guideline version", diag.guidelines)):
        if groups:
            lines += ["", f"{report.level} α {title} (lowest first):"]
            lines += [f"  {g.group:<24}{_c(g.alpha):<30}({g.n_pairable} pairs with ≥ 2 grades)" for g in groups[:20]]
            if len(groups) > 20:
                lines.append(f"  … {len(groups) - 20} more (--format json lists all)")
    if diag.disputed_pairs:
        lines += ["", "most disputed pairs:"]
        for d in diag.disputed_pairs:
            grades = ", ".join(f"{a}={'?' if g is None else g}" for a, g in d.grades.items())
            notes = "; ".join(f"{a}: {n}" for a, n in (d.notes or {}).items())
            lines.append(
                f"  {d.query_id} / {d.fragment_id}  spread {d.spread}: {grades}" + (f"  — {notes}" if notes else "")
            )
    verdict = report.assessment
    lines += ["", f"verdict (threshold {verdict.threshold:g}): {verdict.verdict.upper()}"]
    lines += [f"  - {reason}" for reason in verdict.reasons]
    return "\n".join(lines) + "\n"


def _comparison_row(name: str, c: Comparison) -> str:
    """One reference a model is compared with: n, κ per weighting, ordinal α, mean signed difference."""
    diff = "—" if c.bias.mean_difference is None else f"{c.bias.mean_difference:+.2f}"
    return (
        f"  {name:<18}{c.n:>6}  " + "".join(f"{_v(k):>12}" for k in c.kappa.values()) + f"{_v(c.alpha):>12}{diff:>10}"
    )


def _v(c: Coefficient) -> str:
    """A coefficient's value to 3 decimals, or "—" when undefined."""
    return "—" if c.value is None else f"{c.value:.3f}"


def format_calibration(report: CalibrationReport) -> str:
    """Each model judge against the human consensus and each human, its bias and confusion, per category and
    guideline version, beside the humans' own agreement on the same pairs."""
    low, high = report.scale
    header = (
        f"  {'against':<18}{'n':>6}  {'κ unweighted':>12}{'κ linear':>12}{'κ quadratic':>12}"
        f"{'α ordinal':>12}{'mean diff':>10}"
    )
    lines = [
        "",
        f"model judges vs humans (on pairs graded by both; consensus: {report.rule} of the humans' grades; "
        f"humans: {', '.join(report.humans) or '—'}):",
    ]
    if not report.models:
        lines.append("  no model judges (give --model ANNOTATOR or an annotator_kind column)")
    for m in report.models:
        h = m.humans
        lines += [
            "",
            f"model {m.model}: {m.n_grades} grades",
            header,
            _comparison_row("human consensus", m.vs_consensus),
        ]
        lines += [_comparison_row(c.reference, c) for c in m.vs_humans]
        lines.append(
            f"  {'humans together':<18}{h.n_pairable:>6}  "
            + "".join(f"{_v(k):>12}" for k in h.kappa.values())
            + f"{_v(h.alpha):>12}"
            + "   (human–human on the model's pairs; κ: mean over human pairs)"
        )
        lines.append(f"  bias vs consensus: {m.vs_consensus.bias.sentence(report.scale)}")
        lines.append(f"  confusion vs consensus (rows: consensus grade, columns: the model's grade {low}–{high}):")
        lines += [
            f"    {low + i:>3} " + "".join(f"{n:>6}" for n in row) for i, row in enumerate(m.vs_consensus.confusion)
        ]
        for title, groups in (("by category", m.by_category), ("by guideline version", m.by_guideline)):
            if groups:
                lines += [
                    f"  {title} (against the consensus; humans together on the same pairs):",
                    f"    {'group':<18}{'n':>6}{'κ quadratic':>13}{'α ordinal':>11}{'mean diff':>10}{'humans α':>10}",
                ]
                for g in groups:
                    c = g.vs_consensus
                    diff = "—" if c.bias.mean_difference is None else f"{c.bias.mean_difference:+.2f}"
                    lines.append(
                        f"    {g.group:<18}{c.n:>6}{_v(c.kappa['quadratic']):>13}{_v(c.alpha):>11}"
                        f"{diff:>10}{_v(g.humans.alpha):>10}"
                    )
    return "\n".join(lines) + "\n"


def _c(c: Coefficient) -> str:
    """A coefficient for the table: value and CI with two spaces between, or why it is undefined."""
    from eval_core.agreement.table import DIGITS

    return c.text(DIGITS).replace(" [", "  [")


def write_consensus(qrels: pd.DataFrame, path: str | Path, fmt: str, shift: int = 0) -> None:
    """TREC / BEIR through the shared qrels writer, grades lowered by `shift` (the scale's lowest grade for
    gains); JSONL here, as judged, since it carries every grade and the rule."""
    import pandas as pd

    from eval_core.io.writers import write_atomically, write_qrels

    if fmt in ("trec", "beir"):
        frame = pd.DataFrame(
            {"query_id": qrels["query_id"], "doc_id": qrels["fragment_id"], "grade": qrels["grade"] - shift}
        )
        write_qrels(frame, path, fmt=fmt)
        return
    write_atomically(
        path,
        (
            json.dumps(
                {
                    "query_id": row.query_id,
                    "fragment_id": row.fragment_id,
                    "grade": int(row.grade),
                    "n_grades": int(row.n_grades),
                    "grades": row.grades,
                    "rule": row.rule,
                    "adjudicated": bool(row.adjudicated),
                    **({"posterior": row.posterior} if getattr(row, "posterior", None) is not None else {}),
                    **({"reference": row.reference} if getattr(row, "reference", None) is not None else {}),
                },
                ensure_ascii=False,
            )
            + "\n"
            for row in qrels.itertuples(index=False)
        ),
    )


def cmd_consensus(args: argparse.Namespace) -> int:
    """Apply the rule and write the qrels; a summary goes to stderr."""
    from eval_core.agreement.report import human_judgments
    from eval_core.consensus import MODEL_RULES, over_reference
    from eval_core.io.judgments import read_adjudications
    from eval_core.io.writers import QrelsGrades
    from eval_core.vocab import AnnotatorKind

    frame = judgments_on_scale(args)
    # A reference's grades (an imported NIST qrels, annotator_kind reference) never vote: they are the base every
    # pair no person labelled takes, as in a release.
    references = frame if "annotator_kind" in frame.columns else None
    if not args.with_models:
        frame = human_judgments(frame, args.model)
    elif "annotator_kind" in frame.columns:
        frame = frame[frame["annotator_kind"].astype(str).ne(AnnotatorKind.REFERENCE).to_numpy()]
    adjudications = read_adjudications(args.adjudications, args.scale) if args.adjudications else None
    try:
        qrels = over_reference(
            frame,
            args.rule,
            adjudications,
            args.scale,
            references,
            min_grades=args.min_grades,
            decision=args.decision,
        )
    except ValueError as exc:
        raise InputError(args.adjudications or args.judgments, None, str(exc)) from None
    write_consensus(
        qrels, args.output, args.format, args.scale[0] if QrelsGrades(args.grades) == QrelsGrades.GAINS else 0
    )
    alone = qrels["reference"].dropna()  # each holds the reference's names (fill_gaps)
    print(
        f"qrelkit: {len(qrels)} labelled pairs ({int(qrels['adjudicated'].sum())} adjudicated"
        + (f", {len(alone)} graded by the reference {alone.iloc[0]} alone" if len(alone) else "")
        + f") by rule {args.rule} → {args.output}",
        file=sys.stderr,
    )
    if args.rule in MODEL_RULES:
        from annotator.cli.release import report_doubt
        from eval_core.consensus import doubt

        report_doubt(doubt(qrels))
    return 0
