"""Agreement at scale: the full report on 1M judgments, and the bootstrap per replicate vs `krippendorff.alpha`.

Data: 200,000 (query, fragment) pairs in 10,000 queries × 5 annotators = 1M judgment records, 20% of them
without a grade ("can't judge"), grades skewed toward 0 as in real pools. Run: `python3 benchmarks/bench_agreement.py`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import krippendorff
import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from eval_core.agreement.bootstrap import bootstrap_sums
from eval_core.agreement.coefficients import alpha_from_coincidence
from eval_core.agreement.data import encode, sum_by_group, unit_counts, unit_stats
from eval_core.agreement.report import agreement_report
from eval_core.io.judgments import check_judgments

T = TypeVar("T")


def make_judgments(n_pairs: int, n_annotators: int, per_query: int, seed: int) -> pd.DataFrame:
    """Synthetic judgments: a latent grade per pair, each annotator off by one now and then."""
    rng = np.random.default_rng(seed)
    truth = rng.choice(4, size=n_pairs, p=[0.55, 0.2, 0.15, 0.1])
    grade = np.clip(
        truth[:, None] + rng.choice([-1, 0, 1], size=(n_pairs, n_annotators), p=[0.15, 0.7, 0.15]), 0, 3
    ).ravel()
    pair = np.repeat(np.arange(n_pairs), n_annotators)
    annotator = np.tile(np.arange(n_annotators), n_pairs)
    draw = rng.random(len(grade))
    keep = np.ones(len(grade), dtype=bool)
    frame = pd.DataFrame(
        {
            "query_id": pd.Series(np.char.add("q", (pair // per_query).astype(str))[keep], dtype=str),
            "fragment_id": pd.Series(np.char.add("f", pair.astype(str))[keep], dtype=str),
            "annotator": pd.Series(np.char.add("ann", annotator.astype(str))[keep], dtype=str),
            "grade": pd.array(np.where(draw < 0.20, -1, grade)[keep], dtype="Int64"),
        }
    )
    frame.loc[frame["grade"] == -1, "grade"] = pd.NA
    return frame


def reliability_matrix(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Annotators × units matrix (NaN missing) for `krippendorff.alpha`, and each unit's query code."""
    enc = encode(frame, (0, 3))
    mat = np.full((len(enc.annotators), len(enc.units)), np.nan)
    valid = enc.grade >= 0
    mat[enc.annotator[valid], enc.unit[valid]] = enc.grade[valid]
    return mat, enc.unit_query


def timed(work: Callable[[], T]) -> tuple[tuple[float, float], T]:
    """Run once; ((wall seconds, CPU seconds of this process), result)."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = work()
    return (time.perf_counter() - wall, time.process_time() - cpu), result


def main() -> None:
    """Print timings, medians and the speed-up ratios quoted in docs/agreement.md."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pairs", type=int, default=200_000)
    parser.add_argument("--annotators", type=int, default=5)
    parser.add_argument("--per-query", type=int, default=20)
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument(
        "--reference-replicates",
        type=int,
        default=5,
        help="bootstrap replicates run through krippendorff.alpha (≈0.4 s each at full size)",
    )
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()

    frame = make_judgments(args.pairs, args.annotators, args.per_query, seed=7)
    print(
        f"{len(frame):,} judgments, {args.pairs:,} pairs, {args.pairs // args.per_query:,} queries, "
        f"{args.annotators} annotators, {frame['grade'].isna().sum():,} can't judge"
    )

    print(
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; wall / CPU seconds "
        "(CPU time is the figure that does not depend on how busy the machine is)"
    )
    full, cpu = [], []
    for _ in range(args.repeats):
        (wall_s, cpu_s), report = timed(lambda: agreement_report(frame, bootstrap=args.replicates, seed=1))
        full.append(wall_s)
        cpu.append(cpu_s)
    print(
        f"full report (α×3, cuts, κ×3 per pair, AC1/AC2, Fleiss, {args.replicates}-replicate bootstrap, "
        f"diagnostics): median {statistics.median(full):.2f} s wall of {[round(t, 2) for t in full]}, "
        f"{statistics.median(cpu):.2f} s CPU (target < 10 s)"
    )
    (_, no_boot_cpu), _ = timed(lambda: agreement_report(frame, bootstrap=0))
    all_per_rep = max(statistics.median(cpu) - no_boot_cpu, 0.0) / args.replicates
    print(
        f"bootstrap of every coefficient (report with minus without bootstrap): {all_per_rep * 1e3:.3f} ms CPU "
        "per replicate"
    )

    checked = check_judgments(frame)
    enc = encode(checked, (0, 3))
    rows, _ = unit_stats(unit_counts(enc))
    per_query = sum_by_group(rows, enc.unit_query, len(enc.queries))
    (wall_s, cpu_s), reps = timed(lambda: bootstrap_sums([per_query[:, :16]], args.replicates, seed=1))
    alphas = alpha_from_coincidence(reps[0].reshape(-1, 4, 4), "ordinal")
    ours = (wall_s / args.replicates, cpu_s / args.replicates)
    print(
        f"ours, ordinal α bootstrap: {ours[0] * 1e3:.3f} ms wall / {ours[1] * 1e3:.3f} ms CPU per replicate "
        f"({args.replicates} replicates, CI [{np.quantile(alphas, 0.025):.4f}, {np.quantile(alphas, 0.975):.4f}])"
    )

    mat, unit_query = reliability_matrix(checked)
    (ref_point, _), reference = timed(
        lambda: krippendorff.alpha(mat, level_of_measurement="ordinal", value_domain=[0, 1, 2, 3])
    )
    point = report.alpha["ordinal"].value
    print(
        f"point estimate: ours {point:.12f}  krippendorff {reference:.12f}  |diff| {abs(point - reference):.1e} "
        f"(must be ≤ 1e-9); krippendorff.alpha once: {ref_point:.2f} s"
    )

    order = np.argsort(unit_query, kind="stable")
    bounds = np.searchsorted(unit_query[order], np.arange(len(enc.queries) + 1))
    rng = np.random.default_rng(1)

    def reference_replicate() -> float:
        drawn = rng.integers(0, len(enc.queries), len(enc.queries))
        cols = np.concatenate([order[bounds[q] : bounds[q + 1]] for q in drawn])
        return krippendorff.alpha(mat[:, cols], level_of_measurement="ordinal", value_domain=[0, 1, 2, 3])

    ref_runs = [timed(reference_replicate)[0] for _ in range(args.reference_replicates)]
    ref = (statistics.median(r[0] for r in ref_runs), statistics.median(r[1] for r in ref_runs))
    print(
        f"krippendorff.alpha bootstrap: median {ref[0]:.3f} s wall / {ref[1]:.3f} s CPU per replicate "
        f"({args.reference_replicates} replicates; 50 would take {50 * ref[0]:.1f} s wall)"
    )
    print(
        f"speed-up per replicate (α only, target ≥ 50×): {ref[0] / ours[0]:,.0f}× wall, {ref[1] / ours[1]:,.0f}× CPU; "
        f"every coefficient of ours vs α alone through krippendorff: {ref[1] / max(all_per_rep, 1e-9):,.0f}× CPU"
    )


if __name__ == "__main__":
    main()
