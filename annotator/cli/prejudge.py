"""`qrelkit prejudge`: grade a project's pairs with a model behind an OpenAI-compatible chat-completions endpoint,
as a model judge (an annotator of kind 'model'). See docs/judges.md.
"""

from __future__ import annotations

import argparse
import sys

from annotator.cli.common import db_option, print_json, readable, report_option, store_engine


def _positive(kind: type):
    """An argparse type for a number > 0."""

    def parse(text: str):
        value = kind(text)
        if not value > 0:
            raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
        return value

    return parse


def _chat_judge(args: argparse.Namespace, engine):
    """The chat-completions judge the options describe (prompt file, project labels, deadlines, caps, retries)
    and the prompt's path."""
    from pathlib import Path

    from annotator.judge_client import ChatJudge, api_key
    from db.projects import get_project
    from eval_core.errors import InputError
    from eval_core.judges.prompt import check_template
    from guidelines import JUDGE_PROMPT

    path = Path(args.prompt) if args.prompt else JUDGE_PROMPT
    try:
        template = check_template(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(str(path), None, f"cannot read the prompt: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise InputError(str(path), None, str(exc)) from None
    judge = ChatJudge(
        args.base_url,
        args.model,
        template,
        get_project(engine, args.project).labels,
        params={"temperature": args.temperature},
        timeout=args.timeout,
        api_key=api_key(),
        **{k: v for k, v in (("attempts", args.attempts), ("max_reply_bytes", args.max_reply_bytes)) if v},
    )
    return judge, path


def cmd_prejudge(args: argparse.Namespace) -> int:
    """Build the judge from the prompt file and the project's grade labels, run it, print the report."""
    from annotator.judge_run import prejudge
    from db.accounts.permissions import OPERATOR

    engine = store_engine(args)
    judge, path = _chat_judge(args, engine)
    report = prejudge(
        engine,
        args.project,
        judge,
        model=args.model,
        annotator=args.annotator,
        concurrency=args.concurrency,
        limit=args.limit,
        progress=True,
        actor=OPERATOR,
    )
    if args.report == "json":
        print_json({**report.to_dict(), "prompt": str(path)})
    else:
        lines = readable(_summary(report, path))
        if report.problems:  # one a line: readable() would join a list of strings with commas
            lines += ["problems:", *readable(report.problems, 1)]
        print("\n".join(lines))
    if args.report == "json":  # the counts for whoever reads the terminal while stdout goes to a script
        print(
            f"qrelkit: {report.pairs} pair(s) in {report.seconds:.1f} s: {report.called} call(s), {report.cached} from "
            f"the cache, {report.malformed} malformed, {report.failed} failed; "
            f"{report.prompt_tokens + report.completion_tokens} tokens ({report.prompt_tokens} prompt, "
            f"{report.completion_tokens} completion)",
            file=sys.stderr,
        )
    if report.without_text:
        from db.textless import IMPORT_TEXTS

        print(
            f"qrelkit: {report.without_text} pair(s) left out: their fragments wait for their text (a model is never "
            f"sent an empty one); import the texts with {IMPORT_TEXTS}",
            file=sys.stderr,
        )
    if not report.ok:
        print(f"qrelkit: {report.failed + report.malformed} pair(s) got no grade; see `problems`", file=sys.stderr)
    return 0 if report.ok else 1


def _summary(report, prompt) -> dict:
    """What a person reads of a prejudge run: who graded how many pairs, at what cost, and what went wrong."""
    graded = report.created + report.updated + report.unchanged
    return {
        "model": report.model,
        "account": report.annotator
        if graded
        else f"{report.annotator} (graded nothing this run: a new account is not kept)",
        "pairs graded": f"{graded} of {report.pairs} ({report.created} new, {report.updated} changed, "
        f"{report.unchanged} unchanged)",
        "calls": f"{report.called} ({report.cached} answer(s) from the cache)",
        "malformed": report.malformed,
        "failed": report.failed,
        "tokens": f"{report.prompt_tokens + report.completion_tokens} ({report.prompt_tokens} prompt, "
        f"{report.completion_tokens} completion)",
        "time": f"{report.seconds:.1f} s",
        "prompt": f"{prompt} (version {report.prompt_version})",
        "guideline": report.guideline,
    }


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `prejudge` and `judge-probe` to the `qrelkit` parser."""
    p = subparsers.add_parser(
        "prejudge",
        help="grade a project's pairs with a model judge (any OpenAI-compatible chat endpoint)",
        description="Grade every pair of a project (or the first --limit) with a model behind an OpenAI-compatible "
        "POST {base-url}/chat/completions (vLLM, llama.cpp server, Ollama, hosted APIs). The prompt is "
        "built from the guideline in force; answers must hold exactly one 'Grade: N'. The API key comes "
        "only from QRELKIT_JUDGE_API_KEY (else OPENAI_API_KEY) and is never stored or printed. Answers "
        "are cached by (pair, model, prompt version, inputs): a second run makes no call. Exits 1 when "
        "a pair got no grade (failed or malformed).",
    )
    p.add_argument("--annotator", help="the model judge's annotator name (default: the model name)")
    p.add_argument("--limit", type=_positive(int), metavar="N", help="only the first N pairs in pool order")
    _endpoint_options(p)
    db_option(p)
    report_option(p)
    p.set_defaults(func=cmd_prejudge)
    p = subparsers.add_parser(
        "judge-probe",
        help="can a model judge be gamed? re-ask it about pairs people graded lowest, altered four ways",
        description="On a sample of the pairs people graded lowest, ask the judge again with (a) the query's "
        "words appended to the fragment, (b) an instruction inside it asking for the top grade, (c) the fragment "
        "cut to its first sentence, (d) another query's fragment; per probe, the grades that moved up and the "
        "mean shift with a 95%% t interval. A judge that moves up on (a) or (b) is flagged on its card and in "
        "judge-trust. The calls go through the same client as prejudge; the cost is printed before they run.",
    )
    p.add_argument("--annotator", help="the model judge's account (default: the model name)")
    p.add_argument("--sample", type=_positive(int), default=20, metavar="N", help="pairs to probe (default 20)")
    p.add_argument("--seed", type=int, default=0, help="which pairs among equally low ones, and other fragments")
    p.add_argument("--dry-run", action="store_true", help="say what it would cost, call nothing")
    _endpoint_options(p)
    db_option(p)
    report_option(p)
    p.set_defaults(func=cmd_judge_probe)


def _endpoint_options(p: argparse.ArgumentParser) -> None:
    """The endpoint, model, prompt and client limits prejudge and judge-probe share."""
    p.add_argument("--project", required=True)
    p.add_argument(
        "--base-url",
        required=True,
        metavar="URL",
        help="the API root, e.g. http://localhost:8000/v1 (vLLM), http://localhost:8080/v1 (llama.cpp), "
        "http://localhost:11434/v1 (Ollama)",
    )
    p.add_argument("--model", required=True, help="the model name the endpoint serves")
    p.add_argument(
        "--prompt",
        metavar="FILE",
        help="prompt template with {{guideline}}, {{query}}, {{fragment}} (optional {{grades}}, {{min}}, "
        "{{max}}); default: the bundled guidelines/judge-prompt.md; its content hash is "
        "the prompt version",
    )
    p.add_argument("--concurrency", type=_positive(int), default=4, metavar="N", help="calls at a time (default 4)")
    p.add_argument(
        "--timeout",
        type=_positive(float),
        default=60.0,
        metavar="S",
        help="wall-clock deadline of one request, connect to last byte (default 60); a pair's tries "
        "and waits together stay within attempts × S",
    )
    p.add_argument(
        "--max-reply-bytes",
        type=_positive(int),
        metavar="N",
        help="refuse a reply larger than N bytes without reading the rest "
        "(default: annotator.judge_client.MAX_REPLY_BYTES, 1 MiB)",
    )
    p.add_argument(
        "--attempts",
        type=_positive(int),
        metavar="N",
        help="tries per pair on 429, 5xx and timeouts, with exponential back-off and jitter "
        "(default: annotator.judge_client.ATTEMPTS, 5)",
    )
    p.add_argument("--temperature", type=float, default=0.0, help="sampling temperature (default 0)")


def cmd_judge_probe(args: argparse.Namespace) -> int:
    """Say the cost, run the probes (unless --dry-run), print each probe's line and the verdict."""
    from annotator.judge_run import plan_probes, probe
    from db.accounts.permissions import OPERATOR

    engine = store_engine(args)
    name = args.annotator or args.model
    plan = plan_probes(engine, args.project, name, args.sample, args.seed)
    print(f"qrelkit: {plan.sentence(args.model)}", file=sys.stderr)
    if args.dry_run:
        return 0
    judge, _ = _chat_judge(args, engine)
    run = probe(
        engine,
        args.project,
        judge,
        annotator=name,
        sample=args.sample,
        seed=args.seed,
        concurrency=args.concurrency,
        progress=True,
        actor=OPERATOR,
    )
    data = run.to_dict()
    if args.report == "json":
        print_json(data)
    else:
        lines = [*data["sentences"], data["verdict"]]
        lines.append(
            f"{data['called']} call(s), {data['cached']} unaltered grade(s) the judge already gave, "
            f"{data['malformed']} malformed, {data['failed']} failed, {data['total_tokens']} tokens, "
            f"{data['seconds']} s"
        )
        lines += [f"problem: {p}" for p in data["problems"]]
        print("\n".join(lines))
    return 0
