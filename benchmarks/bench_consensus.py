"""Consensus by annotator models at crowd scale: Dawid–Skene, MACE and GLAD through `consensus()` on a generated
crowd with a known truth, against median and majority — seconds, and how much of the truth each finds.

Data (eval_core.consensus.simulate): P pairs graded 0–3 by A annotators (70% good, 10% lenient, 10% harsh, 10%
spammers), J/P grades per pair on average, 10% hard pairs. Default: 1M judgments from 500 annotators over 300k
pairs (the size of crowd-kit's relevance-5 and NIST's TREC 2010 crowd set). Run: `python3
benchmarks/bench_consensus.py [--pairs 300000] [--annotators 500] [--per-pair 3.34] [--rules ...] [--repeat 1]
[--crowdkit]`. Each rule reports the median over the rounds of wall seconds and of this process's CPU seconds (on a
shared machine the wall time also holds other jobs' load; CPU time does not). `--crowdkit` also fits crowd-kit's
model for each model rule on the same judgments (crowd-kit is a test extra), once, and prints its time, the ratio
to ours, and the largest posterior difference and labels that differ.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from eval_core.consensus import MODEL_RULES, RULES, consensus
from eval_core.consensus.simulate import simulate_crowd

SHARES = {"good": 0.7, "lenient": 0.1, "harsh": 0.1, "spammer": 0.1}


def kinds(annotators: int) -> list[str]:
    """Annotator kinds in SHARES' proportions (the remainder good)."""
    out = [k for k, share in SHARES.items() if k != "good" for _ in range(int(annotators * share))]
    return ["good"] * (annotators - len(out)) + out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=300_000)
    parser.add_argument("--annotators", type=int, default=500)
    parser.add_argument("--per-pair", type=float, default=3.34)
    parser.add_argument("--rules", default="median,majority,dawid-skene,mace,glad", help="comma-separated")
    parser.add_argument("--repeat", type=int, default=1, help="rounds; their medians are reported")
    parser.add_argument("--crowdkit", action="store_true", help="time crowd-kit's model rules on the same data")
    args = parser.parse_args()
    rules = [r for r in args.rules.split(",") if r]
    unknown = sorted(set(rules) - set(RULES))
    if unknown:
        parser.error(f"unknown rule(s): {', '.join(unknown)}")
    start = time.perf_counter()
    judgments, truth = simulate_crowd(args.pairs, kinds(args.annotators), per_pair=args.per_pair, seed=0)
    print(
        f"{len(judgments):,} judgments from {args.annotators} annotators over {args.pairs:,} pairs "
        f"(generated in {time.perf_counter() - start:.1f} s)"
    )
    key = truth.set_index(["query_id", "fragment_id"])["grade"]
    hard = truth.set_index(["query_id", "fragment_id"])["hard"]
    for rule in rules:
        walls, cpus = [], []
        for _ in range(args.repeat):
            start, cpu = time.perf_counter(), time.process_time()
            labels = consensus(judgments, rule=rule)
            walls.append(time.perf_counter() - start)
            cpus.append(time.process_time() - cpu)
        indexed = labels.set_index(["query_id", "fragment_id"])
        right = indexed["grade"] == key.reindex(indexed.index)
        on_hard = right[hard.reindex(indexed.index).to_numpy()]
        print(
            f"{rule:<12} {statistics.median(walls):7.2f} s (CPU {statistics.median(cpus):.2f} s; "
            f"rounds {', '.join(f'{t:.1f}' for t in walls)})   truth found: {right.mean():.4f} "
            f"(hard pairs {on_hard.mean():.4f})"
        )
        if args.crowdkit and rule in MODEL_RULES:
            compare_crowdkit(rule, judgments, labels, statistics.median(walls))


def compare_crowdkit(rule: str, judgments: pd.DataFrame, ours: pd.DataFrame, seconds: float) -> None:
    """crowd-kit's model with its defaults on the same judgments (task = pair, worker = annotator): its wall
    time, the ratio to ours, and how far its posteriors are from ours."""
    from crowdkit.aggregation import GLAD, MACE, DawidSkene  # test extra: only here

    model = {"dawid-skene": DawidSkene(n_iter=100, tol=1e-5), "mace": MACE(), "glad": GLAD()}[rule]
    frame = pd.DataFrame(
        {
            "task": judgments["query_id"] + "\t" + judgments["fragment_id"],
            "worker": judgments["annotator"],
            "label": judgments["grade"],
        }
    )
    start = time.perf_counter()
    theirs = model.fit_predict_proba(frame)
    took = time.perf_counter() - start
    mine = pd.DataFrame(ours["posterior"].tolist(), index=ours["query_id"] + "\t" + ours["fragment_id"]).rename(
        columns=int
    )
    theirs = theirs.reindex(index=mine.index, columns=mine.columns).fillna(0.0).to_numpy(dtype=np.float64)
    gap = np.abs(theirs - mine.to_numpy(dtype=np.float64))
    differ = int((theirs.argmax(axis=1) != mine.to_numpy().argmax(axis=1)).sum())
    print(
        f"{'':<12} crowd-kit {took:7.2f} s ({took / seconds:.1f}× ours)   largest posterior difference "
        f"{gap.max():.2e}, labels differing {differ}"
    )


if __name__ == "__main__":
    main()
