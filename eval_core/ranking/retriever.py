"""Evaluate a live retriever against a golden set: call it, keep its run, score it.

The retriever is the user's callable from query text to ranked fragment ids — sync or async, returning a
list of ids or of (id, score) pairs. It is called once per golden query with bounded concurrency (an
asyncio semaphore; sync callables run in a thread pool of the same size); a failure is recorded for its
query, which then scores 0, and is reported — never dropped silently.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import numbers
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from eval_core.io.collection import query_texts
from eval_core.io.formats import read_qrels
from eval_core.io.writers import write_run
from eval_core.progress import bar as progress_bar
from eval_core.ranking.evaluation import Evaluation, evaluate
from eval_core.ranking.metrics import DEFAULT_K

MAX_LISTED = 5


def _is_id(value: Any) -> bool:
    """Fragment ids are strings or integers (numpy's included), never booleans."""
    return isinstance(value, str | numbers.Integral) and not isinstance(value, bool | np.bool_)


def ranking(result: Any) -> list[tuple[str, float | None]]:
    """Normalise a retriever's answer to [(fragment id, score or None)], rejecting anything ambiguous."""
    if isinstance(result, str | bytes | Mapping) or not isinstance(result, Iterable):
        raise TypeError(f"retriever must return a list of ids or (id, score) pairs, got {type(result).__name__}")
    out: list[tuple[str, float | None]] = []
    for item in result:
        if _is_id(item):
            out.append((str(item), None))
        elif isinstance(item, tuple | list) and len(item) == 2 and _is_id(item[0]):
            score = float(item[1])
            if not math.isfinite(score):
                raise ValueError(f"fragment {item[0]!r} has a non-finite score {item[1]!r}")
            out.append((str(item[0]), score))
        else:
            raise TypeError(f"retriever returned {item!r}: expected an id or an (id, score) pair")
    if len({s is None for _, s in out}) > 1:
        raise TypeError("retriever mixed bare ids and (id, score) pairs in one answer")
    seen: set[str] = set()
    for doc, _ in out:
        if doc in seen:
            raise ValueError(f"fragment {doc!r} returned twice")
        seen.add(doc)
    return out


def is_async(retriever: Callable[..., Any]) -> bool:
    """True for coroutine functions and objects whose __call__ is one."""
    return inspect.iscoroutinefunction(retriever) or inspect.iscoroutinefunction(type(retriever).__call__)


async def collect(
    texts: Mapping[str, str], retriever: Callable[..., Any], concurrency: int = 8, progress: bool = True
) -> tuple[dict[str, list[tuple[str, float | None]]], dict[str, str]]:
    """Call the retriever for every query, at most `concurrency` at a time; return rankings and errors."""
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    gate = asyncio.Semaphore(concurrency)
    loop = asyncio.get_running_loop()
    pool = None if is_async(retriever) else ThreadPoolExecutor(concurrency, thread_name_prefix="qrelkit-retriever")
    results: dict[str, list[tuple[str, float | None]]] = {}
    errors: dict[str, str] = {}
    bar = progress_bar(total=len(texts), desc="retrieving", unit="query", show=progress)

    async def one(qid: str, text: str) -> None:
        async with gate:
            try:
                answer = await retriever(text) if pool is None else await loop.run_in_executor(pool, retriever, text)
                if inspect.isawaitable(answer):
                    answer = await answer
                results[qid] = ranking(answer)
            except Exception as exc:  # the user's code may raise anything; it is reported per query
                errors[qid] = f"{type(exc).__name__}: {exc}"
            finally:
                bar.update(1)

    try:
        await asyncio.gather(*(one(q, t) for q, t in texts.items()))
    finally:
        bar.close()
        if pool is not None:
            pool.shutdown(wait=True)
    return results, errors


def run_frame(results: Mapping[str, list[tuple[str, float | None]]], order: Sequence[str]) -> pd.DataFrame:
    """The run as a DataFrame; bare id lists get strictly decreasing scores so their order is kept."""
    qids: list[str] = []
    docs: list[str] = []
    scores: list[float] = []
    for qid in order:
        items = results.get(qid, [])
        n = len(items)
        for i, (doc, score) in enumerate(items):
            qids.append(qid)
            docs.append(doc)
            scores.append(float(n - i) if score is None else score)
    return pd.DataFrame(
        {
            "query_id": pd.Series(qids, dtype=str),
            "doc_id": pd.Series(docs, dtype=str),
            "score": pd.Series(scores, dtype="float64"),
        }
    )


async def aevaluate_retriever(
    qrels: Any,
    queries: Mapping[str, str] | str | Path,
    retriever: Callable[..., Any],
    *,
    k: Sequence[int] = DEFAULT_K,
    metrics: Sequence[str] | None = None,
    rel_level: int | None = None,
    categories: Any = None,
    concurrency: int = 8,
    run_path: str | Path | None = None,
    name: str | None = None,
    progress: bool = True,
) -> RetrieverEvaluation:
    """`evaluate_retriever` for code already inside an event loop (await it there)."""
    started = time.perf_counter()
    qdf = read_qrels(qrels)
    texts = {str(q): t for q, t in queries.items()} if isinstance(queries, Mapping) else query_texts(queries)
    golden = list(dict.fromkeys(qdf["query_id"]))
    known = {q: texts[q] for q in golden if q in texts}
    results, errors = await collect(known, retriever, concurrency, progress)
    for q in golden:
        if q not in texts:
            errors[q] = "no query text given"
    name = name or getattr(retriever, "__name__", None) or type(retriever).__name__
    failed = [f"{q} ({errors[q]})" for q in golden if q in errors]
    listed = "; ".join(failed[:MAX_LISTED]) + (
        f"; … (+{len(failed) - MAX_LISTED} more)" if len(failed) > MAX_LISTED else ""
    )
    run = run_frame(results, golden)
    if run.empty:
        raise RuntimeError(
            f"the retriever returned no fragment for any of the {len(golden)} golden queries; "
            f"nothing to evaluate" + (f". Failures: {listed}" if failed else "")
        )
    if run_path is not None:
        write_run(run, run_path, tag=name)
    evaluation = evaluate(qdf, run, metrics=metrics, k=k, rel_level=rel_level, categories=categories, name=name)
    if failed:
        evaluation.warnings.insert(
            0, f"{len(failed)} of {len(golden)} queries got no ranking from the retriever and score 0: {listed}"
        )
    return RetrieverEvaluation(
        evaluation,
        run,
        {q: errors[q] for q in golden if q in errors},
        None if run_path is None else str(run_path),
        time.perf_counter() - started,
    )


def evaluate_retriever(
    qrels: Any,
    queries: Mapping[str, str] | str | Path,
    retriever: Callable[..., Any],
    *,
    k: Sequence[int] = DEFAULT_K,
    metrics: Sequence[str] | None = None,
    rel_level: int | None = None,
    categories: Any = None,
    concurrency: int = 8,
    run_path: str | Path | None = None,
    name: str | None = None,
    progress: bool = True,
) -> RetrieverEvaluation:
    """Call `retriever(query_text)` for every golden query, keep the run (TREC file if run_path) and evaluate it.

    From inside a running event loop (a notebook), the work runs on a fresh loop in a helper thread; an
    async retriever bound to the caller's loop should use `await aevaluate_retriever(...)` instead.
    """
    work = aevaluate_retriever(
        qrels,
        queries,
        retriever,
        k=k,
        metrics=metrics,
        rel_level=rel_level,
        categories=categories,
        concurrency=concurrency,
        run_path=run_path,
        name=name,
        progress=progress,
    )
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(work)
    with ThreadPoolExecutor(1) as helper:
        return helper.submit(asyncio.run, work).result()


@dataclass
class RetrieverEvaluation:
    """The run a retriever produced, its evaluation, and the queries it failed on."""

    evaluation: Evaluation
    run: pd.DataFrame
    errors: dict[str, str]
    run_path: str | None
    seconds: float

    def to_dict(self, per_query: bool = False) -> dict[str, Any]:
        """JSON-able form: the evaluation plus errors, run file and wall time."""
        return {
            **self.evaluation.to_dict(per_query),
            "errors": dict(self.errors),
            "run_path": self.run_path,
            "seconds": self.seconds,
        }
