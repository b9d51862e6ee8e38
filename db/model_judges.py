"""Model judges, the store side: the model-judge account, the pairs and texts a judge reads, the kept answers
(judge_calls) and the writer that stores a batch of grades as the judge's judgments (history kept), through the
same writer as imports. Running a judge (threads, HTTP, progress) is annotator.judge_run's: this module only
reads and writes the store.

Answers that gave a grade are kept in judge_calls by (pair, model, prompt version, inputs), so asking again costs
nothing. No API key ever reaches this module.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sqlalchemy import and_, func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine
from sqlmodel import col

from db.accounts.permissions import Actor, require_lead
from db.accounts.users import check_new_username
from db.adjudication import judging_people, open_assignments, refuse_seen
from db.evaluations import robustness_inputs
from db.imports import ImportReport, write_judgments
from db.projects import ProjectInfo, project_info, project_row
from db.store.engine import session_scope
from db.store.frames import judgments_frame
from db.store.models import (
    Assignment,
    Fragment,
    Guideline,
    JudgeCall,
    Judgment,
    Pair,
    Query,
    Run,
    User,
    pk,
    table_of,
    utcnow,
)
from eval_core.consensus import over_reference
from eval_core.errors import NotFound
from eval_core.judges.post_edit import EditStats, edit_stats, post_edit_order
from eval_core.judges.probes import ProbeSummary
from eval_core.judges.prompt import Answer, fragment_text, input_hash
from eval_core.judges.trust import TrustReport, circularity, judge_trust
from eval_core.vocab import AnnotatorKind

PAIR = ["query_id", "fragment_id"]


@dataclass(frozen=True)
class JudgePair:
    """One pair to judge, with what the judge reads and the key its answer is cached under."""

    pair_id: int
    query: int
    fragment: int
    label: str
    query_text: str
    fragment_text: str
    key: str


def model_annotator(
    engine: Engine,
    name: str,
    model: str,
    prompt_version: str | None = None,
    params: Mapping | None = None,
    *,
    actor: Actor,
) -> tuple[int, bool]:
    """(id of model judge `name`, True when this call created it: on first use, without a password), its
    prompt version and parameters brought up to date; a person's name, a name that looks like another
    account's, or a judge of another model, is refused."""
    name, model = (name or "").strip(), (model or "").strip()
    if not name or len(name) > 200 or not model or len(model) > 200:
        raise ValueError(f"a model judge needs a name and a model of 1-200 characters, got {name!r}, {model!r}")
    with session_scope(engine, write=True) as session:
        require_lead(session, actor)
        user = session.execute(select(User).where(col(User.username) == name)).scalar_one_or_none()
        created = user is None
        if user is None:
            check_new_username(session, name)
            user = User(username=name, role="annotator", kind="model", model_name=model)
        elif user.kind != "model":
            raise ValueError(
                f"{name!r} is a {user.kind} annotator; a model judge needs a name of its own "
                f"(e.g. --annotator {model!r})"
            )
        elif user.model_name != model:
            raise ValueError(
                f"model judge {name!r} is model {user.model_name!r}, not {model!r}; give this model "
                f"another annotator name"
            )
        user.prompt_version, user.model_params = prompt_version, dict(params or {})
        session.add(user)
        session.flush()
        return pk(user), created


def judge_setup(engine: Engine, project: str) -> tuple[ProjectInfo, Guideline]:
    """The project and its guideline in force, or ValueError when it has none (a model judge grades by one)."""
    with session_scope(engine) as session:
        proj = project_row(session, project)
        info = project_info(proj)
        in_force = session.execute(
            select(Guideline)
            .where(col(Guideline.project_id) == pk(proj))
            .order_by(col(Guideline.version).desc())
            .limit(1)
        ).scalar_one_or_none()
    if in_force is None:
        raise ValueError(
            f"project {project!r} has no guideline; a model judge grades by one (add it with `qrelkit guideline add`)"
        )
    return info, in_force


def judge_pairs(
    engine: Engine, project: str, limit: int | None, labels: Mapping[int, str], guideline: str, params: Mapping
) -> list[JudgePair]:
    """The project's pairs in pool order (the first `limit`), with the texts the judge reads; a pair whose
    fragment waits for its text is left out (a model is never sent an empty text; see pairs_without_text)."""
    with session_scope(engine) as session:
        project_id = pk(project_row(session, project))
        stmt = (
            select(
                col(Pair.id),
                col(Pair.query_id),
                col(Pair.fragment_id),
                col(Query.external_id),
                col(Query.text),
                col(Fragment.external_id),
                col(Fragment.title),
                col(Fragment.text),
            )
            .join(Query, col(Query.id) == Pair.query_id)
            .join(Fragment, col(Fragment.id) == Pair.fragment_id)
            .where(col(Pair.project_id) == project_id, col(Fragment.has_text))
            .order_by(col(Pair.id))
        )
        rows = session.execute(stmt.limit(limit) if limit is not None else stmt).all()
    out = []
    for pid, qid, fid, qext, qtext, fext, title, ftext in rows:
        shown = fragment_text(title, ftext)
        out.append(
            JudgePair(
                pid, qid, fid, f"{qext}/{fext}", qtext, shown, input_hash(qtext, shown, guideline, labels, params)
            )
        )
    return out


def kept_answers(engine: Engine, pairs: list[JudgePair], model: str, prompt: str) -> dict[tuple[int, str], JudgeCall]:
    """Kept answers of this model and prompt version for these pairs, by (pair id, input hash)."""
    ids = [p.pair_id for p in pairs]
    found: dict[tuple[int, str], JudgeCall] = {}
    with session_scope(engine) as session:
        for start in range(0, len(ids), 500):
            for call in session.execute(
                select(JudgeCall).where(
                    col(JudgeCall.pair_id).in_(ids[start : start + 500]),
                    col(JudgeCall.model) == model,
                    col(JudgeCall.prompt_version) == prompt,
                )
            ).scalars():
                found[(call.pair_id, call.input_hash)] = call
    return found


def write_grades(
    engine: Engine,
    project_id: int,
    name: str,
    user_id: int,
    guideline_id: int,
    model: str,
    prompt_version: str | None,
    grades: list[tuple[JudgePair, int, Answer | None]],
    actor: Actor,
) -> ImportReport:
    """In one transaction: keep the new answers, and write the grades as the judge's judgments (history kept);
    returns what was created, updated or unchanged."""
    now = utcnow()
    fresh = [
        {
            "project_id": project_id,
            "pair_id": p.pair_id,
            "model": model,
            "prompt_version": prompt_version or "",
            "input_hash": p.key,
            "grade": g,
            "answer": a.text,
            "prompt_tokens": a.prompt_tokens,
            "completion_tokens": a.completion_tokens,
            "created_at": now,
        }
        for p, g, a in grades
        if a is not None
    ]
    frame = pd.DataFrame(
        {
            "query": [p.query for p, _, _ in grades],
            "fragment": [p.fragment for p, _, _ in grades],
            "annotator": name,
            "grade": pd.array([g for _, g, _ in grades], dtype="Int64"),
            "guideline_id": guideline_id,
            "prompt_version": prompt_version,
        }
    )
    written = ImportReport()
    with session_scope(engine, write=True) as session:
        require_lead(session, actor)
        if fresh:
            insert = postgresql.insert if session.connection().dialect.name == "postgresql" else sqlite.insert
            session.execute(insert(table_of(JudgeCall)).on_conflict_do_nothing(), fresh)
        write_judgments(
            session,
            project_id,
            frame,
            {name: user_id},
            {(p.query, p.fragment): p.pair_id for p, _, _ in grades},
            written,
            show=False,
        )
    return written


@dataclass(frozen=True)
class ModelJudgeInfo:
    """A model judge as the app lists it: who, which model, prompt and parameters, and its grades here."""

    username: str
    model: str | None
    prompt_version: str | None
    params: dict
    judged: int
    probes: dict | None = None  # the last judge-probe summary (eval_core.judges.probes.ProbeSummary.to_dict)


def list_model_judges(engine: Engine, project: str) -> list[ModelJudgeInfo]:
    """Every model judge, with how many current judgments it has in the project, by name."""
    with session_scope(engine) as session:
        project_id = pk(project_row(session, project))
        counts: dict[int, int] = {
            uid: n
            for uid, n in session.execute(
                select(col(Judgment.user_id), func.count(col(Judgment.id)))
                .where(col(Judgment.project_id) == project_id)
                .group_by(col(Judgment.user_id))
            ).all()
        }
        rows = session.execute(
            select(
                col(User.id),
                col(User.username),
                col(User.model_name),
                col(User.prompt_version),
                col(User.model_params),
                col(User.probes),
            )
            .where(col(User.kind) == "model")
            .order_by(col(User.username))
        ).all()
    return [
        ModelJudgeInfo(name, model, prompt, dict(params or {}), int(counts.get(uid, 0)), probes)
        for uid, name, model, prompt, params, probes in rows
    ]


def run_models(engine: Engine, project: str) -> dict[str, str | None]:
    """Each stored run's name → the model it was produced with (`import run --produced-by`), or None."""
    with session_scope(engine) as session:
        project_id = pk(project_row(session, project))
        rows = session.execute(
            select(col(Run.name), col(Run.produced_by)).where(col(Run.project_id) == project_id)
        ).all()
    return {name: produced for name, produced in rows}


def _judge_named(engine: Engine, project: str, name: str) -> ModelJudgeInfo:
    """The model judge whose account or model is `name` (an account name wins; a model several judges use is
    refused with their names)."""
    judges = list_model_judges(engine, project)
    by_account = [j for j in judges if j.username == name]
    if by_account:
        return by_account[0]
    by_model = [j for j in judges if j.model == name]
    if len(by_model) > 1:
        raise ValueError(f"model {name!r} has several judges ({', '.join(j.username for j in by_model)}): name one")
    if not by_model:
        raise NotFound(f"no model judge {name!r} in project {project!r}")
    return by_model[0]


def project_judge_trust(
    engine: Engine,
    project: str,
    model: str,
    metric: str = "ndcg@10",
    weights: str = "linear",
    top: int = 5,
    target_width: float | None = None,
) -> TrustReport:
    """The judge-trust report of one model judge against the project's people on the stored runs — their labels
    as a humans-only release holds them: the median consensus, lead decisions winning, and a reference's grades
    (an imported NIST qrels) on the pairs no project annotator graded — with a warning for each run produced with
    the judge's model family."""
    judge = _judge_named(engine, project, model)
    inputs = robustness_inputs(engine, project)
    if not inputs.runs:
        raise ValueError(f"project {project!r} has no stored runs (import them with `qrelkit import run`)")
    frame = inputs.judgments[inputs.judgments["grade"].notna()]
    kinds = (
        frame["annotator_kind"]
        if "annotator_kind" in frame.columns
        else pd.Series(AnnotatorKind.HUMAN.value, index=frame.index)
    )
    people = kinds.isin([AnnotatorKind.HUMAN, AnnotatorKind.REFERENCE]).to_numpy()
    mine = frame[frame["annotator"].eq(judge.username).to_numpy()]
    if not people.any() or mine.empty:
        raise ValueError(
            f"judge-trust needs grades from people (annotators or a reference) and from {judge.username} in "
            f"project {project!r}; found {int(people.sum())} and {len(mine)}"
        )
    humans = frame[kinds.eq(AnnotatorKind.HUMAN).to_numpy()]
    agreed = over_reference(humans, "median", inputs.adjudications, inputs.scale, frame[people])
    human_qrels = agreed.rename(columns={"fragment_id": "doc_id"})[["query_id", "doc_id", "grade"]]
    judge_qrels = mine.rename(columns={"fragment_id": "doc_id"})[["query_id", "doc_id", "grade"]]
    return judge_trust(
        human_qrels.astype({"grade": "int64"}),
        judge_qrels.astype({"grade": "int64"}),
        inputs.runs,
        metric=metric,
        scale=inputs.scale,
        weights=weights,
        top=top,
        target_width=target_width,
        warnings=circularity(judge.model, run_models(engine, project)) + _probe_warning(judge),
    )


def trust_card(engine: Engine, project: str, judge: str) -> dict:
    """The release card's entry for the model judge that filled gaps: judge-trust's verdict and warnings on the
    stored runs with the numbers behind them, or why there is none (no runs, no shared queries)."""
    try:
        report = project_judge_trust(engine, project, judge)
    except (ValueError, LookupError) as exc:
        return {"model": judge, "verdict": None, "reason": str(exc), "warnings": []}
    r = report.ranking
    return {
        "model": judge,
        "verdict": report.verdict,
        "warnings": list(report.warnings),
        "metric": report.metric,
        "runs": r.n_runs,
        "queries": r.n_queries,
        "tau": r.tau,
        "tau_ap": r.tau_ap,
        "real_flips": len(r.real_flips),
        "bias": report.leniency.bias,
        "limits": list(report.leniency.limits) if report.leniency.limits else None,
    }


def _probe_warning(judge: ModelJudgeInfo) -> list[str]:
    """The judge's probe flag, when its last probes found it gamed."""
    if not judge.probes:
        return []
    summary = ProbeSummary.from_dict(judge.probes)
    return [summary.sentence()] if summary.flagged else []


@dataclass(frozen=True)
class ProbePair:
    """A pair people graded low, what the judge reads of it, its grades and another query's fragment."""

    pair: JudgePair
    human: int  # people's consensus grade (median)
    judge: int | None  # the judge's current grade of the unaltered pair, if it has one
    other: str  # a fragment of another query, as the judge would read it


def probe_pairs(
    engine: Engine, project: str, name: str, sample: int, seed: int = 0
) -> tuple[ProjectInfo, Guideline, ModelJudgeInfo, list[ProbePair]]:
    """The `sample` pairs people graded lowest (lowest consensus grade first, seeded random order within a
    grade), with the judge's grade where it has one and a fragment of another query for each."""
    if sample < 1:
        raise ValueError(f"sample must be at least 1, got {sample}")
    judge = _judge_named(engine, project, name)
    info, in_force = judge_setup(engine, project)
    judged = judgments_frame(engine, project)
    judged = judged[judged["grade"].notna()]
    humans = judged[judged["annotator_kind"].eq(AnnotatorKind.HUMAN).to_numpy()]
    agreed = over_reference(humans, "median", None, info.scale, judged)  # a reference's grade where nobody graded
    if agreed.empty:
        raise ValueError(f"project {project!r} has no grades from people (or a reference) to probe the judge on")
    mine = judged[judged["annotator"].eq(judge.username).to_numpy()]
    theirs = {f"{q}/{f}": int(g) for q, f, g in zip(mine["query_id"], mine["fragment_id"], mine["grade"], strict=True)}
    pairs = {p.label: p for p in judge_pairs(engine, project, None, info.labels, in_force.text, judge.params)}
    rng = np.random.default_rng(seed)
    agreed = agreed.assign(order=rng.random(len(agreed))).sort_values(["grade", "order"])
    chosen = []
    for q, f, g in zip(agreed["query_id"], agreed["fragment_id"], agreed["grade"], strict=True):
        label = f"{q}/{f}"
        if label in pairs:
            chosen.append((pairs[label], int(g), theirs.get(label)))
        if len(chosen) == sample:
            break
    all_pairs = list(pairs.values())
    out = []
    for pair, human, grade in chosen:
        others = [p for p in all_pairs if p.query != pair.query]
        other = others[int(rng.integers(len(others)))].fragment_text if others else ""
        out.append(ProbePair(pair, human, grade, other))
    return info, in_force, judge, out


def save_probes(engine: Engine, name: str, summary: dict, *, actor: Actor) -> None:
    """Keep the judge's last probe summary on its account (its card and judge-trust read it)."""
    with session_scope(engine, write=True) as session:
        require_lead(session, actor)
        user = session.execute(
            select(User).where(col(User.username) == name, col(User.kind) == "model")
        ).scalar_one_or_none()
        if user is None:
            raise NotFound(f"no model judge {name!r}")
        user.probes = summary
        session.add(user)


def _judge_id(engine: Engine, project: str, name: str) -> tuple[str, int]:
    """The model judge's account name and user id."""
    username = _judge_named(engine, project, name).username
    with session_scope(engine) as session:
        return username, int(session.execute(select(col(User.id)).where(col(User.username) == username)).scalar_one())


def _post_edit_inputs(engine: Engine, project: str, name: str):
    """(the judge's user id, scale, people's real grades, the judge's real grades, stored runs): one read of the
    project's judgments and runs, which the queue and the edit figures both work from."""
    username, user_id = _judge_id(engine, project, name)
    inputs = robustness_inputs(engine, project)
    frame = inputs.judgments[inputs.judgments["grade"].notna()]
    humans = frame[frame["annotator_kind"].eq(AnnotatorKind.HUMAN).to_numpy()]
    mine = frame[frame["annotator"].eq(username).to_numpy()]
    return user_id, inputs.scale, humans, mine, inputs.runs, frame


def post_edit_queue(engine: Engine, project: str, name: str) -> pd.DataFrame:
    """The model judge's grades on pairs no person graded, most likely wrong first (eval_core.judges.post_edit):
    pair_id, query_id, fragment_id, grade, p_wrong, impact, score, sent (already in someone's queue)."""
    return _queue(engine, project, _post_edit_inputs(engine, project, name))


def post_edit_view(engine: Engine, project: str, name: str, weights: str = "linear") -> tuple[EditStats, pd.DataFrame]:
    """post_edit_stats and post_edit_queue from one read of the project (what `qrelkit post-edit` and the Judges
    page show together)."""
    inputs = _post_edit_inputs(engine, project, name)
    return _stats(engine, project, inputs, weights), _queue(engine, project, inputs)


def _queue(engine: Engine, project: str, inputs) -> pd.DataFrame:
    """post_edit_queue from _post_edit_inputs. People's labels are a humans-only release's: a reference's grade
    (an imported NIST qrels) stands where no person graded, so the model's grade there needs no post-edit."""
    user_id, scale, humans, mine, runs, frame = inputs
    agreed = over_reference(humans, "median", None, scale, frame)
    shared = mine[[*PAIR, "grade"]].merge(agreed[[*PAIR, "grade"]], on=PAIR, suffixes=("", "_people"))
    shared = shared.rename(columns={"grade": "model", "grade_people": "people"})
    graded = agreed[PAIR].drop_duplicates()
    gaps = mine[[*PAIR, "grade"]].merge(graded, on=PAIR, how="left", indicator=True)
    gaps = gaps[(gaps["_merge"] == "left_only").to_numpy()].drop(columns="_merge")
    with session_scope(engine) as session:
        project_id = pk(project_row(session, project))
        ids = session.execute(
            select(col(Pair.id), col(Query.external_id), col(Fragment.external_id))
            .join(Query, col(Query.id) == Pair.query_id)
            .join(Fragment, col(Fragment.id) == Pair.fragment_id)
            .where(col(Pair.project_id) == project_id)
        ).all()
        marked = select(col(Assignment.pair_id)).where(
            col(Assignment.project_id) == project_id, col(Assignment.post_edit_of) == user_id
        )
        sent = set(session.execute(marked).scalars())
    pair_ids = pd.DataFrame(ids, columns=["pair_id", *PAIR])
    gaps = gaps.merge(pair_ids, on=PAIR)
    ordered = post_edit_order(gaps, shared, runs, scale)
    ordered["sent"] = ordered["pair_id"].isin(sent)
    columns = ["pair_id", *PAIR, "grade", "p_wrong", "impact", "score", "sent"]
    return ordered[columns].reset_index(drop=True)


def send_for_post_editing(
    engine: Engine, project: str, name: str, to: Sequence[str], limit: int, *, actor: Actor
) -> int:
    """Put the first `limit` unsent pairs of the post-edit queue in the queues of the people named in `to`, in
    turn (each pair to one person), marked as post-editing `name`'s grade; they grade blind, as in re-judging.
    Returns how many were sent. Leads and the operator only."""
    if limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    if not to:
        raise ValueError("name the people who post-edit the model's grades")
    queue = post_edit_queue(engine, project, name)
    todo = queue[~queue["sent"].to_numpy()].head(limit)
    _, judge_id = _judge_id(engine, project, name)
    with session_scope(engine, write=True) as session:
        require_lead(session, actor)
        project_id = pk(project_row(session, project))
        people = judging_people(session, list(to))
        targets = [(int(p), people[i % len(people)]) for i, p in enumerate(todo["pair_id"])]
        refuse_seen(session, project_id, targets)
        open_assignments(session, project_id, targets, post_edit_of=judge_id)
    return len(targets)


def post_edit_stats(engine: Engine, project: str, name: str, weights: str = "linear") -> EditStats:
    """People's post-edits of the model judge's grades so far: the edit rate per model grade and the model's κ
    against the post-edited grades (each post-edited pair's grade from the person it was sent to)."""
    return _stats(engine, project, _post_edit_inputs(engine, project, name), weights)


def _stats(engine: Engine, project: str, inputs, weights: str) -> EditStats:
    """post_edit_stats from _post_edit_inputs."""
    user_id, scale, _, mine, _, _ = inputs
    with session_scope(engine) as session:
        project_id = pk(project_row(session, project))
        rows = session.execute(
            select(col(Query.external_id), col(Fragment.external_id), col(Judgment.grade))
            .select_from(Assignment)
            .join(
                Judgment,
                and_(col(Judgment.pair_id) == Assignment.pair_id, col(Judgment.user_id) == Assignment.user_id),
            )
            .join(Pair, col(Pair.id) == Assignment.pair_id)
            .join(Query, col(Query.id) == Pair.query_id)
            .join(Fragment, col(Fragment.id) == Pair.fragment_id)
            .where(
                col(Assignment.project_id) == project_id,
                col(Assignment.post_edit_of) == user_id,
                col(Judgment.grade).is_not(None),
            )
        ).all()
    edited = pd.DataFrame(rows, columns=[*PAIR, "edited"])
    both = mine[[*PAIR, "grade"]].merge(edited, on=PAIR)
    return edit_stats(both["grade"].to_numpy(), both["edited"].to_numpy(), scale, weights)
