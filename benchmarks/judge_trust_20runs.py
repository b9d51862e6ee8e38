"""judge-trust on a generated 20-run set with three model judges whose rules are known, so each report can be read
against what its rule implies.

Data (seeded): Q queries of three words each; 20 runs, run i retrieving its own 10 fragments per query (so a
judge can trade two runs' labels exactly), each relevant with probability 0.85 − 0.03·i and then graded 1–3
(uniform). A fragment is 12 random words and, with a probability that depends on the run (0.6 for the odd,
"lexical" runs, 0.15 for the even ones; +0.2 when relevant), all three of its query's words. People grade every
fragment of --human-queries of the queries (the true grades); each judge grades every fragment of every query:

- lenient: every grade below 3 goes one up with probability 0.5;
- swap: people's grades of the runs people rank 10th and 11th (ndcg@10 on their queries) are traded, fragment
  for fragment, so under this judge each of the two scores exactly what the other scores under people;
- fooled: a fragment holding every word of its query gets at least grade 2 (Alaofi et al. 2024); others as people.

For each judge the script prints what its rule implies (computed from the generated grades, not by qrelkit), then
`qrelkit judge-trust HUMAN JUDGE RUN… --target-width 0.1` (its table), with how many hybrid intervals hold people's
mean on every query (known here: people's grades are the truth). Run: `python
benchmarks/judge_trust_20runs.py [--queries 60] [--human-queries 40] [--seed 0] [--dir DIR]`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

RUNS = 20
DEPTH = 10
WORDS = 12
SWAP_RANKS = (10, 11)  # people's ranks of the two runs the swap judge trades


def generate(queries: int, human_queries: int, seed: int) -> dict:
    """The collection: people's grades, the three judges' grades, the runs and whether a fragment holds its query's
    words. Fragments are `q{n}-r{i}-{k}`: query n, run i, rank k."""
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i}" for i in range(500)])
    grade = np.zeros((queries, RUNS, DEPTH), dtype=np.int64)
    words = np.zeros((queries, RUNS, DEPTH), dtype=bool)
    for q in range(queries):
        query = rng.choice(vocab, 3, replace=False)
        for i in range(RUNS):
            relevant = rng.random(DEPTH) < 0.85 - 0.03 * i
            grade[q, i] = np.where(relevant, rng.integers(1, 4, DEPTH), 0)
            p = (0.6 if i % 2 else 0.15) + 0.2 * relevant
            for k in range(DEPTH):
                text = list(rng.choice(vocab, WORDS))
                if rng.random() < p[k]:
                    text += list(query)
                rng.shuffle(text)
                words[q, i, k] = set(query) <= set(text)
    people = np.sort(rng.choice(queries, human_queries, replace=False))
    lenient = np.where((grade < 3) & (rng.random(grade.shape) < 0.5), grade + 1, grade)
    fooled = np.where(words, np.maximum(grade, 2), grade)
    return {"grade": grade, "words": words, "people": people, "lenient": lenient, "fooled": fooled}


def qrels_lines(grades: np.ndarray, queries: np.ndarray) -> str:
    return "".join(
        f"q{q}\t0\tq{q}-r{i}-{k}\t{grades[q, i, k]}\n" for q in queries for i in range(RUNS) for k in range(DEPTH)
    )


def run_lines(i: int, queries: int) -> str:
    return "".join(
        f"q{q}\tQ0\tq{q}-r{i}-{k}\t{k + 1}\t{DEPTH - k}\tr{i:02d}\n" for q in range(queries) for k in range(DEPTH)
    )


def means(qrels: Path, runs: list[Path]) -> dict[str, float]:
    """Each run's mean ndcg@10 under `qrels` (qrelkit's engine)."""
    from eval_core.ranking.evaluation import evaluate

    results = evaluate(str(qrels), [str(r) for r in runs], metrics=["ndcg@10"], scale=(0, 3))
    return {r.name: res.mean["ndcg@10"] for r, res in zip(runs, results, strict=True)}


def coverage(report: dict, truth: dict[str, float], queries: int) -> str:
    """How many hybrid intervals hold people's mean on every query (known here, as people's grades are the
    truth), against people's own interval on their queries and the judge-only mean."""
    hybrid = report["hybrid"]
    ppi = sum(h["ci"][0] <= truth[h["run"]] <= h["ci"][1] for h in hybrid)
    own = sum(h["human_ci"][0] <= truth[h["run"]] <= h["human_ci"][1] for h in hybrid)
    judge = max(abs(h["judge_mean"] - truth[h["run"]]) for h in hybrid)
    return (
        f"truth check: people's mean on all {queries} queries lies in {ppi}/{len(hybrid)} PPI++ intervals and "
        f"{own}/{len(hybrid)} people-only ones; the judge-only mean is off by up to {judge:.4f}"
    )


def implied(name: str, judge: np.ndarray, data: dict, swapped: tuple[str, str] | None) -> list[str]:
    """What the rule implies, from the generated grades (people's queries: the pairs both graded)."""
    h, j = data["grade"][data["people"]], judge[data["people"]]
    up, down = float(np.mean(j > h)), float(np.mean(j < h))
    out = [f"rule check ({name}, from the generated grades on the {len(data['people'])} queries both graded):"]
    out.append(f"  pairs graded up {up:.1%}, down {down:.1%} of {h.size}")
    if name == "swap" and swapped:
        out.append(f"  the runs people rank {SWAP_RANKS[0]}th and {SWAP_RANKS[1]}th: {swapped[0]} and {swapped[1]}")
    if name == "fooled":
        w = data["words"][data["people"]]
        share = w.mean(axis=(0, 2))
        out.append(
            "  share of fragments holding the query's words: odd (lexical) runs "
            f"{share[1::2].mean():.0%}, even runs {share[0::2].mean():.0%}"
        )
    return out


@dataclass
class JudgeSet:
    """The written set: people's qrels, each judge's qrels and its grades, the runs, people's ranking (run names
    best first), the runs the swap judge trades, each run's mean on every query under people's grades, and the
    generated arrays."""

    human: Path
    judges: dict[str, Path]
    grades: dict[str, np.ndarray]
    runs: list[Path]
    order: list[str]
    swapped: tuple[str, str]
    truth: dict[str, float]
    data: dict


def write_set(folder: Path, queries: int, human_queries: int, seed: int) -> JudgeSet:
    """Generate the set and write it into `folder`."""
    data = generate(queries, human_queries, seed)
    human = folder / "human.qrels"
    human.write_text(qrels_lines(data["grade"], data["people"]))
    runs = []
    for i in range(RUNS):
        runs.append(folder / f"r{i:02d}.run")
        runs[-1].write_text(run_lines(i, queries))
    people = means(human, runs)
    order = [r.removesuffix(".run") for r in sorted(people, key=lambda r: -people[r])]
    (folder / "truth.qrels").write_text(qrels_lines(data["grade"], np.arange(queries)))
    truth = means(folder / "truth.qrels", runs)
    a, b = (int(order[r - 1][1:]) for r in SWAP_RANKS)
    swap = data["grade"].copy()
    swap[:, [a, b]] = swap[:, [b, a]]
    grades = {"lenient": data["lenient"], "swap": swap, "fooled": data["fooled"]}
    judges = {}
    for name, g in grades.items():
        judges[name] = folder / f"{name}.qrels"
        judges[name].write_text(qrels_lines(g, np.arange(queries)))
    return JudgeSet(human, judges, grades, runs, order, (f"r{a:02d}", f"r{b:02d}"), truth, data)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--human-queries", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dir", type=Path, help="keep the files here (default: a temporary folder)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.dir or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        js = write_set(folder, args.queries, args.human_queries, args.seed)
        print(f"{RUNS} runs × {args.queries} queries, people on {args.human_queries}; seed {args.seed}")
        print(f"people's ranking (ndcg@10 on their queries): {' '.join(js.order)}\n")
        for name, path in js.judges.items():
            print(f"=== judge: {name}")
            print("\n".join(implied(name, js.grades[name], js.data, js.swapped if name == "swap" else None)))
            cmd = [sys.executable, "-m", "annotator", "judge-trust", str(js.human), str(path)]
            table, report = (
                subprocess.run(
                    [*cmd, *map(str, js.runs), "--target-width", "0.1", "--format", form],
                    capture_output=True,
                    text=True,
                    check=True,
                    cwd=ROOT,
                    env={**os.environ, "PYTHONPATH": str(ROOT)},
                ).stdout
                for form in ("table", "json")
            )
            print(coverage(json.loads(report), js.truth, args.queries))
            print(table.replace(str(folder) + "/", ""))


if __name__ == "__main__":
    main()
