"""Draw the ASL curve of docs/reliability.md's example as PNG (and the same chart as HTML), and print the
sentence and the numbers the docs quote.

The example is benchmarks/bench_reliability.py's generated golden set (default: 8 runs of rising quality ×
50 queries, the runs' depth-10 pool judged), reported with the release card's settings. The chart is the
Evaluate page's (annotator/app/components/reliability.asl_chart), with the sentence as its title and the α line
labelled, since a PNG has no tooltips. PNG needs vl-convert-python (`pip install -e '.[docs]'`).

    python3 scripts/reliability_plot.py [--queries 50] [--runs 8] [--png docs/reliability_asl.png]
                                        [--html docs/reliability_asl.html]
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

import altair as alt
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from annotator.app.components.reliability import asl_chart  # noqa: E402
from benchmarks.bench_reliability import generate  # noqa: E402
from eval_core.reliability import ReliabilityReport, reliability  # noqa: E402
from eval_core.reliability.report import DEFAULT_METRIC  # noqa: E402


def chart(report: ReliabilityReport, n_runs: int, n_queries: int) -> alt.LayerChart:
    """The page's ASL curve, titled with the example and its sentence, the α line named."""
    m, s = report.metrics[0], report.settings
    label = (
        alt.Chart(pd.DataFrame({"alpha": [s.alpha], "rank": [len(m.pairs)]}))
        .mark_text(align="right", dy=-7, color="firebrick", fontSize=12)
        .encode(x="rank:Q", y="alpha:Q", text=alt.value(f"α = {s.alpha:g}"))
    )
    title = alt.TitleParams(
        f"ASL curve: {n_runs} runs × {n_queries:,} queries, {m.metric}",
        subtitle=[
            f"{s.correction.label}, {s.resamples:,} resamples: {m.significant} of {len(m.pairs)} run pairs "
            f"below α = {s.alpha:g}",
            *textwrap.wrap(report.sentence(), 96),
        ],
        anchor="start",
        fontSize=14,
        subtitleFontSize=12,
        subtitlePadding=6,
    )
    return (asl_chart(m, s.alpha) + label).properties(width=640, height=300, title=title)


def main(argv: list[str] | None = None) -> int:
    """Generate the example, print its sentence and numbers, write the PNG (and the HTML)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--png", default=str(ROOT / "docs" / "reliability_asl.png"))
    parser.add_argument("--html", default=str(ROOT / "docs" / "reliability_asl.html"))
    args = parser.parse_args(argv)
    qrels, runs = generate(args.queries, args.runs)
    report = reliability(qrels, runs, [DEFAULT_METRIC])
    m = report.metrics[0]
    print(f"{args.runs} runs × {args.queries} queries, {len(qrels):,} judged pairs")
    print(report.sentence())
    print(f"variance {m.variance:.5f} ({m.variance_source}); {m.significant} of {len(m.pairs)} pairs significant")
    for rank, row in enumerate(m.asl_curve().itertuples(index=False), start=1):
        print(f"  {rank:>3} {row.pair:<16} ASL {row.asl:.3f}")
    drawn = chart(report, args.runs, args.queries)
    drawn.save(args.html)
    try:
        drawn.save(args.png, scale_factor=1.5)
    except (ImportError, ValueError) as exc:  # Altair needs vl-convert-python for PNG
        print(f"no PNG: {exc} (pip install -e '.[docs]')", file=sys.stderr)
        return 1
    print(f"wrote {args.png} and {args.html}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
