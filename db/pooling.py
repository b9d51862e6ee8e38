"""Candidate pairs to judge: depth-k pooling of stored runs plus BM25 over the fragment texts, deduplicated."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col

from db.accounts.permissions import Actor, require_lead
from db.projects import project_row
from db.store.engine import session_scope
from db.store.models import Fragment, Pair, Query, Run, RunEntry, pk, table_of, utcnow
from eval_core.errors import NotFound

BM25 = "bm25"
POOL_STEPS = 3
UNKNOWN_LISTED = 10
_WORD = re.compile(r"[^\W_]+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


@dataclass
class PoolReport:
    """What one pooling (or holes) pass did: pairs created / already there / merged as same-text duplicates."""

    created: int = 0
    existing: int = 0
    duplicates: int = 0
    provenance_updated: int = 0
    per_source: dict[str, dict[str, int]] = field(default_factory=dict)
    unknown_docs: dict[str, dict] = field(default_factory=dict)
    # (query, fragment, its same-text duplicate): the query's store id while pooling, its external id after
    duplicate_pairs: list[tuple[Any, str, str]] = field(default_factory=list)
    search: dict[str, Any] = field(default_factory=dict)  # a live-search pool: its run, queries, hits, imports

    def to_dict(self) -> dict:
        """JSON-able form for the CLI and the app."""
        return {
            "created": self.created,
            "existing": self.existing,
            "duplicates": self.duplicates,
            "provenance_updated": self.provenance_updated,
            "per_source": self.per_source,
            "unknown_docs": self.unknown_docs,
            "duplicate_pairs": [list(t) for t in self.duplicate_pairs],
            **({"search": self.search} if self.search else {}),
        }


def tokenize(text: str) -> list[str]:
    """Lower-cased words, with CJK text split into single characters so Chinese/Japanese match too."""
    return _WORD.findall(_CJK.sub(r" \g<0> ", text.lower()))


def bm25_candidates(docs: dict[int, str], queries: dict[int, str], k: int) -> list[tuple[int, int, int]]:
    """(query id, fragment id, rank) for each query's top-k BM25 fragments with a positive score."""
    import bm25s

    if not docs or not queries or k < 1:
        return []
    doc_ids = list(docs)
    vocab: dict[str, int] = {}
    corpus = [[vocab.setdefault(t, len(vocab)) for t in tokenize(docs[d])] for d in doc_ids]
    vocab.setdefault("", len(vocab))
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenization.Tokenized(ids=corpus, vocab=vocab), show_progress=False)
    qids = list(queries)
    qtokens = [[vocab[t] for t in tokenize(queries[q]) if t in vocab] or [vocab[""]] for q in qids]
    top, scores = retriever.retrieve(
        bm25s.tokenization.Tokenized(ids=qtokens, vocab=vocab), k=min(k, len(doc_ids)), show_progress=False
    )
    out: list[tuple[int, int, int]] = []
    for qid, row, srow in zip(qids, np.asarray(top), np.asarray(scores), strict=True):
        ranked = [doc_ids[i] for i, s in zip(row, srow, strict=True) if s > 0]
        out.extend((qid, fid, rank) for rank, fid in enumerate(ranked, start=1))
    return out


def _source_stats() -> dict[str, int]:
    """One source's counts: its candidates, the new pairs credited to it (each new pair once, to the source
    that ranked it best, so they sum to `created`) and the new pairs it found, alone or with others."""
    return {"candidates": 0, "created": 0, "found_new": 0}


def add_candidates(
    session: Session, project_id: int, candidates: list[tuple[int, int, int, str]], report: PoolReport | None = None
) -> PoolReport:
    """Merge (query id, fragment id, rank, source) candidates into `pairs`: create new ones in bulk, union the
    provenance of existing ones, and fold fragments with identical text into the query's one pair."""
    report = report or PoolReport()
    frags = session.execute(
        select(col(Fragment.id), col(Fragment.content_hash), col(Fragment.external_id)).where(
            col(Fragment.project_id) == project_id
        )
    ).all()
    digest = {f.id: f.content_hash for f in frags}
    ext = {f.id: f.external_id for f in frags}
    pairs: dict[tuple[int, str], dict] = {}
    for p in session.execute(
        select(col(Pair.id), col(Pair.query_id), col(Pair.fragment_id), col(Pair.sources), col(Pair.best_rank)).where(
            col(Pair.project_id) == project_id
        )
    ).all():
        pairs.setdefault(
            (p.query_id, digest[p.fragment_id]),
            {
                "id": p.id,
                "fragment_id": p.fragment_id,
                "sources": set(p.sources or ()),
                "old_sources": set(p.sources or ()),
                "best_rank": p.best_rank,
                "old_rank": p.best_rank,
            },
        )
    new_keys: list[tuple[int, str]] = []
    touched: set[int] = set()
    dups: set[tuple[int, int]] = set()
    for qid, fid, rank, source in sorted(candidates, key=lambda c: (c[0], c[2], c[3], c[1])):
        stats = report.per_source.setdefault(source, _source_stats())
        stats["candidates"] += 1
        key = (qid, digest[fid])
        pair = pairs.get(key)
        if pair is None:
            pair = pairs[key] = {
                "id": None,
                "fragment_id": fid,
                "sources": set(),
                "old_sources": set(),
                "best_rank": None,
                "old_rank": None,
                "creator": source,
            }
            new_keys.append(key)
        elif pair["id"] is not None:
            touched.add(pair["id"])
        if pair["fragment_id"] != fid and (qid, fid) not in dups:
            dups.add((qid, fid))
            report.duplicate_pairs.append((qid, ext[pair["fragment_id"]], ext[fid]))
        pair["sources"].add(source)
        pair["best_rank"] = rank if pair["best_rank"] is None else min(pair["best_rank"], rank)
    now = utcnow()
    rows = []
    for key in new_keys:
        pair = pairs[key]
        rows.append(
            {
                "project_id": project_id,
                "query_id": key[0],
                "fragment_id": pair["fragment_id"],
                "sources": sorted(pair["sources"]),
                "best_rank": pair["best_rank"],
                "created_at": now,
            }
        )
        report.per_source[pair["creator"]]["created"] += 1
        for source in pair["sources"]:
            report.per_source[source]["found_new"] += 1
    if rows:
        session.execute(insert(table_of(Pair)), rows)
    changed = [
        {"pid": p["id"], "s": sorted(p["sources"]), "r": p["best_rank"]}
        for p in pairs.values()
        if p["id"] is not None and (p["sources"] != p["old_sources"] or p["best_rank"] != p["old_rank"])
    ]
    if changed:
        table = table_of(Pair)
        session.execute(
            update(table)
            .where(table.c.id == bindparam("pid"))
            .values(sources=bindparam("s"), best_rank=bindparam("r")),
            changed,
            execution_options={"synchronize_session": False},
        )
    report.created += len(rows)
    report.existing += len(touched)
    report.provenance_updated += len(changed)
    report.duplicates = len(report.duplicate_pairs)
    if report.duplicate_pairs:
        qext = dict(
            session.execute(
                select(col(Query.id), col(Query.external_id)).where(col(Query.project_id) == project_id)
            ).all()
        )
        report.duplicate_pairs = [(qext[q], a, b) for q, a, b in report.duplicate_pairs]
    return report


def run_candidates(
    session: Session, project_id: int, depth: int, names: list[str] | None, report: PoolReport
) -> tuple[list[tuple[int, int, int, str]], set[int]]:
    """Top-`depth` entries of the chosen runs (all stored runs by default) and the queries they cover; documents
    the corpus does not hold are counted per run and the first UNKNOWN_LISTED named."""
    runs = session.execute(
        select(col(Run.id), col(Run.name)).where(col(Run.project_id) == project_id).order_by(col(Run.name))
    ).all()
    by_name = {r.name: r.id for r in runs}
    if names is not None:
        unknown = [n for n in names if n not in by_name]
        if unknown:
            raise NotFound(
                f"no stored run named {', '.join(map(repr, unknown))} (known: {', '.join(by_name) or 'none'})"
            )
        by_name = {n: by_name[n] for n in names}
    candidates: list[tuple[int, int, int, str]] = []
    covered: set[int] = set()
    for name, run_id in by_name.items():
        rows = session.execute(
            select(col(RunEntry.query_id), col(RunEntry.fragment_id), col(RunEntry.rank), col(RunEntry.doc_external_id))
            .where(col(RunEntry.run_id) == run_id, col(RunEntry.rank) <= depth)
            .order_by(col(RunEntry.query_id), col(RunEntry.rank))
        ).all()
        missing: dict[str, None] = {}
        for qid, fid, rank, doc in rows:
            covered.add(qid)
            if fid is None:
                missing.setdefault(doc)
            else:
                candidates.append((qid, fid, rank, name))
        report.per_source.setdefault(name, _source_stats())
        if missing:
            report.unknown_docs[name] = {"count": len(missing), "examples": list(missing)[:UNKNOWN_LISTED]}
    return candidates, covered


def pool(
    engine: Engine,
    project: str,
    depth: int,
    runs: list[str] | None = None,
    bm25: int | None = None,
    progress: Callable[[str], None] | None = None,
    *,
    actor: Actor,
) -> PoolReport:
    """TREC depth-k pooling of stored runs, plus BM25 top-`depth` for queries no run covers (or BM25 top-`bm25`
    for every query when given; 0 turns BM25 off). Idempotent: re-pooling only adds and merges provenance.
    Leads and the operator only.
    `progress` is called after each of the POOL_STEPS stages."""
    step = progress or (lambda _label: None)
    if depth < 1:
        raise ValueError(f"depth must be at least 1, got {depth}")
    if bm25 is not None and bm25 < 0:
        raise ValueError(f"bm25 depth must be 0 or more, got {bm25}")
    report = PoolReport()
    with session_scope(engine, write=True) as session:
        require_lead(session, actor)
        proj = project_row(session, project, lock=True)
        candidates, covered = run_candidates(session, pk(proj), depth, runs, report)
        step("runs")
        queries = dict(
            session.execute(select(col(Query.id), col(Query.text)).where(col(Query.project_id) == proj.id)).all()
        )
        if bm25 is None:
            want, k = {q: t for q, t in queries.items() if q not in covered}, depth
        else:
            want, k = (queries if bm25 > 0 else {}), bm25
        if want:
            docs = _unique_texts(session, pk(proj))
            found = bm25_candidates(docs, want, k)
            candidates.extend((q, f, r, BM25) for q, f, r in found)
            report.per_source.setdefault(BM25, _source_stats())
        step("bm25")
        add_candidates(session, pk(proj), candidates, report)
        step("pairs")
    return report


def _unique_texts(session: Session, project_id: int) -> dict[int, str]:
    """Title + text of one fragment per distinct content (the lowest id), so BM25 never returns twins; a fragment
    waiting for its text (db.textless) is not indexed."""
    rows = session.execute(
        select(col(Fragment.id), col(Fragment.content_hash), col(Fragment.title), col(Fragment.text))
        .where(col(Fragment.project_id) == project_id, col(Fragment.has_text))
        .order_by(col(Fragment.id))
    ).all()
    out: dict[int, str] = {}
    seen: set[str] = set()
    for fid, digest, title, text in rows:
        if digest not in seen:
            seen.add(digest)
            out[fid] = f"{title or ''}\n{text}"
    return out
