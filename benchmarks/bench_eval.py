"""Benchmark `qrelkit eval` against pytrec_eval and ranx on the same seeded TREC files, side by side.

Usage: python3 benchmarks/bench_eval.py [--size 10kx1000] [--data tie-heavy,tie-free,3-decimals]
         [--repeat 3] [--tools qrelkit,qrelkit-1,qrelkit-cli,pytrec_eval,ranx] [--dir bench_data]
       python3 benchmarks/bench_eval.py --user seed,1run,17runs,10kx1000 [--repeat 3] [--dir bench_data]

`--user`: the sizes a user has — (a) the seed example, (b) one run of 200 queries × 1,000 lines, tab-separated,
43 queries judged 0–3 (a TREC Deep Learning run's shape), (c) 17 such runs in one call, (d) 10k × 1,000 — each a
whole process, start-up included, side by side with a script that reads the same files and calls pytrec_eval:
`qrelkit eval` against the measures it reports by default, `qrelkit trec_eval -c -m all_trec` (once per run) against
every measure pytrec_eval has. Median of `--repeat` rounds, the tools taking turns.

End-to-end = parse both files + the full default metric set at k = 1,3,5,10,20,100. Every measurement
runs in its own fresh subprocess; the tools take turns within each round (so a load spike on this shared
machine hits all of them), and the table gives each tool's median and its ratio to qrelkit with all cores
and with one worker (pytrec_eval and ranx's trec path are single-threaded). Peak memory is each child's
own: ru_maxrss from wait4 on that child (the parent never holds the data), with VmHWM as a cross-check.
The floor rows time reading the run's bytes and pyarrow's CSV parse of it alone, twice: types inferred
(`pyarrow-parse`, as a user would call it) and told (`pyarrow-parse-typed`: the columns qrelkit asks for,
typed as it asks; the strict floor, about half the other). `median s` excludes the
interpreter's start-up and the imports; `process s` is the whole child process, timed by the parent (what a
shell user waits for). `qrelkit-cli` is the `qrelkit eval` command itself (`annotator.cli.main`, JSON out),
its imports inside the timer. `process CPU s` is the child's user + system time (from wait4).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

KS = (1, 3, 5, 10, 20, 100)
CORPUS = 5_000_000
SIZES = {"1kx100": (1_000, 100), "10kx100": (10_000, 100), "10kx1000": (10_000, 1000), "50kx1000": (50_000, 1000)}


def generate(dir_: Path, n_queries: int, depth: int, decimals: int = 3, seed: int = 0) -> tuple[Path, Path]:
    """Seeded qrels + run: ~94% of depth per query, scores rounded to `decimals` (2: many ties, as rounded BM25
    output has; 6: practically none), unjudged docs, 1% of queries missing on each side."""
    dir_.mkdir(parents=True, exist_ok=True)
    stem = f"q{n_queries}x{depth}" + ("" if decimals == 3 else f"_{decimals}dp")
    qrels_path, run_path = dir_ / f"{stem}.qrels", dir_ / f"{stem}.run"
    if qrels_path.exists() and run_path.exists():
        return qrels_path, run_path
    rng = np.random.default_rng(seed)
    lengths = rng.integers(int(depth * 0.88), depth + 1, n_queries)
    run_q = np.arange(n_queries)
    run_q = run_q[rng.random(n_queries) > 0.01]  # 1% of qrels queries absent from the run
    lengths = lengths[run_q]
    q = np.repeat(run_q, lengths)
    docs = rng.integers(0, CORPUS, len(q))
    score = np.round(rng.uniform(0, 30, len(q)), decimals)
    order = np.lexsort((-score, q))
    q, docs, score = q[order], docs[order], score[order]
    # de-duplicate docids within a query (a run never repeats a document)
    key = q.astype(np.int64) * CORPUS + docs
    _, first = np.unique(key, return_index=True)
    keep = np.sort(first)
    q, docs, score = q[keep], docs[keep], score[keep]
    starts = np.concatenate(([0], np.flatnonzero(np.diff(q)) + 1))
    rank = np.arange(len(q)) - np.repeat(starts, np.diff(np.append(starts, len(q)))) + 1
    extra = np.arange(n_queries, n_queries + max(1, n_queries // 100))  # run-only queries
    eq = np.repeat(extra, 10)
    run = pa.table(
        {
            "q": pa.array(np.char.add("q", np.concatenate((q, eq)).astype(str))),
            "q0": pa.array(np.full(len(q) + len(eq), "Q0")),
            "d": pa.array(np.char.add("d", np.concatenate((docs, rng.integers(0, CORPUS, len(eq)))).astype(str))),
            "rank": np.concatenate((rank, np.tile(np.arange(1, 11), len(extra)))),
            "score": np.concatenate((score, np.tile(np.arange(10, 0, -1.0), len(extra)))),
            "tag": pa.array(np.full(len(q) + len(eq), "bench")),
        }
    )
    opts = pacsv.WriteOptions(include_header=False, delimiter=" ", quoting_style="none")
    pacsv.write_csv(run, run_path, opts)
    # qrels: ~30 judged per query, ~2/3 drawn from the run's top 100 (so there are hits), grades 0-3
    nj = rng.poisson(30, n_queries) + 1
    qq = np.repeat(np.arange(n_queries), nj)
    from_run = rng.random(len(qq)) < 0.66
    pos = starts[np.searchsorted(run_q, np.minimum(qq, run_q[-1]))] if len(run_q) else np.zeros(len(qq), int)
    pick = np.minimum(pos + rng.integers(0, min(depth, 100), len(qq)), len(q) - 1)
    same_q = q[pick] == qq
    qd = np.where(from_run & same_q, docs[pick], rng.integers(0, CORPUS, len(qq)))
    key = qq.astype(np.int64) * CORPUS + qd
    _, first = np.unique(key, return_index=True)
    first = np.sort(first)
    qq, qd = qq[first], qd[first]
    grade = rng.choice(4, len(qq), p=[0.5, 0.25, 0.15, 0.10])
    qrels = pa.table(
        {
            "q": pa.array(np.char.add("q", qq.astype(str))),
            "it": np.zeros(len(qq), dtype=np.int64),
            "d": pa.array(np.char.add("d", qd.astype(str))),
            "g": grade,
        }
    )
    pacsv.write_csv(qrels, qrels_path, opts)
    return qrels_path, run_path


# Each tool is timed in a child process running this snippet; it prints JSON: seconds, check value, VmHWM.
CHILD = r"""
import json, sys, time
tool, qrels_path, run_path = sys.argv[1:4]
KS = (1, 3, 5, 10, 20, 100)
# Imports happen before the timer starts: the figures are parse + metrics, not interpreter start-up
# (but for qrelkit-cli, whose command imports what it needs as it runs: its time includes them).
t_cli = time.perf_counter()
if tool == "qrelkit-cli":
    import io, contextlib
    from annotator.cli import main
elif tool.startswith("qrelkit"):
    from eval_core import evaluate
    workers = 1 if tool == "qrelkit-1" else None
elif tool == "pytrec_eval":
    import pytrec_eval
elif tool == "ranx":
    from ranx import Qrels, Run, evaluate
elif tool.startswith("pyarrow-parse"):
    import pyarrow as pa
    import pyarrow.csv as pacsv
t0 = time.perf_counter()
out = 0.0
if tool == "qrelkit-cli":
    t0 = t_cli
    with contextlib.redirect_stdout(io.StringIO()) as buf, contextlib.redirect_stderr(io.StringIO()):
        assert main(["eval", qrels_path, run_path, "--format", "json"]) == 0
    out = json.loads(buf.getvalue())["runs"][0]["mean"]["ndcg@10"]
elif tool.startswith("qrelkit"):
    out = evaluate(qrels_path, run_path, k=KS, workers=workers).mean["ndcg@10"]
elif tool == "pytrec_eval":
    def load(path, run):
        d = {}
        with open(path) as fh:
            for line in fh:
                f = line.split()
                if run:
                    d.setdefault(f[0], {})[f[2]] = float(f[4])
                else:
                    d.setdefault(f[0], {})[f[2]] = int(f[3])
        return d
    qrels, run = load(qrels_path, False), load(run_path, True)
    measures = {"P", "recall", "success", "ndcg_cut", "map_cut", "map", "recip_rank", "Rprec", "ndcg", "bpref"}
    measures = {m if m in ("map", "recip_rank", "Rprec", "ndcg", "bpref") else m + "." + ",".join(map(str, KS))
                for m in measures}
    res = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    out = sum(r["ndcg_cut_10"] for r in res.values()) / len(qrels)
elif tool == "ranx":
    qrels = Qrels.from_file(qrels_path, kind="trec")
    run = Run.from_file(run_path, kind="trec")
    ms = [f"{m}@{k}" for m in ("precision", "recall", "hit_rate", "f1", "ndcg", "map", "mrr") for k in KS]
    ms += ["map", "mrr", "r-precision", "ndcg", "recall", "bpref"]
    out = evaluate(qrels, run, ms, make_comparable=True)["ndcg@10"]
elif tool == "read-bytes":  # the floor: reading the run file's bytes
    with open(run_path, "rb") as fh:
        while fh.read(64 << 20):
            pass
elif tool == "pyarrow-parse":  # a floor: pyarrow's CSV parse of the run alone (qid, docid, score columns)
    table = pacsv.read_csv(run_path, read_options=pacsv.ReadOptions(column_names=list("abcdef")),
                           parse_options=pacsv.ParseOptions(delimiter=" "),
                           convert_options=pacsv.ConvertOptions(include_columns=["a", "c", "e"]))
elif tool == "pyarrow-parse-typed":  # the strict floor: the same parse told the column types (no inference),
    # ids as bytes, the query ids dictionary-encoded: what qrelkit's reader asks of pyarrow, and nothing else
    table = pacsv.read_csv(run_path, read_options=pacsv.ReadOptions(column_names=list("abcdef")),
                           parse_options=pacsv.ParseOptions(delimiter=" ", quote_char=False),
                           convert_options=pacsv.ConvertOptions(
                               include_columns=["a", "c", "e"], column_types={
                                   "a": pa.dictionary(pa.int32(), pa.binary()), "c": pa.binary(), "e": pa.float64()}))
secs = time.perf_counter() - t0
hwm = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM")) / 1024
print(json.dumps({"seconds": secs, "check": float(out), "vmhwm_mib": hwm}))
"""
DATASETS = {"tie-heavy": 2, "tie-free": 6, "3-decimals": 3}  # scores rounded to this many decimals
TOOLS = ("qrelkit", "qrelkit-1", "qrelkit-cli", "pytrec_eval", "ranx")
FLOORS = ("read-bytes", "pyarrow-parse", "pyarrow-parse-typed")


def measure(tool: str, qrels: Path, run: Path, child: str | None = None) -> dict:
    """Run one tool in a fresh child (the `child` script, CHILD by default); its seconds, and its own peak RSS:
    ru_maxrss from wait4 on that child.

    The parent stays small (data is generated in a subprocess too), so the child's ru_maxrss — which on
    Linux starts from the parent's RSS at fork — is the child's own; VmHWM from /proc is a cross-check.
    """
    with tempfile.TemporaryFile() as err:
        root = Path(__file__).resolve().parent.parent
        start = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-c", child or CHILD, tool, str(qrels), str(run)],
            stdout=subprocess.PIPE,
            stderr=err,
            cwd=root,
            env=dict(os.environ, PYTHONPATH=str(root)),
        )
        out = proc.stdout.read().decode()  # type: ignore[union-attr]
        _, status, usage = os.wait4(proc.pid, 0)
        process_seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode:
            err.seek(0)
            raise RuntimeError(f"{tool} failed: {err.read().decode()[-2000:]}")
    res = json.loads(out.strip().splitlines()[-1])
    res["peak_mib"] = usage.ru_maxrss / 1024
    res["process_seconds"] = process_seconds
    res["cpu_seconds"] = usage.ru_utime + usage.ru_stime  # the whole child: start-up and imports included
    return res


# ------------------------------------------------------------------------------------------ sizes a user has

USER_SIZES = ("seed", "1run", "17runs", "10kx1000")
# A whole process each, start-up included, as a shell user waits for it: qrelkit's two commands and a script that
# reads the same files (any whitespace, as trec_eval does) and calls pytrec_eval on the same measures.
USER_CHILD = r"""
import sys
tool, qrels_path, *runs = sys.argv[1:]
if tool in ("eval", "trec_eval"):  # what the `qrelkit` console script runs, exit path included; stdout is /dev/null
    args = ["eval", qrels_path, *runs] if tool == "eval" else ["trec_eval", "-c", "-m", "all_trec", qrels_path, *runs]
    sys.argv = ["qrelkit", *args]
    from annotator.cli import main
    sys.exit(main())
import pytrec_eval
def load(path, run):
    d = {}
    with open(path) as fh:
        for line in fh:
            f = line.split()
            if f:
                d.setdefault(f[0], {})[f[2]] = float(f[4]) if run else int(f[3])
    return d
qrels = load(qrels_path, False)
if tool == "pytrec_eval":  # the measures `qrelkit eval` reports by default
    KS = "1,3,5,10,20,100"
    measures = {"map", "recip_rank", "Rprec", "ndcg", "bpref"}
    measures |= {f"{m}.{KS}" for m in ("P", "recall", "success", "ndcg_cut", "map_cut")}
else:  # pytrec_eval-all: every measure it has, as -m all_trec asks of trec_eval
    measures = pytrec_eval.supported_measures
evaluator = pytrec_eval.RelevanceEvaluator(qrels, measures)
for path in runs:
    res = evaluator.evaluate(load(path, True))
    means = {m: sum(r[m] for r in res.values()) / len(res) for m in next(iter(res.values()))}
"""


def generate_user_runs(dir_: Path, n_runs: int = 17, queries: int = 200, depth: int = 1000, judged: int = 43) -> Path:
    """TREC Deep Learning's shape: `n_runs` tab-separated runs of `queries` × `depth` lines (numeric query ids,
    scores with 6 decimals), qrels of `judged` of those queries with 0–3 grades, ~150 judged docs a query, about
    a third of them from the run's top 100. Seeded; returns the folder."""
    out = dir_ / f"user_{queries}x{depth}"
    if (out / f"run{n_runs - 1:02d}.tsv").exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(26)
    qids = np.sort(rng.choice(np.arange(1000, 1_200_000), queries, replace=False))
    pool = {int(q): rng.choice(8_841_823, 600, replace=False) for q in qids}  # docs the runs tend to share
    judged_q = np.sort(rng.choice(qids, judged, replace=False))
    lines = []
    for q in judged_q:
        docs = np.unique(np.concatenate([pool[int(q)][:50], rng.choice(8_841_823, 100, replace=False)]))
        grades = rng.choice(4, len(docs), p=[0.55, 0.2, 0.15, 0.1])
        lines += [f"{q} 0 {d} {g}\n" for d, g in zip(docs, grades, strict=True)]
    (out / "qrels.txt").write_text("".join(lines))
    for r in range(n_runs):
        text = []
        for q in qids:
            shared = rng.choice(pool[int(q)], 300, replace=False)
            docs = np.unique(np.concatenate([shared, rng.choice(8_841_823, depth, replace=False)]))[:depth]
            docs = rng.permutation(docs)
            scores = np.sort(rng.uniform(5, 40, depth))[::-1]
            text += [
                f"{q}\tQ0\t{d}\t{i + 1}\t{s:.6f}\trun{r:02d}\n"
                for i, (d, s) in enumerate(zip(docs, scores, strict=True))
            ]
        (out / f"run{r:02d}.tsv").write_text("".join(text))
    return out


def user_cases(dir_: Path) -> dict[str, tuple[Path, list[Path]]]:
    """Each size's qrels and runs: (a) the seed example, (b) one DL-shaped run, (c) 17 of them, (d) 10k × 1000."""
    root = Path(__file__).resolve().parent.parent
    subprocess.run([sys.executable, __file__, "--dir", str(dir_), "--generate-user"], check=True)
    dl = dir_ / "user_200x1000"
    runs = sorted(dl.glob("run*.tsv"))
    subprocess.run([sys.executable, __file__, "--dir", str(dir_), "--generate", "10000", "1000", "3"], check=True)
    return {
        "seed": (root / "examples/seed000.qrels", [root / "examples/seed000.run"]),
        "1run": (dl / "qrels.txt", runs[:1]),
        "17runs": (dl / "qrels.txt", runs),
        "10kx1000": (dir_ / "q10000x1000.qrels", [dir_ / "q10000x1000.run"]),
    }


# Children as an installed package runs: with its bytecode cached (here outside the repository), which a checkout
# run with PYTHONDONTWRITEBYTECODE lacks (compiling qrelkit's modules anew costs ~0.1 s a process).
USER_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | {
    "PYTHONPATH": str(Path(__file__).resolve().parent.parent),
    "PYTHONPYCACHEPREFIX": str(Path(tempfile.gettempdir()) / "qrelkit-bench-pycache"),
}


def measure_process(tool: str, qrels: Path, runs: list[Path]) -> dict:
    """One whole child process (start-up and imports included): wall seconds, CPU seconds (user + system, from
    wait4) and its own peak RSS. The peak comes from GNU time's %M when /usr/bin/time exists (its child is forked
    from a small process; Linux's ru_maxrss of a child forked from this benchmark starts at this one's RSS)."""
    root = Path(__file__).resolve().parent.parent
    gnu_time = ["/usr/bin/time", "-f", "maxrss=%M"] if Path("/usr/bin/time").exists() else []
    start = time.perf_counter()
    proc = subprocess.Popen(
        [*gnu_time, sys.executable, "-c", USER_CHILD, tool, str(qrels), *map(str, runs)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=root,
        env=USER_ENV,
    )
    err = proc.stderr.read().decode() if proc.stderr else ""  # type: ignore[union-attr]
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status):
        raise RuntimeError(f"{tool} failed: {err[-2000:]}")
    peak = next((int(x.split("=")[1]) for x in reversed(err.splitlines()) if x.startswith("maxrss=")), usage.ru_maxrss)
    return {"seconds": seconds, "peak_mib": peak / 1024, "cpu": usage.ru_utime + usage.ru_stime}


def user_main(dir_: Path, repeat: int, sizes: list[str]) -> None:
    """Median of `repeat` rounds, tools taking turns in each; `qrelkit trec_eval` is called once per run (as
    trec_eval users call it), its time summed over the runs."""
    cases = user_cases(dir_)
    for tool in ("eval", "trec_eval", "pytrec_eval", "pytrec_eval-all"):  # warm: bytecode and page cache
        measure_process(tool, *cases["seed"])
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} cores")
    print(
        "| size | qrelkit eval s | pytrec_eval script s | × | qrelkit trec_eval -m all_trec s "
        "| pytrec_eval script, all measures s | × | CPU s eval / pytrec / trec_eval / pytrec all "
        "| peak MiB eval / trec_eval / pytrec_eval / all |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for size in sizes:
        qrels, runs = cases[size]
        got: dict[str, list[dict]] = {t: [] for t in ("eval", "pytrec_eval", "trec_eval", "pytrec_eval-all")}
        for _ in range(repeat):
            for tool in got:
                if tool == "trec_eval":  # one call per run
                    each = [measure_process(tool, qrels, [run]) for run in runs]
                    got[tool].append(
                        {
                            "seconds": sum(e["seconds"] for e in each),
                            "cpu": sum(e["cpu"] for e in each),
                            "peak_mib": max(e["peak_mib"] for e in each),
                        }
                    )
                else:
                    got[tool].append(measure_process(tool, qrels, runs))
        med = {t: statistics.median(r["seconds"] for r in rs) for t, rs in got.items()}
        cpu = {t: statistics.median(r["cpu"] for r in rs) for t, rs in got.items()}
        peak = {t: max(r["peak_mib"] for r in rs) for t, rs in got.items()}
        ratio_eval = med["pytrec_eval"] / med["eval"]
        ratio_all = med["pytrec_eval-all"] / med["trec_eval"]
        peaks = " / ".join(f"{peak[t]:.0f}" for t in ("eval", "trec_eval", "pytrec_eval", "pytrec_eval-all"))
        cpus = " / ".join(f"{cpu[t]:.2f}" for t in ("eval", "pytrec_eval", "trec_eval", "pytrec_eval-all"))
        print(
            f"| {size} | {med['eval']:.2f} | {med['pytrec_eval']:.2f} | {ratio_eval:.1f}× "
            f"| {med['trec_eval']:.2f} | {med['pytrec_eval-all']:.2f} | {ratio_all:.1f}× | {cpus} | {peaks} |",
            flush=True,
        )
    print(f"\nload average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def main() -> None:
    """Generate data (in a subprocess), run every tool side by side, print medians, ratios, peaks and floors."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="10kx1000", choices=sorted(SIZES))
    ap.add_argument("--data", default="tie-heavy,tie-free", help=f"comma list of {', '.join(DATASETS)}")
    ap.add_argument("--dir", default="bench_data")
    ap.add_argument("--repeat", type=int, default=3, help="rounds; each round runs every tool once, in turn")
    ap.add_argument("--tools", default=",".join(TOOLS), help="comma list of " + ", ".join(TOOLS))
    ap.add_argument("--generate", nargs=3, metavar=("QUERIES", "DEPTH", "DECIMALS"), help=argparse.SUPPRESS)
    ap.add_argument("--generate-user", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument(
        "--user",
        metavar="SIZES",
        help=f"the sizes a user has instead, whole processes side by side with a pytrec_eval script: comma list of "
        f"{', '.join(USER_SIZES)}",
    )
    args = ap.parse_args()
    if args.generate:
        generate(Path(args.dir), *map(int, args.generate))
        return
    if args.generate_user:
        generate_user_runs(Path(args.dir))
        return
    if args.user:
        user_main(Path(args.dir), args.repeat, args.user.split(","))
        return
    nq, depth = SIZES[args.size]
    tools = args.tools.split(",")
    print(
        f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} cores; "
        f"qrelkit = all cores, qrelkit-1 = --workers 1; pytrec_eval and ranx as their users call them"
    )
    for name in args.data.split(","):
        decimals = DATASETS[name]
        subprocess.run(
            [sys.executable, __file__, "--dir", args.dir, "--generate", str(nq), str(depth), str(decimals)], check=True
        )
        stem = f"q{nq}x{depth}" + ("" if decimals == 3 else f"_{decimals}dp")
        qrels, run = Path(args.dir) / f"{stem}.qrels", Path(args.dir) / f"{stem}.run"
        with run.open("rb") as fh:
            lines = sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 24), b""))
        measure("read-bytes", qrels, run)  # warm the page cache for everyone
        rounds: dict[str, list[dict]] = {t: [] for t in (*tools, *FLOORS)}
        for _ in range(args.repeat):
            for tool in (*tools, *FLOORS):
                rounds[tool].append(measure(tool, qrels, run))
        base = {t: statistics.median(r["seconds"] for r in rounds[t]) for t in rounds}
        print(
            f"\n{args.size} {name} (scores with {decimals} decimals; {lines:,} run lines, "
            f"{run.stat().st_size / 2**20:.0f} MiB), median of {args.repeat}:"
        )
        print(
            "| tool | median s | runs s | process s | process CPU s | peak MiB (ru_maxrss / VmHWM) "
            "| × qrelkit all cores | × qrelkit 1 worker | × pyarrow parse | × typed parse | ndcg@10 mean |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for tool, res in rounds.items():
            med = base[tool]
            ratio = f"{med / base['qrelkit']:.2f}×" if "qrelkit" in base else ""
            ratio1 = f"{med / base['qrelkit-1']:.2f}×" if "qrelkit-1" in base else ""
            peak = max(r["peak_mib"] for r in res)
            hwm = max(r["vmhwm_mib"] for r in res)
            times = " ".join(f"{r['seconds']:.2f}" for r in res)
            process = statistics.median(r["process_seconds"] for r in res)
            cpu = statistics.median(r["cpu_seconds"] for r in res)
            floor = f"{med / base['pyarrow-parse']:.2f}×"
            typed = f"{med / base['pyarrow-parse-typed']:.2f}×"
            print(
                f"| {tool} | {med:.2f} | {times} | {process:.2f} | {cpu:.2f} | {peak:.0f} / {hwm:.0f} "
                f"| {ratio} | {ratio1} | {floor} | {typed} | {res[0]['check']:.6f} |",
                flush=True,
            )
        for floor_tool in ("pyarrow-parse", "pyarrow-parse-typed"):
            parse_process = statistics.median(r["process_seconds"] for r in rounds[floor_tool])
            for tool in ("qrelkit", "qrelkit-cli"):
                if tool in rounds:
                    process = statistics.median(r["process_seconds"] for r in rounds[tool])
                    print(
                        f"whole process, {tool} / {floor_tool}: {process:.2f} s / {parse_process:.2f} s = "
                        f"{process / parse_process:.2f}×"
                    )
    print(f"\nload average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
