"""Sweep `qrelkit trec_eval` over measures × option sets × generated files, against what trec_eval's C code does.

Usage: python scripts/trec_eval_sweep.py [--seed N] [--verbose] [--trec-eval PATH]

No C trec_eval 10.0 is installed by the project (none on PyPI; pytrec_eval-terrier's source fetches trec_eval
from GitHub at build time), so each case is compared with two independent expectations:

- version 10: `expected()` below, trec_eval 10.0's rules written out from its C source, loop by loop
  (form_res_rels.c: sort by score then docno descending, cut at -M, then -J; m_*.c for each measure; trec_eval.c
  for -c's stand-in ranking of a missing query and the values it zeroes; meas_avg.c and m_num_rel.c for the
  `all` lines). The printed text is compared line by line (values as trec_eval prints them, %.4f or %ld), and the
  exit status where trec_eval refuses (10.0 without -c and a qrels query the run lacks: exit 4).
- version 9: pytrec_eval (trec_eval 9 compiled in) on every measure it has, per query, to 1e-9, with -l and -J
  (its only options), against `qrelkit trec_eval --trec-eval-version 9`'s values per query.

With `--trec-eval PATH` (a trec_eval binary built from the C source, kept outside the repository), every
version-10 case is also run through that binary and its stdout and exit status compared byte for byte with
`qrelkit trec_eval`'s, and a wider binary-only sweep follows: -m all_trec, each all_trec measure alone, the
official default, parametrised measures (names printed with their parameters), the nicknames set and
qrels_jg (-R qrels_jg on a three-judge file), under 14 option sets (-q, -c, -c -l2, -M, -J, -N …) on every
plain-text layout. The gzip layout is skipped for the binary (C trec_eval reads plain text only). One
difference is known and counted apart: without -c, a qrels query the run lacks makes qrelkit stop (exit 4),
while trec_eval.c leaves the previous query's ranking in place and prints it again under that query's
predecessor's id (undefined if it is the first qrels query): such cases print REFUSED.

Files (seeded): qrels with grades −1…3, a query without relevant documents, a query whose only judgments are
−1; runs with tied scores, scores equal only in float32, two qrels queries missing and two run-only queries, in
four layouts: single spaces grouped by query, tabs and mixed whitespace (with a tab-separated qrels),
lines shuffled across queries, and the spaces layout gzipped; plus a run with every qrels query.
Prints one row per (file, options) and `N of M cases identical`; exit 1 if any differs.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import io
import math
import random
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from annotator.cli import main as qrelkit  # noqa: E402
from eval_core.ranking.trec_eval.measures import ALL_TREC  # noqa: E402  (measures.c's all_trec list)

NONPOOL, UNJUDGED = -1, -2
MEASURES = [
    "num_q",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "map",
    "gm_map",
    "Rprec",
    "bpref",
    "recip_rank",
    "P.1,3,5,10",
    "recall.3,10",
    "ndcg",
    "ndcg_cut.3,10",
    "map_cut.5,10",
    "success.1,5",
    "set_P",
    "set_recall",
    "utility.1,-1,-1,1",
    "rbp_resid",
]
OPTION_SETS = [
    [],
    ["-c"],
    ["-l2"],
    ["-c", "-l2"],
    ["-l0"],
    ["-J"],
    ["-c", "-J"],
    ["-M3"],
    ["-c", "-M3"],
    ["-J", "-l2"],
    ["-c", "-l2", "-M5", "-J"],
    ["-c", "-N", "1000"],
]


# ---- files -------------------------------------------------------------------------------------------------


def generate(rng: random.Random) -> tuple[list[tuple[str, str, int]], list[tuple[str, str, float]]]:
    """qrels (qid, docid, grade) and run (qid, docid, score) rows."""
    qrels: list[tuple[str, str, int]] = []
    run: list[tuple[str, str, float]] = []
    for q in range(10):
        qid = f"q{q}"
        docs = [f"d{rng.randrange(60):02d}" for _ in range(25)]
        judged = sorted(set(docs[:14]))
        for d in judged:
            if q == 7:
                grade = 0  # no relevant document
            elif q == 8:
                grade = -1  # pooled, never judged
            else:
                grade = rng.choice([-1, 0, 0, 1, 1, 2, 3])
            qrels.append((qid, d, grade))
        if q in (3, 6):
            continue  # qrels queries the run lacks
        ranked = sorted(set(docs[5:]) | {f"x{i}" for i in range(rng.randrange(3, 9))})
        for d in ranked:
            score = round(rng.uniform(0, 3), 1)  # many ties: broken by docid, descending
            if rng.random() < 0.15:
                score = 2.00000001  # equal to 2.0 in float32 only
            run.append((qid, d, score))
    for extra in ("r1", "r2"):  # run-only queries
        run += [(extra, f"d{i:02d}", float(10 - i)) for i in range(5)]
    return qrels, run


def complete(run: list, rng: random.Random) -> list[tuple[str, str, float]]:
    """The run with lines for the two qrels queries it lacked (so the options are swept without -c too)."""
    return run + [(q, f"d{rng.randrange(60):02d}x{i}", float(i % 3)) for q in ("q3", "q6") for i in range(6)]


def write_files(folder: Path, qrels: list, run: list, rng: random.Random) -> dict[str, tuple[Path, Path]]:
    qpath = folder / "qrels"
    qpath.write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in qrels))
    full = folder / "run.complete"
    full.write_text("".join(f"{q}\tQ0\t{d}\t{i}\t{s!r}\ttag\n" for i, (q, d, s) in enumerate(complete(run, rng), 1)))
    layouts: dict[str, str] = {
        "spaces": "".join(f"{q} Q0 {d} {i} {s!r} tag\n" for i, (q, d, s) in enumerate(run, 1)),
        "tabs": "".join(f"{q}\tQ0 \t{d}\t{i}  {s!r}\ttag\n" for i, (q, d, s) in enumerate(run, 1)),
    }
    shuffled = list(enumerate(run, 1))
    rng.shuffle(shuffled)
    layouts["ungrouped"] = "".join(f"{q} Q0 {d} {i} {s!r} tag\n" for i, (q, d, s) in shuffled)
    tab_qrels = folder / "qrels.tabs"
    tab_qrels.write_text("".join(f"{q}\t0\t{d}\t{g}\n" for q, d, g in qrels))
    out = {}
    for name, text in layouts.items():
        path = folder / f"run.{name}"
        path.write_text(text)
        out[name] = (tab_qrels if name == "tabs" else qpath, path)
    gz = folder / "run.spaces.gz"
    gz.write_bytes(gzip.compress(layouts["spaces"].encode()))
    out["gzip"] = (qpath, gz)
    out["complete"] = (qpath, full)
    return out


def write_qrels_jg(folder: Path, qrels: list, rng: random.Random) -> Path:
    """The qrels as three judges' (qid judge docno rel) lines: each judge keeps most judgments, some regraded."""
    lines = []
    for judge in ("j1", "j2", "j3"):
        for q, d, g in qrels:
            if rng.random() < 0.8:
                lines.append(f"{q} {judge} {d} {g if rng.random() < 0.7 else rng.choice([0, 1, 2])}\n")
    path = folder / "qrels.jg"
    path.write_text("".join(lines))
    return path


# ---- trec_eval 10.0's rules, written from its C source -------------------------------------------------------


def _ranked(rows: list[tuple[str, float]], max_docs: int | None) -> list[str]:
    """form_res_rels.c: qsort by sim descending, ties by strcmp(docno) descending; cut at -M."""
    order = sorted(rows, key=lambda r: (-r[1], tuple(-b for b in r[0].encode())))
    docs = [d for d, _ in order]
    return docs if max_docs is None else docs[:max_docs]


def _rel_list(judged: dict[str, int], docs: list[str], judged_only: bool) -> list[int]:
    """Each ranked doc's value (NONPOOL not in qrels, UNJUDGED a negative grade); -J keeps grades ≥ 0 in order."""
    values = [NONPOOL if d not in judged else (UNJUDGED if judged[d] < 0 else judged[d]) for d in docs]
    return [v for v in values if v >= 0] if judged_only else values


def _per_query(rels: list[int], judged: dict[str, int], level: int, n_coll: int) -> dict[str, float]:
    """Every swept measure of one query from its value list (m_*.c)."""
    top = max([g for g in judged.values() if g >= 0], default=-1)
    levels = [sum(1 for g in judged.values() if g == i) for i in range(top + 1)]
    num_rel = sum(c for i, c in enumerate(levels) if i >= level)
    num_nonrel = sum(c for i, c in enumerate(levels) if i < level)
    num_ret = len(rels)
    num_rel_ret = sum(1 for v in rels if v >= 0 and v >= level)  # form_res_rels: NONPOOL, UNJUDGED never count
    out: dict[str, float] = {"num_ret": num_ret, "num_rel": num_rel, "num_rel_ret": num_rel_ret}
    found, ap = 0, 0.0
    for i, v in enumerate(rels):  # m_map.c
        if v >= level:
            found += 1
            ap += found / (i + 1)
    out["map"] = ap / num_rel if num_rel else 0.0
    out["gm_map"] = math.log(max(out["map"], 1e-5))

    def rel_in(k: int) -> int:
        return sum(1 for v in rels[:k] if v >= level)

    out["Rprec"] = rel_in(num_rel) / num_rel if num_rel else 0.0
    nonrel, bpref = 0, 0.0
    for v in rels:  # m_bpref.c
        if 0 <= v < level:
            nonrel += 1
        elif v >= level:
            bpref += 1.0 - min(nonrel, num_rel) / min(num_nonrel, num_rel) if nonrel else 1.0
    out["bpref"] = bpref / num_rel if num_rel else bpref
    first = next((i for i, v in enumerate(rels) if v >= level), None)
    out["recip_rank"] = 0.0 if first is None else 1.0 / (first + 1)
    for k in (1, 3, 5, 10):
        out[f"P_{k}"] = rel_in(k) / k
    for k in (3, 10):
        out[f"recall_{k}"] = rel_in(k) / num_rel if num_rel else 0.0
    ideal = sorted((g for g in judged.values() if g > 0), reverse=True)

    def dcg(values: list[float], k: int) -> float:
        total = 0.0
        for i, g in enumerate(values[:k]):
            if g > 0:
                total += g / math.log2(i + 2)
        return total

    gains = [float(v) if v > 0 else 0.0 for v in rels]
    whole = dcg(gains, len(gains))
    best = dcg([float(g) for g in ideal], len(ideal))
    out["ndcg"] = whole / best if best > 0 else 0.0  # m_ndcg.c
    for k in (3, 10):
        i_k = dcg([float(g) for g in ideal], k)
        out[f"ndcg_cut_{k}"] = dcg(gains, k) / i_k if i_k > 0 else dcg(gains, k)  # m_ndcg_cut.c
    for k in (5, 10):
        found, total = 0, 0.0
        for i, v in enumerate(rels[:k]):  # m_map_cut.c
            if v >= level:
                found += 1
                total += found / (i + 1)
        out[f"map_cut_{k}"] = total / num_rel if num_rel else 0.0
    for k in (1, 5):
        out[f"success_{k}"] = 1.0 if rel_in(k) else 0.0
    out["set_P"] = num_rel_ret / num_ret if num_ret else 0.0
    out["set_recall"] = num_rel_ret / num_rel if num_rel else 0.0
    a, b, c, d = 1.0, -1.0, -1.0, 1.0  # m_utility.c with -m utility.1,-1,-1,1
    out["utility"] = (
        a * num_rel_ret
        + b * (num_ret - num_rel_ret)
        + c * (num_rel - num_rel_ret)
        + d * (n_coll + num_rel_ret - num_ret - num_rel)
    )
    p, cur, unj, total = 0.9, 1.0, 0, 0.0
    for v in rels:  # m_rbp_resid.c
        if v < 0:
            unj += 1
            total += cur
        cur *= p
    out["rbp_resid"] = cur + (1 - p) * total if unj else 0.0
    return out


INTEGER = {"num_q", "num_ret", "num_rel", "num_rel_ret"}
# trec_eval.c's clean-up after the stand-in ranking compares printed names: utility is swept as
# utility.1,-1,-1,1, printed utility_1,-1,-1,1, which strcmp(name, "utility") does not match.
BOGUS_ZEROED = {"num_ret", "rbp_resid"}
PRINT_ORDER = [
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "map",
    "gm_map",
    "Rprec",
    "bpref",
    "recip_rank",
    "P_1",
    "P_3",
    "P_5",
    "P_10",
    "recall_3",
    "recall_10",
    "utility",
    "ndcg",
    "ndcg_cut_3",
    "ndcg_cut_10",
    "map_cut_5",
    "map_cut_10",
    "success_1",
    "success_5",
    "set_P",
    "set_recall",
    "rbp_resid",
]


UTILITY = "utility_1,-1,-1,1"  # meas_init.c: a measure given float params prints as name_PARAMS


def _fmt(name: str, value: float) -> str:
    return str(int(value)) if name in INTEGER else f"{value:.4f}"


def expected(qrels: list, run: list, opts: dict) -> tuple[int, dict[tuple[str, str], str]]:
    """(exit status, {(measure, qid or 'all'): printed value}) as trec_eval 10.0 computes them."""
    by_q: dict[str, dict[str, int]] = {}
    for q, d, g in qrels:
        by_q.setdefault(q, {})[d] = g
    runs: dict[str, list[tuple[str, float]]] = {}
    for q, d, s in run:
        runs.setdefault(q, []).append((d, s))
    level, complete, judged_only = opts["l"], opts["c"], opts["J"]
    qids = sorted(by_q, key=str.encode)
    if not complete and any(q not in runs for q in qids):
        return 4, {}  # 10.0: a qrels query without results and no -c
    values: dict[str, dict[str, float]] = {}
    for q in qids:
        bogus = q not in runs
        docs = ["ceci_nest_pas_un_docno"] if bogus else _ranked(runs[q], opts["M"])
        v = _per_query(_rel_list(by_q[q], docs, judged_only), by_q[q], level, opts["N"])
        if bogus:
            v.update({name: 0.0 for name in BOGUS_ZEROED})
        values[q] = v
    out: dict[tuple[str, str], str] = {}
    for q in qids:
        for name in PRINT_ORDER:
            if name != "gm_map":
                out[name, q] = _fmt(name, values[q][name])
    n = len(qids)  # every qrels query was evaluated (with -c the missing ones on the stand-in ranking)
    for name in PRINT_ORDER:
        total = 0.0
        for q in qids:
            total += values[q][name]
        if name in INTEGER:
            value = total
        elif name == "gm_map":
            value = math.exp(total / n)
        else:
            value = total / n
        out[name, "all"] = _fmt(name, value)
    if complete:  # m_num_rel.c te_calc_avg_num_rel: qrels lines with rel > 0, whatever -l, -J, -M say
        out["num_rel", "all"] = str(sum(1 for _, _, g in qrels if g > 0))
    out["num_q", "all"] = str(n)
    return 0, {(UTILITY if name == "utility" else name, q): v for (name, q), v in out.items()}


def printed(status_text: str) -> dict[tuple[str, str], str]:
    out = {}
    for line in status_text.splitlines():
        name, qid, value = (f.strip() for f in line.split("\t"))
        if name != "runid":
            out[name, qid] = value
    return out


def run_qrelkit(args: list[str]) -> tuple[int, str]:
    buf, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
        status = qrelkit(["trec_eval", *args])
    return status, buf.getvalue()


def options(words: list[str]) -> dict:
    opts = {"l": 1, "c": False, "J": False, "M": None, "N": 0}
    it = iter(words)
    for w in it:
        if w == "-c":
            opts["c"] = True
        elif w == "-J":
            opts["J"] = True
        elif w.startswith("-l"):
            opts["l"] = int(w[2:])
        elif w.startswith("-M"):
            opts["M"] = int(w[2:])
        elif w == "-N":
            opts["N"] = int(next(it))
    return opts


def rows_of(path: Path) -> list[tuple[str, str, float]]:
    """A run file's (qid, docid, score) rows, as written."""
    out = []
    text = gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()
    for line in text.splitlines():
        q, _, d, _, score, _ = line.split()
        out.append((q, d, float(score)))
    return out


class Binary:
    """A C trec_eval run on the same arguments as qrelkit, compared byte for byte (stdout and exit status)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.same = self.total = self.refused = 0
        self.differing: list[str] = []

    def compare(self, args: list[str], status: int, text: str, label: str, verbose: bool) -> str:
        """`identical`, `REFUSED` (qrelkit's deliberate exit 4, see the docstring) or `DIFFERS`."""
        c = subprocess.run([self.path, *args], capture_output=True, text=True, check=False)
        if c.returncode == status and c.stdout == text:
            self.same += 1
            self.total += 1
            return "identical"
        if status == 4 and c.returncode == 0 and not text:
            self.refused += 1
            return "REFUSED"
        self.total += 1
        self.differing.append(label)
        if verbose:
            print(f"    C exit {c.returncode}, qrelkit exit {status}: trec_eval {' '.join(args)}")
            ours = text.splitlines()
            theirs = c.stdout.splitlines()
            for i in range(max(len(ours), len(theirs))):
                a = theirs[i] if i < len(theirs) else "(none)"
                b = ours[i] if i < len(ours) else "(none)"
                if a != b:
                    print(f"    C       {a!r}\n    qrelkit {b!r}")
        return "DIFFERS"


def sweep_10(files: dict, qrels: list, verbose: bool, binary: Binary | None) -> tuple[int, int]:
    same = total = 0
    for layout, (qpath, rpath) in files.items():
        run = rows_of(rpath)
        for words in OPTION_SETS:
            total += 1
            measure_args = [a for m in MEASURES for a in ("-m", m)]
            args = ["-q", *words, *measure_args, str(qpath), str(rpath)]
            status, text = run_qrelkit(args)
            want_status, want = expected(qrels, run, options(words))
            got = printed(text) if status == 0 else {}
            ok = status == want_status and got == want
            same += ok
            lines = len(want) if want else "exit 4"
            against = ""
            if binary is not None:
                against = (
                    "  (gzip: not for C)"
                    if layout == "gzip"
                    else "  C: " + binary.compare(args, status, text, f"{layout} {' '.join(words)}", verbose)
                )
            print(
                f"10  {layout:<9}  {' '.join(words) or '(none)':<22}  {lines!s:>7}  "
                f"{'identical' if ok else 'DIFFERS'}{against}"
            )
            if not ok and verbose:
                print(f"    exit {status} (expected {want_status})")
                for key in sorted(set(got) | set(want)):
                    if got.get(key) != want.get(key):
                        print(f"    {key}: qrelkit {got.get(key)} expected {want.get(key)}")
    return same, total


PARAMETRISED = [
    "relstring.20",
    "utility.1,-1,-1,1",
    "rbp_resid.p=0.8",
    "rbp.p=0.5",
    "ndcg.1=3,2=9,3=0",
    "ndcg_cut.3,10,23",
    "iprec_at_recall.0,.25,.5,1",
    "11pt_avg..25,.5,.75",
    "Rprec_mult.0.5,1.5",
    "set_F.0.5",
    "success.2,20",
    "unj.3,50",
    "G.1=2,2=1",
    "P.1,2,1000",
]
BINARY_MEASURES = [["all_trec"], *([m] for m in ALL_TREC), [], ["set"], *([m] for m in PARAMETRISED)]
BINARY_OPTIONS = [
    [],
    ["-q"],
    ["-c"],
    ["-c", "-q"],
    ["-c", "-l2"],
    ["-c", "-l2", "-q"],
    ["-l0", "-q"],
    ["-M3", "-q"],
    ["-c", "-M3", "-q"],
    ["-J", "-q"],
    ["-c", "-J", "-q"],
    ["-N", "1000", "-q"],
    ["-c", "-N", "1000", "-q"],
    ["-c", "-l2", "-M5", "-J", "-q"],
]
JG_OPTIONS = [["-q"], ["-c", "-q"], ["-l2", "-q"], ["-c", "-J", "-q"], ["-M3", "-q"]]


def sweep_binary(files: dict, jg: Path, binary: Binary, verbose: bool) -> None:
    """Every measure set × option set × plain-text file through qrelkit and the C binary, byte for byte."""
    for layout, (qpath, rpath) in files.items():
        if layout == "gzip":
            continue
        for words in BINARY_OPTIONS:
            counts = {"identical": 0, "REFUSED": 0, "DIFFERS": 0}
            for ms in BINARY_MEASURES:
                args = [*words, *(a for m in ms for a in ("-m", m)), str(qpath), str(rpath)]
                status, text = run_qrelkit(args)
                counts[binary.compare(args, status, text, f"{layout} {' '.join(args[:-2])}", verbose)] += 1
            print(f"C   {layout:<9}  {' '.join(words) or '(none)':<22}  {len(BINARY_MEASURES)} measure sets  {counts}")
    for layout, (_, rpath) in files.items():
        if layout == "gzip":
            continue
        for words in JG_OPTIONS:
            args = ["-R", "qrels_jg", "-m", "qrels_jg", *words, str(jg), str(rpath)]
            status, text = run_qrelkit(args)
            result = binary.compare(args, status, text, f"{layout} -R qrels_jg {' '.join(words)}", verbose)
            print(f"C   {layout:<9}  -R qrels_jg {' '.join(words):<10}  {result}")


def sweep_9(files: dict, qrels: list, verbose: bool) -> tuple[int, int]:
    """pytrec_eval (trec_eval 9) per query on every measure it has, with -l and -J, against qrelkit's version 9."""
    try:
        import pytrec_eval
    except ImportError:
        print("9   pytrec_eval is not installed: skipped")
        return 0, 0
    from eval_core.ranking.trec_eval.reading import read_qrels, read_results
    from eval_core.ranking.trec_eval.run import per_query

    qd: dict[str, dict[str, int]] = {}
    for q, d, g in qrels:
        qd.setdefault(q, {})[d] = g
    measures = sorted(pytrec_eval.supported_measures - {"runid", "num_q", "relstring"})
    same = total = 0
    for layout, (qpath, rpath) in files.items():
        rd: dict[str, dict[str, float]] = {}
        for q, d, score in rows_of(rpath):
            rd.setdefault(q, {})[d] = score
        for level, judged_only in ((1, False), (2, False), (3, False), (1, True), (2, True)):  # pytrec: -l ≥ 1
            total += 1
            theirs = pytrec_eval.RelevanceEvaluator(
                qd, set(measures), relevance_level=level, judged_docs_only_flag=judged_only
            ).evaluate(rd)
            ours = per_query(
                read_qrels(qpath),
                read_results(rpath, float32=True),
                tuple(measures),
                version=9,
                rel_level=level,
                judged_only=judged_only,
            )
            bad = [
                (q, m, ours.get(q, {}).get(m), v)
                for q, row in theirs.items()
                for m, v in row.items()
                if m not in ("gm_map", "gm_bpref") and (ours.get(q, {}).get(m) is None or abs(ours[q][m] - v) > 1e-9)
            ]
            ok = not bad and set(ours) == set(theirs)
            same += ok
            words = f"-l{level}" + (" -J" if judged_only else "")
            n = sum(len(r) for r in theirs.values())
            print(f"9   {layout:<9}  {words:<22}  {n:>7}  {'identical' if ok else 'DIFFERS'}")
            if bad and verbose:
                for item in bad[:10]:
                    print(f"    {item}")
    return same, total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--verbose", action="store_true", help="print each differing value")
    ap.add_argument("--trec-eval", metavar="PATH", help="a C trec_eval binary to compare with, byte for byte")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    qrels, run = generate(rng)
    binary = Binary(args.trec_eval) if args.trec_eval else None
    with tempfile.TemporaryDirectory() as tmp:
        files = write_files(Path(tmp), qrels, run, rng)
        jg = write_qrels_jg(Path(tmp), qrels, rng)
        print("ver layout     options                 values  result")
        s10, t10 = sweep_10(files, qrels, args.verbose, binary)
        s9, t9 = sweep_9(files, qrels, args.verbose)
        if binary is not None:
            sweep_binary(files, jg, binary, args.verbose)
    print(f"version 10 (trec_eval's C rules): {s10} of {t10} cases identical")
    print(f"version 9 (pytrec_eval): {s9} of {t9} cases identical")
    failed = s10 + s9 != t10 + t9
    if binary is not None:
        print(
            f"C trec_eval ({binary.path}): {binary.same} of {binary.total} cases identical, byte for byte; "
            f"{binary.refused} more REFUSED (no -c, a qrels query the run lacks: qrelkit exits 4)"
        )
        for label in binary.differing[:20]:
            print(f"    differs: {label}")
        failed |= binary.same != binary.total
    print(f"{s10 + s9} of {t10 + t9} cases identical")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
