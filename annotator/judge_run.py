"""Running a model judge over a project's pairs: a bounded thread pool of judge calls, the CLI's progress bar and
the app's callback, and the run's honest report; the store reads and writes are db.model_judges'.

A judge is `judge(query_text, fragment_text, guideline_text) -> grade`, or an eval_core.judges.prompt.Answer
whose text must hold exactly one grade on the project's scale. It sees only the query, the fragment and the
guideline in force — never another annotator's grade. Malformed answers are refused, counted and not kept.
A run that grades nothing leaves no model-judge account behind.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from numbers import Integral
from typing import Any

import numpy as np
from sqlalchemy.engine import Engine

from db.accounts.permissions import Actor
from db.accounts.users import delete_user
from db.model_judges import (
    JudgePair,
    ProbePair,
    judge_pairs,
    judge_setup,
    kept_answers,
    model_annotator,
    probe_pairs,
    save_probes,
    write_grades,
)
from db.textless import texts_waiting
from eval_core.judges.probes import PROBES, ProbeSummary, probe_text, summarize
from eval_core.judges.prompt import Answer, parse_grade
from eval_core.progress import bar as progress_bar

JudgeFn = Callable[[str, str, str], "int | Answer"]
FLUSH_EVERY = 50  # grades per write transaction: a stopped run keeps all but the last few
MAX_PROBLEMS = 20
log = logging.getLogger("qrelkit.judges")


class JudgeFailed(RuntimeError):
    """One pair could not be judged (e.g. the endpoint still failed after its retries): counted, nothing is
    written for it, and the run goes on. Any other exception from a judge stops the run (grades so far kept)."""


@dataclass
class PrejudgeReport:
    """What a prejudge run did: pairs considered, requests the endpoint received (retries included; one per
    pair for a callable judge), answers reused from the cache, grades written, answers refused (malformed) or
    failed, tokens used and the wall-clock time; the pairs left out because their fragment waits for its text."""

    project: str
    annotator: str
    model: str
    prompt_version: str | None
    guideline: int
    pairs: int = 0
    called: int = 0
    cached: int = 0
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    malformed: int = 0
    failed: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)
    without_text: int = 0  # pairs left out: their fragment waits for its text (never sent to a model empty)

    @property
    def ok(self) -> bool:
        """True when every pair got a grade (none failed or malformed): the CLI exits 1 otherwise."""
        return not (self.failed or self.malformed)

    def to_dict(self) -> dict:
        """JSON-able form for the CLI."""
        return {
            **self.__dict__,
            "seconds": round(self.seconds, 3),
            "total_tokens": self.prompt_tokens + self.completion_tokens,
        }


def _grade(result: int | Answer, scale: tuple[int, int]) -> int:
    """A judge's result as a grade on the scale, or ValueError saying why it is refused."""
    if isinstance(result, Answer):
        return parse_grade(result.text, scale)
    if isinstance(result, bool) or not isinstance(result, Integral):
        raise ValueError(f"the judge returned {result!r}, not an integer grade")
    if not scale[0] <= result <= scale[1]:
        raise ValueError(f"grade {result} is outside the scale {scale[0]}-{scale[1]}")
    return int(result)


def prejudge(
    engine: Engine,
    project: str,
    judge: JudgeFn,
    *,
    model: str,
    annotator: str | None = None,
    prompt_version: str | None = None,
    params: Mapping | None = None,
    concurrency: int = 1,
    limit: int | None = None,
    progress: bool = False,
    on_progress: Callable[[int, int], None] | None = None,
    actor: Actor,
) -> PrejudgeReport:
    """Grade the project's pairs (the first `limit` in pool order) with `judge` as model judge `annotator`
    (default: the model's name), `concurrency` calls at a time; every grade is stamped with the guideline
    version in force and `prompt_version`. Pairs whose answer is kept for this model, prompt version and
    inputs make no call. A judge that carries `prompt_version` and `params` attributes (annotator.judge_client's
    ChatJudge does) supplies them when they are not given. `progress` shows a tqdm bar; `on_progress(done,
    total)` is called on this thread after each pair (the app's progress bar). Leads and the operator only."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    prompt_version = prompt_version if prompt_version is not None else getattr(judge, "prompt_version", None)
    params = dict(params if params is not None else getattr(judge, "params", {}))
    name = (annotator or model or "").strip()
    info, in_force = judge_setup(engine, project)
    user_id, created = model_annotator(engine, name, model, prompt_version, params, actor=actor)
    report = PrejudgeReport(info.name, name, model, prompt_version, in_force.version)
    started = time.perf_counter()
    pairs = judge_pairs(engine, project, limit, info.labels, in_force.text, params)
    report.pairs = len(pairs)
    report.without_text = texts_waiting(engine, project).pairs
    kept = kept_answers(engine, pairs, model, prompt_version or "")
    grades: list[tuple[JudgePair, int, Answer | None]] = []
    sent_before = _sent(judge)

    def flush() -> None:
        if grades:
            assert in_force.id is not None  # a guideline read from the store has its id
            written = write_grades(engine, info.id, name, user_id, in_force.id, model, prompt_version, grades, actor)
            report.created += written.created
            report.updated += written.updated
            report.unchanged += written.unchanged
            grades.clear()

    bar = _Bar(
        progress_bar(total=len(pairs), desc=f"judging with {model}", unit="pair", show=progress, leave=False),
        on_progress,
    )
    todo = []
    for pair in pairs:
        call = kept.get((pair.pair_id, pair.key))
        if call is None:
            todo.append(pair)
            continue
        report.cached += 1
        grades.append((pair, call.grade, None))
        bar.step()
    flush()
    try:
        _run(judge, todo, concurrency, info.scale, in_force.text, report, grades, flush, bar)
    finally:
        bar.close()
        flush()
        sent_after = _sent(judge)
        if sent_before is not None and sent_after is not None:
            report.called = sent_after - sent_before
        report.seconds = time.perf_counter() - started
        if created and not (report.created or report.updated or report.unchanged):
            delete_user(engine, name, actor=actor)  # a run that graded nothing leaves no account behind
    log.info(
        "prejudge %s with %s: %d pairs, %d calls, %d cached, %d malformed, %d failed in %.1f s",
        project,
        model,
        report.pairs,
        report.called,
        report.cached,
        report.malformed,
        report.failed,
        report.seconds,
    )
    return report


def _sent(judge: object) -> int | None:
    """How many requests the judge has sent so far (annotator.judge_client.ChatJudge counts them, retries
    included), or None for a judge that does not count (a callable: one call per pair)."""
    count = getattr(judge, "requests_sent", None)
    return int(count()) if callable(count) else None


def _run(
    judge: JudgeFn,
    todo: list[JudgePair],
    concurrency: int,
    scale: tuple[int, int],
    guideline: str,
    report: PrejudgeReport,
    grades: list,
    flush: Callable[[], None],
    bar: _Bar,
) -> None:
    """Call the judge on every pair, at most `concurrency` at a time (bounded submission: a stopped run leaves
    no queue of calls behind); grades are written every FLUSH_EVERY, here on the calling thread."""
    pending: dict[Future, JudgePair] = {}
    queue = iter(todo)
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="judge") as pool:
        try:
            while True:
                while len(pending) < concurrency:
                    pair = next(queue, None)
                    if pair is None:
                        break
                    pending[pool.submit(judge, pair.query_text, pair.fragment_text, guideline)] = pair
                if not pending:
                    return
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    pair = pending.pop(future)
                    _take(future, pair, scale, report, grades)
                    bar.step(malformed=report.malformed, failed=report.failed)
                if len(grades) >= FLUSH_EVERY:
                    flush()
        finally:
            for future in pending:
                future.cancel()


class _Bar:
    """The CLI's tqdm bar and the app's callback, advanced together."""

    def __init__(self, bar: Any, callback: Callable[[int, int], None] | None) -> None:
        self.bar, self.callback, self.done = bar, callback, 0

    def step(self, **counts: int) -> None:
        self.done += 1
        self.bar.update(1)
        if counts:
            self.bar.set_postfix(counts, refresh=False)
        if self.callback is not None:
            self.callback(self.done, int(self.bar.total or 0))

    def close(self) -> None:
        self.bar.close()


def _take(future: Future, pair: JudgePair, scale: tuple[int, int], report: PrejudgeReport, grades: list) -> None:
    """Count one finished call: its tokens, and its grade, refusal or failure."""
    report.called += 1
    try:
        result = future.result()
    except JudgeFailed as exc:
        report.failed += 1
        _problem(report, pair, f"failed: {exc}")
        return
    answer = result if isinstance(result, Answer) else None
    if answer is not None:
        report.prompt_tokens += answer.prompt_tokens
        report.completion_tokens += answer.completion_tokens
    try:
        grade = _grade(result, scale)
    except ValueError as exc:
        report.malformed += 1
        _problem(report, pair, f"answer refused: {exc}")
        return
    grades.append((pair, grade, answer or Answer(str(grade))))


def _problem(report: PrejudgeReport, pair: JudgePair, text: str) -> None:
    """Keep the first MAX_PROBLEMS problems for the report; log each one."""
    log.warning("pair %s: %s", pair.label, text)
    if len(report.problems) < MAX_PROBLEMS:
        report.problems.append(f"pair {pair.label}: {text}")


@dataclass
class ProbeRun:
    """What a judge-probe run did: the summary (eval_core.judges.probes), calls made, answers refused or failed
    (left out of the probe's n), tokens and time."""

    summary: ProbeSummary
    called: int = 0
    cached: int = 0
    malformed: int = 0
    failed: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        """JSON-able form for the CLI."""
        return {
            **self.summary.to_dict(),
            "sentences": [r.sentence() for r in self.summary.results],
            "verdict": self.summary.sentence(),
            "called": self.called,
            "cached": self.cached,
            "malformed": self.malformed,
            "failed": self.failed,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
            "seconds": round(self.seconds, 3),
            "problems": self.problems,
        }


@dataclass(frozen=True)
class ProbePlan:
    """What a probe run will cost before it runs: pairs, calls (four probes per pair, plus the unaltered pair
    where the judge has no grade yet) and the characters the prompts carry beyond the template."""

    pairs: list[ProbePair]
    calls: int
    characters: int

    def sentence(self, model: str) -> str:
        """`judge-probe with gpt-4o: 10 pairs × 4 probes + 2 unaltered = 42 calls, about 3,100 prompt tokens …`."""
        base = sum(p.judge is None for p in self.pairs)
        return (
            f"judge-probe with {model}: {len(self.pairs)} pairs × {len(PROBES)} probes + {base} unaltered = "
            f"{self.calls} calls, about {self.characters // 4:,} prompt tokens beyond the template and guideline "
            "(4 characters a token)"
        )


def plan_probes(engine: Engine, project: str, annotator: str, sample: int, seed: int = 0) -> ProbePlan:
    """The pairs a probe run will ask about and what it will cost (said before it runs)."""
    info, _, _, pairs = probe_pairs(engine, project, annotator, sample, seed)
    top = info.scale[1]
    texts = [
        (p.pair.query_text, probe_text(probe, p.pair.fragment_text, p.pair.query_text, p.other, top, info.labels[top]))
        for p in pairs
        for probe in PROBES
    ]
    texts += [(p.pair.query_text, p.pair.fragment_text) for p in pairs if p.judge is None]
    return ProbePlan(pairs, len(texts), sum(len(q) + len(f) for q, f in texts))


def probe(
    engine: Engine,
    project: str,
    judge: JudgeFn,
    *,
    annotator: str,
    sample: int = 50,
    seed: int = 0,
    concurrency: int = 1,
    progress: bool = False,
    actor: Actor,
) -> ProbeRun:
    """Ask model judge `annotator` (through `judge`: the same client, deadlines, caps and retries as prejudge)
    about the `sample` pairs people graded lowest with each probe's altered fragment; the unaltered grade is the
    judge's own (its current judgment: no call), asked only where it has none. The summary is kept on the judge's
    account. Leads and the operator only."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    started = time.perf_counter()
    info, in_force, who, pairs = probe_pairs(engine, project, annotator, sample, seed)
    top = info.scale[1]
    tasks: list[tuple[int, str, str, str]] = []  # (pair index, probe or "", query, fragment)
    for i, p in enumerate(pairs):
        if p.judge is None:
            tasks.append((i, "", p.pair.query_text, p.pair.fragment_text))
        for kind in PROBES:
            altered = probe_text(kind, p.pair.fragment_text, p.pair.query_text, p.other, top, info.labels[top])
            tasks.append((i, kind.value, p.pair.query_text, altered))
    run = ProbeRun(ProbeSummary(who.username, len(pairs), []))
    run.cached = sum(p.judge is not None for p in pairs)
    grades: dict[tuple[int, str], int] = {(i, ""): p.judge for i, p in enumerate(pairs) if p.judge is not None}
    bar = progress_bar(total=len(tasks), desc=f"probing {who.username}", unit="call", show=progress, leave=False)
    try:
        with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="probe") as pool:
            for start in range(0, len(tasks), concurrency * 4):  # bounded submission, as prejudge's
                chunk = tasks[start : start + concurrency * 4]
                futures = [pool.submit(judge, q, f, in_force.text) for _, _, q, f in chunk]
                for (i, label, _, _), future in zip(chunk, futures, strict=True):
                    grade = _probe_grade(future, pairs[i].pair, info.scale, run)
                    if grade is not None:
                        grades[(i, label)] = grade
                    bar.update(1)
    finally:
        bar.close()
    results = []
    for kind in PROBES:
        both = [i for i in range(len(pairs)) if (i, "") in grades and (i, kind.value) in grades]
        base = np.array([grades[(i, "")] for i in both], dtype=float)
        probed = np.array([grades[(i, kind.value)] for i in both], dtype=float)
        results.append(summarize(kind, base, probed))
    run.summary = ProbeSummary(who.username, len(pairs), results)
    run.seconds = time.perf_counter() - started
    save_probes(engine, who.username, run.summary.to_dict(), actor=actor)
    log.info("judge-probe %s with %s: %s", project, who.username, run.summary.sentence())
    return run


def _probe_grade(future: Future, pair: JudgePair, scale: tuple[int, int], run: ProbeRun) -> int | None:
    """One probe call's grade, or None (counted as failed or malformed, with the problem kept)."""
    run.called += 1
    try:
        result = future.result()
    except JudgeFailed as exc:
        run.failed += 1
        if len(run.problems) < MAX_PROBLEMS:
            run.problems.append(f"pair {pair.label}: failed: {exc}")
        return None
    if isinstance(result, Answer):
        run.prompt_tokens += result.prompt_tokens
        run.completion_tokens += result.completion_tokens
    try:
        return _grade(result, scale)
    except ValueError as exc:
        run.malformed += 1
        if len(run.problems) < MAX_PROBLEMS:
            run.problems.append(f"pair {pair.label}: answer refused: {exc}")
        return None
