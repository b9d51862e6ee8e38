"""Model judges: grade a project's pairs with a model (an OpenAI-compatible endpoint, or any Python callable) as
an annotator of kind 'model', through the same judgments writer as imports (history kept).

A judge is `judge(query_text, fragment_text, guideline_text) -> grade`, or an eval_core.judges.prompt.Answer
whose text must hold exactly one grade on the project's scale. It sees only the query, the fragment and the
guideline in force — never another annotator's grade. Answers that gave a grade are kept in judge_calls by
(pair, model, prompt version, inputs), so asking again costs nothing; malformed answers are refused, counted
and not kept. No API key ever reaches this module: the caller's judge holds it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from numbers import Integral

import pandas as pd
from sqlalchemy import func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine
from tqdm import tqdm

from db.accounts.permissions import Actor, require_lead
from db.imports import ImportReport, write_judgments
from db.projects import project_info, project_row
from db.store.engine import session_scope
from db.store.models import Fragment, Guideline, JudgeCall, Judgment, Pair, Query, User, utcnow
from eval_core.judges.prompt import Answer, fragment_text, input_hash, parse_grade

JudgeFn = Callable[[str, str, str], "int | Answer"]
FLUSH_EVERY = 50  # grades per write transaction: a stopped run keeps all but the last few
MAX_PROBLEMS = 20
log = logging.getLogger("qrelkit.judges")


class JudgeFailed(RuntimeError):
    """One pair could not be judged (e.g. the endpoint still failed after its retries): counted, nothing is
    written for it, and the run goes on. Any other exception from a judge stops the run (grades so far kept)."""


@dataclass
class PrejudgeReport:
    """What a prejudge run did: pairs considered, calls made, answers reused from the cache, grades written,
    answers refused (malformed) or failed, tokens used and the wall-clock time."""

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

    def to_dict(self) -> dict:
        """JSON-able form for the CLI."""
        return {**self.__dict__, "seconds": round(self.seconds, 3),
                "total_tokens": self.prompt_tokens + self.completion_tokens}


@dataclass(frozen=True)
class _Pair:
    """One pair to judge, with what the judge reads and the key its answer is cached under."""

    pair_id: int
    query: int
    fragment: int
    label: str
    query_text: str
    fragment_text: str
    key: str


def model_annotator(engine: Engine, name: str, model: str, prompt_version: str | None = None,
                    params: Mapping | None = None, *, actor: Actor) -> int:
    """The id of model judge `name` (created on first use, without a password), its prompt version and
    parameters brought up to date; a person's name, or a judge of another model, is refused."""
    name, model = (name or "").strip(), (model or "").strip()
    if not name or len(name) > 200 or not model or len(model) > 200:
        raise ValueError(f"a model judge needs a name and a model of 1-200 characters, got {name!r}, {model!r}")
    with session_scope(engine, write=True) as session:
        require_lead(session, actor)
        user = session.execute(select(User).where(User.username == name)).scalar_one_or_none()
        if user is None:
            user = User(username=name, role="annotator", kind="model", model_name=model)
        elif user.kind != "model":
            raise ValueError(f"{name!r} is a {user.kind} annotator; a model judge needs a name of its own "
                             f"(e.g. --annotator {model!r})")
        elif user.model_name != model:
            raise ValueError(f"model judge {name!r} is model {user.model_name!r}, not {model!r}; give this model "
                             f"another annotator name")
        user.prompt_version, user.model_params = prompt_version, dict(params or {})
        session.add(user)
        session.flush()
        return int(user.id)


def _pairs(engine: Engine, project: str, limit: int | None, labels: Mapping[int, str], guideline: str,
           params: Mapping) -> list[_Pair]:
    """The project's pairs in pool order (the first `limit`), with the texts the judge reads."""
    with session_scope(engine) as session:
        project_id = project_row(session, project).id
        stmt = (select(Pair.id, Pair.query_id, Pair.fragment_id, Query.external_id, Query.text, Fragment.external_id,
                       Fragment.title, Fragment.text)
                .join(Query, Query.id == Pair.query_id).join(Fragment, Fragment.id == Pair.fragment_id)
                .where(Pair.project_id == project_id).order_by(Pair.id))
        rows = session.execute(stmt.limit(limit) if limit is not None else stmt).all()
    out = []
    for pid, qid, fid, qext, qtext, fext, title, ftext in rows:
        shown = fragment_text(title, ftext)
        out.append(_Pair(pid, qid, fid, f"{qext}/{fext}", qtext, shown,
                         input_hash(qtext, shown, guideline, labels, params)))
    return out


def _cached(engine: Engine, pairs: list[_Pair], model: str, prompt: str) -> dict[tuple[int, str], JudgeCall]:
    """Kept answers of this model and prompt version for these pairs, by (pair id, input hash)."""
    ids = [p.pair_id for p in pairs]
    found: dict[tuple[int, str], JudgeCall] = {}
    with session_scope(engine) as session:
        for start in range(0, len(ids), 500):
            for call in session.execute(select(JudgeCall).where(
                    JudgeCall.pair_id.in_(ids[start:start + 500]), JudgeCall.model == model,
                    JudgeCall.prompt_version == prompt)).scalars():
                found[(call.pair_id, call.input_hash)] = call
    return found


def _grade(result: int | Answer, scale: tuple[int, int]) -> int:
    """A judge's result as a grade on the scale, or ValueError saying why it is refused."""
    if isinstance(result, Answer):
        return parse_grade(result.text, scale)
    if isinstance(result, bool) or not isinstance(result, Integral):
        raise ValueError(f"the judge returned {result!r}, not an integer grade")
    if not scale[0] <= result <= scale[1]:
        raise ValueError(f"grade {result} is outside the scale {scale[0]}-{scale[1]}")
    return int(result)


def prejudge(engine: Engine, project: str, judge: JudgeFn, *, model: str, annotator: str | None = None,
             prompt_version: str | None = None, params: Mapping | None = None, concurrency: int = 1,
             limit: int | None = None, progress: bool = False,
             on_progress: Callable[[int, int], None] | None = None, actor: Actor) -> PrejudgeReport:
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
    with session_scope(engine) as session:
        proj = project_row(session, project)
        info = project_info(proj)
        in_force = session.execute(select(Guideline).where(Guideline.project_id == proj.id)
                               .order_by(Guideline.version.desc()).limit(1)).scalar_one_or_none()
    if in_force is None:
        raise ValueError(f"project {project!r} has no guideline; a model judge grades by one "
                         f"(add it with `qrelkit guideline add`)")
    user_id = model_annotator(engine, name, model, prompt_version, params, actor=actor)
    report = PrejudgeReport(info.name, name, model, prompt_version, in_force.version)
    started = time.perf_counter()
    pairs = _pairs(engine, project, limit, info.labels, in_force.text, params)
    report.pairs = len(pairs)
    kept = _cached(engine, pairs, model, prompt_version or "")
    grades: list[tuple[_Pair, int, Answer | None]] = []

    def flush() -> None:
        if grades:
            _write(engine, info.id, name, user_id, in_force.id, model, prompt_version, grades, report, actor)
            grades.clear()

    bar = _Bar(tqdm(total=len(pairs), desc=f"judging with {model}", unit="pair", disable=not progress,
                    leave=False), on_progress)
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
        report.seconds = time.perf_counter() - started
    log.info("prejudge %s with %s: %d pairs, %d calls, %d cached, %d malformed, %d failed in %.1f s",
             project, model, report.pairs, report.called, report.cached, report.malformed, report.failed,
             report.seconds)
    return report


def _run(judge: JudgeFn, todo: list[_Pair], concurrency: int, scale: tuple[int, int], guideline: str,
         report: PrejudgeReport, grades: list, flush: Callable[[], None], bar: _Bar) -> None:
    """Call the judge on every pair, at most `concurrency` at a time (bounded submission: a stopped run leaves
    no queue of calls behind); grades are written every FLUSH_EVERY, here on the calling thread."""
    pending: dict[Future, _Pair] = {}
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

    def __init__(self, bar: tqdm, callback: Callable[[int, int], None] | None) -> None:
        self.bar, self.callback, self.done = bar, callback, 0

    def step(self, **counts: int) -> None:
        self.done += 1
        self.bar.update(1)
        if counts:
            self.bar.set_postfix(counts, refresh=False)
        if self.callback is not None:
            self.callback(self.done, int(self.bar.total))

    def close(self) -> None:
        self.bar.close()


def _take(future: Future, pair: _Pair, scale: tuple[int, int], report: PrejudgeReport, grades: list) -> None:
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


def _problem(report: PrejudgeReport, pair: _Pair, text: str) -> None:
    """Keep the first MAX_PROBLEMS problems for the report; log each one."""
    log.warning("pair %s: %s", pair.label, text)
    if len(report.problems) < MAX_PROBLEMS:
        report.problems.append(f"pair {pair.label}: {text}")


def _write(engine: Engine, project_id: int, name: str, user_id: int, guideline_id: int, model: str,
           prompt_version: str | None, grades: list[tuple[_Pair, int, Answer | None]], report: PrejudgeReport,
           actor: Actor) -> None:
    """In one transaction: keep the new answers, and write the grades as the judge's judgments (history kept)."""
    now = utcnow()
    fresh = [{"project_id": project_id, "pair_id": p.pair_id, "model": model, "prompt_version": prompt_version or "",
              "input_hash": p.key, "grade": g, "answer": a.text, "prompt_tokens": a.prompt_tokens,
              "completion_tokens": a.completion_tokens, "created_at": now} for p, g, a in grades if a is not None]
    frame = pd.DataFrame({"query": [p.query for p, _, _ in grades], "fragment": [p.fragment for p, _, _ in grades],
                          "annotator": name, "grade": pd.array([g for _, g, _ in grades], dtype="Int64"),
                          "guideline_id": guideline_id, "prompt_version": prompt_version})
    written = ImportReport()
    with session_scope(engine, write=True) as session:
        require_lead(session, actor)
        if fresh:
            insert = postgresql.insert if session.connection().dialect.name == "postgresql" else sqlite.insert
            session.execute(insert(JudgeCall.__table__).on_conflict_do_nothing(), fresh)
        write_judgments(session, project_id, frame, {name: user_id},
                        {(p.query, p.fragment): p.pair_id for p, _, _ in grades}, written, show=False)
    report.created += written.created
    report.updated += written.updated
    report.unchanged += written.unchanged


@dataclass(frozen=True)
class ModelJudgeInfo:
    """A model judge as the app lists it: who, which model, prompt and parameters, and its grades here."""

    username: str
    model: str | None
    prompt_version: str | None
    params: dict
    judged: int


def list_model_judges(engine: Engine, project: str) -> list[ModelJudgeInfo]:
    """Every model judge, with how many current judgments it has in the project, by name."""
    with session_scope(engine) as session:
        project_id = project_row(session, project).id
        counts = dict(session.execute(select(Judgment.user_id, func.count(Judgment.id))
                                      .where(Judgment.project_id == project_id).group_by(Judgment.user_id)).all())
        rows = session.execute(select(User.id, User.username, User.model_name, User.prompt_version, User.model_params)
                               .where(User.kind == "model").order_by(User.username)).all()
    return [ModelJudgeInfo(name, model, prompt, dict(params or {}), int(counts.get(uid, 0)))
            for uid, name, model, prompt, params in rows]
