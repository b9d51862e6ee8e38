"""A live search engine's top-k (from annotator.search_client) stored as a run with its request and pooled like
any run: new fragments imported when the reply carried their text, through db.imports' own importers."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.engine import Engine
from sqlmodel import col

from db.accounts.permissions import Actor, require_lead
from db.imports import MAX_ID_CHARS, MAX_NAME_CHARS, import_fragments, import_run
from db.pooling import PoolReport, add_candidates, run_candidates
from db.projects import project_row
from db.store.engine import session_scope
from db.store.models import Fragment, Query, Run, pk, table_of
from eval_core.errors import InputError, NotFound


def pool_search(
    engine: Engine,
    project: str,
    name: str,
    hits: Mapping[str, Sequence[tuple[str, float, str | None]]],
    request: dict[str, Any],
    depth: int,
    *,
    actor: Actor,
) -> PoolReport:
    """A live search engine's hits — (doc id, score, text or None) per query external id, from
    annotator.search_client — stored as the run `name` with `request` in runs.request (endpoint, template and
    paths; the caller leaves credentials out), then its top-`depth` pooled like any stored run.

    Hits naming a fragment the project lacks, or one still waiting for its text, get their text from the reply
    when it carried one (`fragments_imported` new, `texts_filled` filled in), all in one import through
    db.imports.import_fragments (all or nothing), before the run is stored through db.imports.import_run; a
    hit without a text becomes a fragment waiting for its text (db.textless), pooled but never served, and
    `search["hits_without_text"]` counts the hits that have none. Everything is checked before the first
    write; the writes are those two imports and one transaction for the request and
    the pairs, each all or nothing, and repeating the call completes an interrupted one."""
    name = name.strip()
    if not name or len(name) > MAX_NAME_CHARS:
        raise ValueError(f"run name must be 1-{MAX_NAME_CHARS} characters, got {name!r}")
    if depth < 1:
        raise ValueError(f"depth must be at least 1, got {depth}")
    with session_scope(engine) as session:
        require_lead(session, actor)
        proj = project_row(session, project)
        queries = set(session.execute(select(col(Query.external_id)).where(col(Query.project_id) == proj.id)).scalars())
        known = set(  # a fragment still waiting for its text is not known: a reply that carries it fills it in
            session.execute(
                select(col(Fragment.external_id)).where(col(Fragment.project_id) == proj.id, col(Fragment.has_text))
            ).scalars()
        )
    unknown_queries = sorted(set(hits) - queries)
    if unknown_queries:
        raise NotFound(f"query {unknown_queries[0]!r} is not in project {project!r}")
    if not any(hits.values()):
        raise ValueError(f"the engine found nothing for any of the {len(hits)} query(ies): no run to store")
    texts: dict[str, tuple[str, str]] = {}  # fragment id without text → (the query whose reply carried it, its text)
    for qid, found in hits.items():
        for doc, _score, carried in found:
            if len(doc) > MAX_ID_CHARS:
                raise ValueError(f"query {qid}: hit id {doc[:40]!r}… is {len(doc)} characters; at most {MAX_ID_CHARS}")
            if doc not in known and carried is not None:
                texts.setdefault(doc, (qid, carried))
    with tempfile.TemporaryDirectory(prefix="qrelkit-search-") as folder:
        imported = filled = 0
        if texts:
            path = f"{folder}/fragments.jsonl"
            with open(path, "w", encoding="utf-8") as out:
                for doc, (_qid, new_text) in texts.items():
                    out.write(json.dumps({"id": doc, "text": new_text}, ensure_ascii=False) + "\n")
            try:
                done = import_fragments(engine, project, path, actor=actor)
                imported, filled = done.created, done.texts_filled
            except InputError as exc:  # the temporary file's line n is the n-th new fragment
                if exc.line is None or not 1 <= exc.line <= len(texts):
                    raise ValueError(f"the hits' texts cannot be imported: {exc.problem}") from None
                bad, (where, _) = list(texts.items())[exc.line - 1]
                raise ValueError(f"query {where}: the text of hit {bad!r} cannot be imported: {exc.problem}") from None
        path = f"{folder}/run.jsonl"
        with open(path, "w", encoding="utf-8") as out:
            for qid, found in hits.items():
                for doc, score, _ in found:
                    out.write(json.dumps({"query_id": qid, "doc_id": doc, "score": score}, ensure_ascii=False) + "\n")
        stored = import_run(engine, project, path, name=name, actor=actor)
    report = PoolReport(
        search={
            "run": name,
            "queries": len(hits),
            "hits": sum(map(len, hits.values())),
            "queries_without_hits": sum(1 for found in hits.values() if not found),
            "run_stored": "unchanged" if stored.unchanged else "replaced" if stored.updated else "new",
            "fragments_imported": imported,
            "texts_filled": filled,
        }
    )
    with session_scope(engine, write=True) as session:
        require_lead(session, actor)
        proj = project_row(session, project, lock=True)
        run = table_of(Run)
        session.execute(update(run).where(run.c.project_id == proj.id, run.c.name == name).values(request=request))
        candidates, _covered = run_candidates(session, pk(proj), depth, [name], report)
        add_candidates(session, pk(proj), candidates, report)
        docs = sorted({doc for found in hits.values() for doc, _, _ in found})
        report.search["hits_without_text"] = sum(
            session.execute(
                select(func.count()).where(
                    col(Fragment.project_id) == proj.id,
                    col(Fragment.external_id).in_(docs[start : start + 500]),
                    ~col(Fragment.has_text),
                )
            ).scalar_one()
            for start in range(0, len(docs), 500)
        )
    return report
