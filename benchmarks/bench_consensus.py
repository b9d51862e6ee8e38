"""Consensus by annotator models at crowd scale: Dawid–Skene, MACE and GLAD through `consensus()` on a generated
crowd with a known truth, against median and majority — seconds, and how much of the truth each finds.

Data (eval_core.consensus.simulate): P pairs graded 0–3 by A annotators (70% good, 10% lenient, 10% harsh, 10%
spammers), J/P grades per pair on average, 10% hard pairs. Default: 1M judgments from 500 annotators over 300k
pairs (the size of crowd-kit's relevance-5 and NIST's TREC 2010 crowd set). Run: `python3
benchmarks/bench_consensus.py [--pairs 300000] [--annotators 500] [--per-pair 3.34] [--rules ...] [--repeat 1]`.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from eval_core.consensus import RULES, consensus
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
    parser.add_argument("--repeat", type=int, default=1, help="rounds; the fastest is reported")
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
        times = []
        for _ in range(args.repeat):  # the fastest of a few rounds: a shared machine's load only adds time
            start = time.perf_counter()
            labels = consensus(judgments, rule=rule)
            times.append(time.perf_counter() - start)
        indexed = labels.set_index(["query_id", "fragment_id"])
        right = indexed["grade"] == key.reindex(indexed.index)
        on_hard = right[hard.reindex(indexed.index).to_numpy()]
        print(f"{rule:<12} {min(times):7.2f} s   truth found: {right.mean():.4f} (hard pairs {on_hard.mean():.4f})")


if __name__ == "__main__":
    main()
