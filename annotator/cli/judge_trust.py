"""`qrelkit judge-trust`: can a model judge stand in for people? The runs ranked under both labels, the judge's
leniency, agreement per query and the hybrid estimate, from files (HUMAN JUDGE RUN…) or a project (--project P
--model NAME: its people against one model judge, on its stored runs)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from annotator.cli.common import LazyChoices, db_option, print_json, scale_type, store_engine
from eval_core.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

    from eval_core.judges.trust import TrustReport


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `judge-trust` and `post-edit` to the `qrelkit` parser."""
    p = subparsers.add_parser(
        "judge-trust",
        help="does a model judge rank the runs as people do? τ, τ_ap, flips, leniency, hybrid intervals",
        description="Each run's mean under people's and the judge's labels; Kendall's τ, τ_ap (people's ranking "
        "as the truth), top-k overlap and the run pairs whose order flips, against people's paired interval; "
        "Bland–Altman of per-query values (judge − human) and the grade confusion; κ per query (linear-weighted, "
        "or --weights), worst first; and when people judged only some queries, each run's PPI++ mean and "
        "interval. Files: HUMAN and JUDGE are qrels or judgments files (several annotators: median consensus), "
        "then run files. Or --project P --model NAME.",
    )
    db_option(p)
    p.add_argument("files", nargs="*", metavar="FILE", help="HUMAN JUDGE RUN… (without --project)")
    p.add_argument("--project", help="a project in the store: its people against --model on its stored runs")
    p.add_argument("--model", metavar="NAME", help="with --project: the model judge (its account or model name)")
    p.add_argument("--metric", default="ndcg@10", help="one metric with its cutoff (default ndcg@10)")
    p.add_argument(
        "--weights",
        choices=LazyChoices("eval_core.agreement.coefficients", "WEIGHTS"),
        metavar="W",
        default="linear",
        help="κ weighting per query (unweighted, linear, quadratic; default linear)",
    )
    p.add_argument("--top", type=int, default=5, help="k of the top-k overlap (default 5)")
    p.add_argument(
        "--target-width",
        type=_positive_float,
        default=None,
        metavar="W",
        help="how many people-judged queries make every hybrid interval this wide (e.g. 0.05)",
    )
    p.add_argument(
        "--scale",
        type=scale_type,
        default=None,
        help="files: grading scale (default: the scale the judgments files name, as qrelkit's exports do, else 0-3)",
    )
    p.add_argument("--format", choices=["table", "json"], default="table")
    p.set_defaults(func=cmd_judge_trust)
    p = subparsers.add_parser(
        "post-edit",
        help="people check a model judge's grades where it is most likely wrong (blind, as re-judging)",
        description="The model judge's grades on pairs no person graded, most likely wrong first: how often people "
        "disagree with that grade where both graded, times how much the pair can move the stored runs' ranking. "
        "--send N --to a,b puts the first N unsent ones in those people's queues (each pair to one, in turn), "
        "graded blind as re-judging is. Prints the edit rate per model grade and the model's κ against the "
        "post-edited grades so far.",
    )
    db_option(p)
    p.add_argument("--project", required=True)
    p.add_argument("--model", required=True, metavar="NAME", help="the model judge (its account or model name)")
    p.add_argument("--send", type=int, metavar="N", help="send the first N unsent pairs (with --to)")
    p.add_argument("--to", metavar="A,B", help="the people who post-edit")
    p.add_argument("--top", type=int, default=20, help="queue rows to print (default 20)")
    p.add_argument(
        "--weights",
        choices=LazyChoices("eval_core.agreement.coefficients", "WEIGHTS"),
        metavar="W",
        default="linear",
        help="κ weighting against the post-edited grades (default linear)",
    )
    p.add_argument("--format", choices=["table", "json"], default="table")
    p.set_defaults(func=cmd_post_edit)


def labels(path: str, scale: tuple[int, int], kind: str, given: bool = True) -> pd.DataFrame:
    """One label per pair, a grade on `scale`, from a qrels file or from a judgments file (JSONL/CSV with an
    annotator field; several annotators: the median rule over their real grades). A judgments export that names
    each annotator's kind (`annotator_kind`, as `qrelkit export --judgments` writes) gives only its `kind` rows:
    people for HUMAN (with a reference's grades where no person graded, as a release), the model judge for JUDGE,
    so one export can be both. TREC and BEIR qrels hold gains (grade − the scale's lowest, as a release writes
    them, and as `qrelkit eval` reads them without --scale) unless the scale was `given`; a grade off the scale
    names the file and line."""
    import dataclasses

    from eval_core.consensus import over_reference
    from eval_core.io.formats import load_qrels, named_scale
    from eval_core.io.judgments import judgments_file_hint, read_judgments
    from eval_core.ranking.evaluation import on_scale
    from eval_core.vocab import AnnotatorKind

    if judgments_file_hint(path) is not None or not _has_annotator(path):
        qrels = load_qrels(path)
        low, high = scale
        if given or named_scale(path) is not None:
            on_scale(qrels, scale)
            return qrels.frame("grade")
        try:
            on_scale(qrels, (0, high - low))
        except InputError as exc:
            raise InputError(
                exc.path,
                exc.line,
                f"{exc.problem}: TREC and BEIR qrels hold gains (grade − {low}), as a release writes them; if this "
                f"file holds the grades as judged, give --scale {low}-{high}",
            ) from None
        return dataclasses.replace(qrels, value=qrels.value + low).frame("grade")
    frame = read_judgments(path, scale)
    frame = frame[frame["grade"].notna()]
    references = None
    if "annotator_kind" in frame.columns:
        kinds = frame["annotator_kind"].astype(str)
        if kind == AnnotatorKind.HUMAN and kinds.eq(AnnotatorKind.REFERENCE).any():
            references = frame  # people's labels as a release holds them, as judge-trust --project reads them
        frame = frame[kinds.eq(kind).to_numpy()]
        if frame.empty and references is None:
            raise ValueError(f"{path}: no grades by an annotator of kind {kind} (annotator_kind)")
    agreed = over_reference(frame, "median", None, scale, references)
    return agreed.rename(columns={"fragment_id": "doc_id"})[["query_id", "doc_id", "grade"]].astype({"grade": "int64"})


def _named_scale(human: str, judge: str) -> tuple[int, int] | None:
    """The scale the judgments files name (qrelkit's exports write it on every line), None when neither does;
    two different scales are refused."""
    from eval_core.io.judgments import declared_scale, judgments_file_hint

    named = {
        path: scale
        for path in (human, judge)
        if judgments_file_hint(path) is None and _has_annotator(path) and (scale := declared_scale(path)) is not None
    }
    if len(set(named.values())) > 1:
        raise ValueError(
            f"{human} is on the scale {'-'.join(map(str, named[human]))} and {judge} on "
            f"{'-'.join(map(str, named[judge]))}: the two labels must share a scale"
        )
    return next(iter(named.values()), None)


def _has_annotator(path: str) -> bool:
    """True when a JSONL/CSV file's first record names an annotator (a judgments file, not qrels)."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        head = fh.readline()
    return "annotator" in head


def _from_files(args: argparse.Namespace) -> TrustReport:
    from eval_core.judges.trust import judge_trust

    if len(args.files) < 3:
        raise ValueError("give HUMAN JUDGE and at least one RUN file (or --project P --model NAME)")
    human, judge, *runs = args.files
    scale = args.scale or _named_scale(human, judge) or (0, 3)
    names = [Path(r).name for r in runs]
    if len(set(names)) != len(names):
        names = list(runs)
    if len(set(names)) != len(names):
        raise ValueError("the same run file is given twice")
    given = args.scale is not None
    return judge_trust(
        labels(human, scale, "human", given),
        labels(judge, scale, "model", given),
        dict(zip(names, runs, strict=True)),
        metric=args.metric,
        scale=scale,
        weights=args.weights,
        top=args.top,
        target_width=args.target_width,
    )


def cmd_judge_trust(args: argparse.Namespace) -> int:
    """Print the report (table or JSON)."""
    if args.project:
        if args.files or args.scale:
            raise ValueError("with --project the store supplies labels, runs and scale: give no files or --scale")
        if not args.model:
            raise ValueError("--project needs --model NAME: the model judge to measure")
        from db.model_judges import project_judge_trust

        report = project_judge_trust(
            store_engine(args),
            args.project,
            args.model,
            metric=args.metric,
            weights=args.weights,
            top=args.top,
            target_width=args.target_width,
        )
    else:
        if args.model:
            raise ValueError("--model goes with --project; on files the JUDGE file is the judge")
        report = _from_files(args)
    if args.format == "json":
        print_json(report.to_dict())
    else:
        sys.stdout.write(format_table(report))
    return 0


def _ci(ci: Any) -> str:
    return f"[{ci[0]:.4f}, {ci[1]:.4f}]"


def format_table(report: TrustReport) -> str:
    """The report as text: verdict, ranking, flips, leniency, confusion, worst queries, hybrid."""
    r, le = report.ranking, report.leniency
    width = max([len(s.run) for s in r.runs] + [3]) + 2
    tau = "undefined" if r.tau is None else f"{r.tau:.3f}"
    tau_ap = "undefined" if r.tau_ap is None else f"{r.tau_ap:.3f}"
    lines = [
        f"verdict: {report.verdict}",
        "",
        f"{report.metric} on {r.n_queries} queries judged by both ({r.n_runs} runs)",
        f"{'run':<{width}}{'people':>9}{'rank':>6}{'judge':>9}{'rank':>6}",
    ]
    lines += [f"{s.run:<{width}}{s.human:>9.4f}{s.human_rank:>6}{s.judge:>9.4f}{s.judge_rank:>6}" for s in r.runs]
    lines += [
        "",
        f"Kendall τ {tau}   τ_ap {tau_ap} (people's ranking as the truth)   top-{r.top_k} overlap "
        f"{r.top_overlap}/{r.top_k}",
    ]
    if r.flips:
        lines.append("pairs whose order flips (people's difference with its 95% paired t interval):")
        for f in r.flips:
            kind = "within people's noise" if f.noise else "REAL FLIP"
            lines.append(
                f"  {f.better} > {f.worse} for people by {f.human_difference:.4f} {_ci(f.human_ci)}, judge "
                f"{f.judge_difference:+.4f}  {kind} (n {f.n_queries})"
            )
    else:
        lines.append("no pair of runs flips")
    lines += ["", f"leniency: Bland–Altman of per-query {report.metric} (judge − human), n {le.n_values}"]
    if le.bias is not None:
        limits = "" if le.limits is None else f", 95% limits {le.limits[0]:+.4f} … {le.limits[1]:+.4f}"
        lines.append(f"  bias {le.bias:+.4f}{limits}")
    if le.n_pairs:
        low = report.scale[0]
        lines.append(
            f"  grades on {le.n_pairs} pairs judged by both: {le.up:.1%} graded up, {le.down:.1%} graded down; "
            "confusion (rows people, columns judge):"
        )
        k = len(le.confusion)
        lines.append("      " + "".join(f"{low + c:>7}" for c in range(k)))
        lines += [f"  {low + i:>4}" + "".join(f"{v:>7}" for v in row) for i, row in enumerate(le.confusion)]
    lines += ["", f"agreement per query ({report.weights} κ, worst first):"]
    for q in report.per_query[:10]:
        value = f"{q.kappa:.3f}" if q.kappa is not None else q.status
        lines.append(f"  {q.query_id:<20} κ {value} (n {q.n})")
    if len(report.per_query) > 10:
        lines.append(f"  … {len(report.per_query) - 10} more (--format json lists all)")
    if report.hybrid:
        h0 = report.hybrid[0]
        lines += [
            "",
            f"hybrid estimate: people on {h0.n_human} queries, the judge alone on {h0.n_judge_only} more (PPI++, 95%)",
            f"{'run':<{width}}{'PPI++':>9}  {'interval':<20}{'λ':>6}  {'people only':>11}  {'interval':<20}"
            f"{'judge only':>10}",
        ]
        for h in report.hybrid:
            lines.append(
                f"{h.run:<{width}}{h.estimate:>9.4f}  {_ci(h.ci):<20}{h.lam:>6.2f}  {h.human_mean:>11.4f}  "
                f"{_ci(h.human_ci):<20}{h.judge_mean:>10.4f}"
            )
        if report.target_width is not None:
            needed = (
                f"{report.queries_needed} people-judged queries"
                if report.queries_needed is not None
                else "more queries than the judge graded"
            )
            lines.append(f"intervals {report.target_width} wide for every run need {needed}")
    lines += [f"warning: {w}" for w in report.warnings]
    return "\n".join(lines) + "\n"


def cmd_post_edit(args: argparse.Namespace) -> int:
    """Send (with --send/--to), then print the edit statistics and the head of the queue."""
    from db.accounts.permissions import OPERATOR
    from db.model_judges import post_edit_view, send_for_post_editing

    if (args.send is None) != (args.to is None):
        raise ValueError("--send N and --to A,B go together")
    engine = store_engine(args)
    sent = 0
    if args.send is not None:
        people = [p.strip() for p in args.to.split(",") if p.strip()]
        sent = send_for_post_editing(engine, args.project, args.model, people, args.send, actor=OPERATOR)
    stats, queue = post_edit_view(engine, args.project, args.model, args.weights)
    if args.format == "json":
        print_json(
            {
                "sent": sent,
                "post_edited": stats.n,
                "edited": stats.edited,
                "edit_rate": {str(g): stats.edit_rate(g) for g in stats.by_grade},
                "by_grade": {str(g): {"n": n, "changed": c} for g, (n, c) in stats.by_grade.items()},
                "kappa": stats.kappa,
                "kappa_status": stats.kappa_status,
                "weights": stats.weights,
                "queue": queue.head(args.top).to_dict(orient="records"),
                "queue_length": len(queue),
            }
        )
        return 0
    lines = [f"sent {sent} pair(s) for post-editing"] if args.send is not None else []
    kappa = f"{stats.kappa:.3f}" if stats.kappa is not None else stats.kappa_status
    lines.append(f"post-edited so far: {stats.n} pair(s), {stats.edited} changed; {stats.weights} κ {kappa}")
    for g, (n, changed) in stats.by_grade.items():
        rate = stats.edit_rate(g)
        lines.append(f"  model grade {g}: {changed} of {n} changed" + (f" ({rate:.0%})" if rate is not None else ""))
    lines.append(f"queue: {len(queue)} model-only grade(s), {int(queue['sent'].sum())} sent; most likely wrong first:")
    for row in queue.head(args.top).itertuples(index=False):
        lines.append(
            f"  {row.query_id} {row.fragment_id} grade {row.grade}  p_wrong {row.p_wrong:.2f}  impact "
            f"{row.impact:.3f}{'  (sent)' if row.sent else ''}"
        )
    print("\n".join(lines))
    return 0
