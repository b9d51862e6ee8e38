"""Who judges what: each pair to N distinct annotators, least-loaded first, grouped by query, topped up idempotently."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from sqlalchemy import insert, select
from sqlalchemy.engine import Engine
from sqlmodel import Session, col

from db.accounts.permissions import Actor, require_lead
from db.projects import project_row
from db.qualification import round_pair_ids
from db.store.engine import session_scope
from db.store.models import Assignment, Fragment, Judgment, Pair, Query, User, pk, table_of, utcnow
from eval_core.errors import InputError, NotFound, Problems
from eval_core.io.records import format_by_name, iter_lines, iter_records
from eval_core.vocab import AnnotatorKind

IMPORTED = "import"  # the source of a pair only a judgments import named (db.imports), never pooled


@dataclass
class AssignReport:
    """What one assignment pass did: new assignments per annotator; of the pairs asked to have the full overlap
    (`pairs_asked_overlap`), how many will have it in people's grades and assignments (`pairs_with_overlap`);
    the pairs that will still have fewer than they were asked (`pairs_short`); named annotators who cannot log
    in (no password yet), whose new assignments wait for one; the pairs left out because only a judgments
    import named them (`imported_only`: pool them, or name them with `pair_ids`); the pairs left out because
    their fragment has no text yet (`waiting_for_text`, db.textless: import the texts, then assign again)."""

    created: int = 0
    pairs_topped_up: int = 0
    per_annotator: dict[str, int] = field(default_factory=dict)
    overlap: int = 2
    fraction: float = 1.0
    pairs_asked_overlap: int = 0
    pairs_with_overlap: int = 0
    pairs_total: int = 0
    pairs_short: int = 0
    cannot_log_in: list[str] = field(default_factory=list)
    imported_only: int = 0
    waiting_for_text: int = 0

    def to_dict(self) -> dict:
        """JSON-able form for the CLI and the app."""
        return dict(self.__dict__)


def overlap_sample(pair_ids: np.ndarray, fraction: float, seed: int) -> np.ndarray:
    """Mask of the round(fraction·n) pairs that get full overlap: the smallest seeded hashes of their ids, so the
    choice is reproducible and barely moves when pairs are added later."""
    if fraction >= 1:
        return np.ones(len(pair_ids), dtype=bool)
    with np.errstate(over="ignore"):
        x = pair_ids.astype(np.uint64) + np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        x = x ^ (x >> np.uint64(31))
    take = round(fraction * len(pair_ids))
    mask = np.zeros(len(pair_ids), dtype=bool)
    mask[np.argsort(x, kind="stable")[:take]] = True
    return mask


def _annotators(session: Session, names: list[str] | None) -> list[tuple[int, str, bool]]:
    """(id, username, can log in) of the chosen annotators: the named active users, or every active human
    annotator who can log in (an account a judgments import created has no password and could never open its
    queue; a model judge grades by `qrelkit prejudge`, never from a queue)."""
    if names is None:
        rows = session.execute(
            select(col(User.id), col(User.username))
            .where(
                col(User.role) == "annotator",
                col(User.active),
                col(User.kind) == AnnotatorKind.HUMAN,
                col(User.password_hash).is_not(None),
            )
            .order_by(col(User.id))
        ).all()
        return [(r.id, r.username, True) for r in rows]
    by_name = {
        r.username: r
        for r in session.execute(
            select(
                col(User.id),
                col(User.username),
                col(User.active),
                col(User.kind),
                col(User.password_hash).is_not(None).label("can_login"),
            ).where(col(User.username).in_(names))
        ).all()
    }
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise NotFound(f"no user named {', '.join(map(repr, unknown))}")
    references = [n for n in names if by_name[n].kind == AnnotatorKind.REFERENCE]
    if references:
        raise ValueError(
            f"reference annotator(s) get no queue: {', '.join(references)} (their grades are a reference "
            "people are measured against, never an overlap slot)"
        )
    models = [n for n in names if by_name[n].kind != AnnotatorKind.HUMAN]
    if models:
        raise ValueError(f"model judge(s) get no queue: {', '.join(models)}")
    inactive = [n for n in names if not by_name[n].active]
    if inactive:
        raise ValueError(f"inactive user(s) cannot be assigned: {', '.join(inactive)}")
    return [(by_name[n].id, n, bool(by_name[n].can_login)) for n in dict.fromkeys(names)]


def _counted(session: Session, project_id: int) -> dict[int, set[int]]:
    """Per pair, the people who count towards its overlap: every person (not a model judge) who graded it, and
    every active person able to log in who holds its assignment (an assignment to an account that cannot log
    in, or a deactivated one, will never be judged)."""
    have: dict[int, set[int]] = defaultdict(set)
    for pid, uid in session.execute(
        select(col(Judgment.pair_id), col(Judgment.user_id))
        .join(User, col(User.id) == Judgment.user_id)
        .where(col(Judgment.project_id) == project_id, col(User.kind) == AnnotatorKind.HUMAN)
    ).all():
        have[pid].add(uid)
    for pid, uid in session.execute(
        select(col(Assignment.pair_id), col(Assignment.user_id))
        .join(User, col(User.id) == Assignment.user_id)
        .where(
            col(Assignment.project_id) == project_id,
            col(User.kind) == AnnotatorKind.HUMAN,
            col(User.active),
            col(User.password_hash).is_not(None),
        )
    ).all():
        have[pid].add(uid)
    return have


def assign(
    engine: Engine,
    project: str,
    overlap: int | None = None,
    fraction: float | None = None,
    annotators: list[str] | None = None,
    seed: int = 0,
    *,
    actor: Actor,
    pair_ids: Collection[int] | None = None,
) -> AssignReport:
    """Give every pooled pair `overlap` distinct annotators (or only a seeded `fraction` of pairs, the rest one),
    filling each query's pairs annotator by annotator so a query is read once; re-running tops up only what is
    missing. A pair that only a judgments import named (e.g. a reference's qrels) is not pooled and not
    assigned, unless `pair_ids` (the pairs to assign, see pairs_from_file) names it; a pair whose fragment has
    no text yet is never assigned (counted in `waiting_for_text`; assign again once the texts are imported).
    Leads and the operator only."""
    with session_scope(engine, write=True) as session:
        require_lead(session, actor)
        proj = project_row(session, project, lock=True)
        project_id = pk(proj)
        n = proj.overlap if overlap is None else overlap
        frac = proj.overlap_fraction if fraction is None else fraction
        if n < 1:
            raise ValueError(f"overlap must be at least 1, got {n}")
        if not 0 < frac <= 1:
            raise ValueError(f"fraction must be in (0, 1], got {frac}")
        chosen = _annotators(session, annotators)
        people = [(uid, name) for uid, name, _ in chosen]
        if len(people) < n:
            raise ValueError(
                f"overlap {n} needs at least {n} annotators who can log in, found {len(people)}"
                + (f" ({', '.join(u for _, u in people)})" if people else "")
            )
        report = AssignReport(overlap=n, fraction=frac, cannot_log_in=[u for _, u, ok in chosen if not ok])
        every = session.execute(
            select(col(Pair.id), col(Pair.query_id), col(Pair.sources), col(Fragment.has_text))
            .join(Fragment, col(Fragment.id) == Pair.fragment_id)
            .where(col(Pair.project_id) == project_id)
            .order_by(col(Pair.query_id), col(Pair.best_rank).is_(None), col(Pair.best_rank), col(Pair.id))
        ).all()
        if pair_ids is not None:
            wanted = set(pair_ids)
            rows = [r for r in every if r.id in wanted]
        else:
            rows = [r for r in every if list(r.sources or ()) != [IMPORTED]]
            report.imported_only = len(every) - len(rows)
        # a pair waiting for its fragment's text is never queued: it could not be served (db.grading)
        readable = [r for r in rows if r.has_text]
        report.waiting_for_text, rows = len(rows) - len(readable), readable
        pair_ids = np.array([r.id for r in rows], dtype=np.int64)
        full = overlap_sample(pair_ids, frac, seed)
        report.pairs_total, report.pairs_asked_overlap = len(rows), int(full.sum())
        have = _counted(session, project_id)
        held: dict[int, set[int]] = defaultdict(set, {pid: set(users) for pid, users in have.items()})
        next_pos: dict[int, int] = defaultdict(int)
        load: dict[int, int] = defaultdict(int)
        for pid, uid, pos in session.execute(
            select(col(Assignment.pair_id), col(Assignment.user_id), col(Assignment.position)).where(
                col(Assignment.project_id) == project_id
            )
        ).all():
            held[pid].add(uid)  # never a second assignment of a pair to one queue, even one that does not count
            next_pos[uid] = max(next_pos[uid], pos + 1)
            load[uid] += 1
        for uid, pairs in round_pair_ids(session, project_id).items():  # seen with its settled grade: never again
            for pid in pairs:
                held[pid].add(uid)
        new = plan_assignments(rows, full, n, people, have, load, next_pos, held)
        if new:
            now = utcnow()
            session.execute(
                insert(table_of(Assignment)),
                [
                    {"project_id": project_id, "pair_id": p, "user_id": u, "position": pos, "created_at": now}
                    for p, u, pos in new
                ],
            )
        after = _counted(session, project_id)  # what will exist, new assignments included
        report.pairs_with_overlap = sum(1 for r, f in zip(rows, full, strict=True) if f and len(after[r.id]) >= n)
        report.pairs_short = sum(1 for r, f in zip(rows, full, strict=True) if len(after[r.id]) < (n if f else 1))
        names = dict(people)
        for _, uid, _ in new:
            report.per_annotator[names[uid]] = report.per_annotator.get(names[uid], 0) + 1
        report.created = len(new)
        report.pairs_topped_up = len({p for p, _, _ in new})
    return report


def plan_assignments(
    rows: list,
    full: np.ndarray,
    n: int,
    people: list[tuple[int, str]],
    have: dict[int, set[int]],
    load: dict[int, int],
    next_pos: dict[int, int],
    held: dict[int, set[int]] | None = None,
) -> list[tuple[int, int, int]]:
    """(pair, user, position) to add, rows sorted by query then reading order: per query, annotators already
    reading it come first, then the least loaded, so each annotator gets a query's pairs consecutively.
    `have` holds the people who count towards a pair's overlap (someone who already judged it, e.g. imported
    judgments, counts as one of its annotators); `held` (default `have`) everyone already holding the pair,
    who never gets it twice. Both are updated with what is planned."""
    held = have if held is None else held
    order = {uid: i for i, (uid, _) in enumerate(people)}
    out: list[tuple[int, int, int]] = []
    start = 0
    while start < len(rows):
        qid = rows[start].query_id
        end = start
        while end < len(rows) and rows[end].query_id == qid:
            end += 1
        readers = {u for r in rows[start:end] for u in held[r.id]}
        ranking = sorted(order, key=lambda u: (u not in readers, load[u], order[u]))
        for i in range(start, end):
            pid = rows[i].id
            need = (n if full[i] else 1) - len(have[pid])
            for uid in ranking:
                if need <= 0:
                    break
                if uid in held[pid]:
                    continue
                have[pid].add(uid)
                held[pid].add(uid)
                out.append((pid, uid, next_pos[uid]))
                next_pos[uid] += 1
                load[uid] += 1
                need -= 1
        start = end
    return out


def _pair_keys(path: str | Path) -> Iterator[tuple[int, str, str]]:
    """(line, query id, fragment id) of a pairs file: JSONL/CSV/TSV records with query_id and fragment_id (or
    doc_id), as `qrelkit export --pairs` writes them; else whitespace-separated lines `qid fid`, TREC qrels
    `qid iter docid grade` or a TREC run `qid Q0 docid rank score tag`."""
    if format_by_name(path) is not None:
        for line, rec in iter_records(path, ("query_id",)):
            fragment = rec.get("fragment_id", rec.get("doc_id"))
            if fragment is None:
                raise InputError(str(path), line, "a pair needs fragment_id (or doc_id)")
            yield line, str(rec["query_id"]).strip(), str(fragment).strip()
        return
    for line, text in iter_lines(path, blank=False):
        fields = text.split()
        if not fields or fields[0].startswith("#"):
            continue
        if len(fields) not in (2, 4, 6):
            raise InputError(
                str(path),
                line,
                f"expected `query_id fragment_id`, TREC qrels (4 fields) or a TREC run (6 fields); found "
                f"{len(fields)} field(s)",
            )
        yield line, fields[0], fields[1 if len(fields) == 2 else 2]


def pairs_from_file(engine: Engine, project: str, path: str | Path) -> list[int]:
    """The pair ids a file names (see _pair_keys), for `assign --pairs`: every line must name a pair the project
    has (pooled or imported), else nothing is assigned and every bad line is told."""
    with session_scope(engine) as session:
        proj = project_row(session, project)
        known = {
            (q, f): pid
            for pid, q, f in session.execute(
                select(col(Pair.id), col(Query.external_id), col(Fragment.external_id))
                .join(Query, col(Query.id) == Pair.query_id)
                .join(Fragment, col(Fragment.id) == Pair.fragment_id)
                .where(col(Pair.project_id) == pk(proj))
            ).all()
        }
    problems = Problems(path)
    out: dict[int, None] = {}
    for line, query, fragment in _pair_keys(path):
        pid = known.get((query, fragment))
        if pid is None:
            problems.add(line, f"no pair ({query!r}, {fragment!r}) in project {project!r}: pool or import it first")
        else:
            out[pid] = None
    problems.check()
    if not out:
        raise InputError(str(path), None, "names no pair")
    return list(out)
