"""Pool bias (Zobel's leave-one-run-out test): how much a run that helped build the pool would lose had its own
pairs not been judged — the expected underrating of a new run that did not contribute; and judged@k per run."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from eval_core.ranking.evaluation import evaluate

Pairs = set[tuple[str, str]]


@dataclass(frozen=True)
class PoolBias:
    """One pooled run's metric on the full qrels and on the qrels without the judged pairs only it contributed."""

    run: str
    full: float
    left_out: float
    own_pairs: int  # judged pairs no other pooled run contributed

    @property
    def drop(self) -> float:
        """What the run loses when its own pairs go unjudged (positive: it is underrated without them)."""
        return self.full - self.left_out

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {
            "run": self.run,
            "full": self.full,
            "left_out": self.left_out,
            "drop": self.drop,
            "own_pairs": self.own_pairs,
        }


def top_pairs(run: pd.DataFrame, depth: int) -> Pairs:
    """(query, fragment) of each query's top-`depth` in trec_eval order (score descending, ties by docid
    descending): what depth-k pooling takes from the run."""
    ordered = run.sort_values(["query_id", "score", "doc_id"], ascending=[True, False, False], kind="stable")
    top = ordered.groupby("query_id", sort=False).head(depth)
    return set(zip(top["query_id"].astype(str), top["doc_id"].astype(str), strict=True))


def own_pairs(pooled: Mapping[str, Pairs]) -> dict[str, Pairs]:
    """Per pooled run, the pairs it contributed that no other pooled run did."""
    counts: dict[tuple[str, str], int] = {}
    for pairs in pooled.values():
        for pair in pairs:
            counts[pair] = counts.get(pair, 0) + 1
    return {name: {p for p in pairs if counts[p] == 1} for name, pairs in pooled.items()}


def leave_one_run_out(
    qrels: pd.DataFrame, runs: Mapping[str, pd.DataFrame], pooled: Mapping[str, Pairs], metric: str, **options: Any
) -> list[PoolBias]:
    """For every run in `pooled` (and in `runs`): its `metric` on `qrels` and on `qrels` without the judged
    pairs only it contributed, averaged over the same queries; `options` go to `evaluate` (rel_level, scale)."""
    keys = pd.Series(
        list(zip(qrels["query_id"].astype(str), qrels["doc_id"].astype(str), strict=True)),
        index=qrels.index,
        dtype=object,
    )
    out = []
    for name, own in own_pairs(pooled).items():
        if name not in runs:
            continue
        drop = keys.isin(own)
        full = evaluate(qrels, runs[name], [metric], name=name, **options).per_query.iloc[:, 0]
        # a query left with no judged pair scores 0 there, and still counts in the mean (every query, when the
        # run contributed every judged pair: the single-run pool)
        left = (
            evaluate(qrels[~drop], runs[name], [metric], name=name, **options)
            .per_query.iloc[:, 0]
            .reindex(full.index, fill_value=0.0)
            if (~drop).any()
            else full * 0.0
        )
        out.append(PoolBias(name, float(full.mean()), float(left.mean()), int(drop.sum())))
    return out
