"""Runs read in blocks of whole queries give exactly what the whole-file path gives, errors included.

The expected values are the whole-file path's (itself checked against pytrec_eval, ranx and
ir-measures in test_metrics_reference.py) and, for two metrics, pytrec_eval directly.
"""

from __future__ import annotations

import gzip
import io
import itertools
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from eval_core import evaluate
from eval_core.errors import InputError
from eval_core.io.formats import load_qrels
from eval_core.ranking.evaluation import rank_file_blocks
from eval_core.ranking.metrics import index_qrels
from eval_core.ranking.run_blocks import Scattered, _byte_blocks, _spans, iter_run_blocks

METRICS = [
    "P@k",
    "recall@k",
    "ndcg@k",
    "ndcg_exp@k",
    "map@k",
    "mrr",
    "rprec",
    "judged@k",
    "bpref",
    "err@10",
    "rbp@0.8",
    "rbp_residual@0.8",
    "ndcg",
    "map",
    "ndcg@10_condensed",
    "map_condensed",
]


def make_files(tmp_path: Path, seed: int, n_queries: int = 12, depth: int = 15) -> tuple[Path, Path, list[str]]:
    """Seeded qrels and a query-grouped run with heavy ties, unsorted rows, run-only and qrels-only queries."""
    rng = np.random.default_rng(seed)
    qrels, run = [], []
    for i in range(n_queries):
        docs = rng.choice(40, size=depth, replace=False)
        for d in rng.choice(40, size=8, replace=False):
            if i != 3:  # q3 is in the run only
                qrels.append(f"q{i} 0 d{d} {rng.integers(0, 4)}\n")
        if i == 5:  # q5 is in the qrels only
            continue
        scores = rng.integers(0, 4, size=depth) / 2  # few distinct, float32-exact values: many ties
        for rank, (d, s) in enumerate(zip(docs, scores, strict=True), start=1):
            run.append(f"q{i} Q0 d{d} {rank} {s} t\n")
    qp, rp = tmp_path / "q.qrels", tmp_path / "r.run"
    qp.write_text("".join(qrels))
    rp.write_text("".join(run))
    return qp, rp, run


def assert_same(a, b) -> None:
    pd.testing.assert_frame_equal(a.per_query, b.per_query, check_exact=True)
    assert a.mean == b.mean
    assert a.warnings == b.warnings


@pytest.mark.parametrize("block", [1, 23, 64, 150, 700])
def test_blocks_are_bit_identical_to_the_whole_file(tmp_path: Path, block: int) -> None:
    qp, rp, _ = make_files(tmp_path, seed=block)
    whole = evaluate(qp, rp, metrics=METRICS, k=(1, 3, 5, 10))
    blocked = evaluate(qp, rp, metrics=METRICS, k=(1, 3, 5, 10), block_bytes=block)
    assert_same(whole, blocked)
    blocks = list(iter_run_blocks(rp, block))
    assert len(blocks) > 1
    seen: list[str] = []
    for cols in blocks:  # no query is split between two blocks, although reads split queries
        seen += cols.qvalues.to_pylist()
    assert len(seen) == len(set(seen)) == 11


def test_blocks_match_pytrec_eval(tmp_path: Path) -> None:
    """Source of the expected values: pytrec_eval (trec_eval's C code) on the same files."""
    qp, rp, _ = make_files(tmp_path, seed=7)
    ev = evaluate(qp, rp, metrics=["ndcg@10", "map"], block_bytes=50)
    qrels: dict[str, dict[str, int]] = {}
    for line in qp.read_text().splitlines():
        q, _, d, g = line.split()
        qrels.setdefault(q, {})[d] = int(g)
    run: dict[str, dict[str, float]] = {}
    for line in rp.read_text().splitlines():
        q, _, d, _, s, _ = line.split()
        run.setdefault(q, {})[d] = float(s)
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "map"}).evaluate(run)
    for q in qrels:
        want = ref.get(q, {"ndcg_cut_10": 0.0, "map": 0.0})
        assert ev.per_query.loc[q, "ndcg@10"] == pytest.approx(want["ndcg_cut_10"], abs=1e-9)
        assert ev.per_query.loc[q, "map"] == pytest.approx(want["map"], abs=1e-9)


def test_query_split_over_reads_with_ties_at_the_cut(tmp_path: Path) -> None:
    """One long query with all-tied scores spans many reads; tie order (docid desc) must hold across them."""
    qp = tmp_path / "q.qrels"
    qp.write_text("a 0 d1 1\na 0 d9 2\nb 0 x 1\n")
    rp = tmp_path / "r.run"
    rp.write_text("".join(f"a Q0 d{i} {i} 1.0 t\n" for i in range(10)) + "b Q0 x 1 5 t\n")
    blocked = evaluate(qp, rp, metrics=["mrr", "ndcg@3", "P@1"], block_bytes=8)
    assert_same(evaluate(qp, rp, metrics=["mrr", "ndcg@3", "P@1"]), blocked)
    # trec_eval order among ties is docid descending: d9 first, so mrr(a) = 1 (hand-checked).
    assert blocked.per_query.loc["a", "mrr"] == 1.0


def test_duplicate_docid_names_its_line(tmp_path: Path) -> None:
    qp, _, run = make_files(tmp_path, seed=1)
    q = run[20].split()[0]
    last = max(i for i, line in enumerate(run) if line.split()[0] == q)
    lines = [*run[: last + 1], run[20], *run[last + 1 :]]  # the same (query, doc) after its query's rows
    rp = tmp_path / "dup.run"
    rp.write_text("".join(lines))
    with pytest.raises(InputError) as whole:
        evaluate(qp, rp)
    with pytest.raises(InputError) as blocked:
        evaluate(qp, rp, block_bytes=40)
    expected = f"{rp}:{last + 2}: doc {run[20].split()[2]!r} repeated for query {q!r} (first on line 21)"
    assert str(blocked.value) == str(whole.value) == expected


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        (b"q7 Q0 d1 1 t\n", "expected 6 fields (qid Q0 docid rank score tag), found 5"),
        (b"q7 Q0 d1 1 high t\n", "score 'high' is not a number"),
        (b"q7 Q0 d\xff 1 1.0 t\n", "not valid UTF-8 (byte 8: invalid start byte)"),
    ],
)
def test_bad_line_in_a_later_block_names_its_line(tmp_path: Path, bad: bytes, problem: str) -> None:
    qp, _, run = make_files(tmp_path, seed=2)
    head = "# a comment\n\n" + "".join(run[:100])
    assert run[99].startswith("q7 ") and run[100].startswith("q7 ")  # the bad line sits inside q7
    rp = tmp_path / "bad.run"
    rp.write_bytes(head.encode() + bad + "".join(run[100:]).encode())
    with pytest.raises(InputError) as exc:
        evaluate(qp, rp, block_bytes=64)
    assert str(exc.value) == f"{rp}:103: {problem}"


def test_gzip_comments_and_crlf_in_blocks(tmp_path: Path) -> None:
    qp, rp, run = make_files(tmp_path, seed=3)
    text = "# header\r\n" + "".join(line.replace("\n", "\r\n") for line in run[:50]) + "\n# mid\n" + "".join(run[50:])
    gz = tmp_path / "r.run.gz"
    gz.write_bytes(gzip.compress(text.encode()))
    assert_same(evaluate(qp, rp, name="r"), evaluate(qp, gz, block_bytes=30, name="r"))


def test_scattered_query_falls_back_to_the_whole_file(tmp_path: Path) -> None:
    qp, _, run = make_files(tmp_path, seed=4)
    rp = tmp_path / "scattered.run"
    rp.write_text("".join(run[1:]) + run[0])  # q0's first row moved to the end
    qi = index_qrels(load_qrels(qp), 1)
    with pytest.raises(Scattered):
        rank_file_blocks(qi, rp, block_bytes=64)
    whole = evaluate(qp, rp, metrics=METRICS)
    blocked = evaluate(qp, rp, metrics=METRICS, block_bytes=64)
    pd.testing.assert_frame_equal(whole.per_query, blocked.per_query, check_exact=True)
    assert blocked.warnings[0].startswith("the run file does not keep each query's lines together")
    assert blocked.warnings[1:] == whole.warnings


def test_empty_run_in_blocks(tmp_path: Path) -> None:
    qp, _, _ = make_files(tmp_path, seed=5)
    rp = tmp_path / "empty.run"
    rp.write_text("# nothing here\n" * 20)
    with pytest.raises(InputError) as whole:
        evaluate(qp, rp)
    with pytest.raises(InputError) as blocked:
        evaluate(qp, rp, block_bytes=16)
    assert str(blocked.value) == str(whole.value) == f"{rp}:1: empty file: no records"
    with pytest.raises(InputError) as direct:
        list(iter_run_blocks(rp, 16))
    assert str(direct.value) == f"{rp}:1: empty file: no run lines"


def test_progress_counts_every_byte(tmp_path: Path) -> None:
    qp, rp, _ = make_files(tmp_path, seed=6)
    seen: list[int] = []
    evaluate(qp, rp, block_bytes=100, progress=seen.append)
    assert len(seen) > 1 and sum(seen) == rp.stat().st_size


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), block=st.integers(1, 2000))
def test_any_block_size_is_bit_identical(tmp_path_factory: pytest.TempPathFactory, seed: int, block: int) -> None:
    qp, rp, _ = make_files(tmp_path_factory.mktemp("b"), seed, n_queries=8, depth=12)
    assert_same(evaluate(qp, rp, metrics=METRICS), evaluate(qp, rp, metrics=METRICS, block_bytes=block))


class CountingReader(io.BytesIO):
    """A stream that counts its reads (the block reader reads into its buffers)."""

    reads = 0

    def readinto(self, buffer: Any) -> int:
        self.reads += 1
        return super().readinto(buffer)


def test_chunks_cover_the_file_at_query_boundaries_and_a_huge_query_reads_in_doubling_sizes() -> None:
    lines = [f"big Q0 d{i} {i} 1.0 t\n" for i in range(5000)] + ["# c\n", "\n"]
    lines += [f"q{j} Q0 d{i} {i} 1.0 t\n" for j in range(30) for i in range(7)]
    data = "".join(lines).encode()
    raw = CountingReader(data)
    chunks = [(bytes(c), first) for c, first in _byte_blocks(raw, 16)]
    assert b"".join(c for c, _ in chunks) == data
    assert [first for _, first in chunks] == [
        1 + b"".join(c for c, _ in chunks[:i]).count(b"\n") for i in range(len(chunks))
    ]
    for c, _ in chunks[:-1]:
        assert c.endswith(b"\n")
    qids = [[ln.split()[0] for ln in c.splitlines() if ln.strip() and not ln.startswith(b"#")] for c, _ in chunks]
    flat = [q for qs in qids for q in dict.fromkeys(qs)]
    assert len(flat) == len(set(flat)) == 31  # every query in exactly one chunk
    # 5000 lines of ~25 bytes in reads doubling from 16 bytes: about log2(125 kB / 16) ≈ 13 reads, not 7800
    assert 10 <= raw.reads < 80


def test_cli_progress_bar_counts_run_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from annotator.cli import eval as cli_eval
    from annotator.cli import main

    qp, rp, _ = make_files(tmp_path, seed=8)
    other = tmp_path / "other.run"
    other.write_bytes(rp.read_bytes())
    monkeypatch.setattr(cli_eval, "PROGRESS_BYTES", 0)
    monkeypatch.setattr("eval_core.progress.on_terminal", lambda: True)  # a bar is drawn on a terminal only
    assert main(["eval", str(qp), str(rp), str(other), "--metrics", "map"]) == 0
    bar = capsys.readouterr().err.split("\r")[-1]
    total = f"{2 * rp.stat().st_size / 1024:.2f}k"  # tqdm's unit_scale with unit_divisor 1024
    assert "evaluating: 100%" in bar and f"{total}/{total}" in bar


def test_cli_runs_side_by_side_print_what_one_after_another_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`qrelkit eval QRELS RUN…` evaluates several runs `--workers` at a time: the same bytes on stdout and stderr
    (warnings in run order) as one run after another, and of two bad runs the first given is the one reported."""
    from annotator.cli import main

    qp, _, _ = make_files(tmp_path, seed=11)
    runs = []
    for seed in range(5):
        (tmp_path / f"r{seed}").mkdir()
        _, rp, _ = make_files(tmp_path / f"r{seed}", seed=20 + seed)
        runs.append(str(rp.rename(tmp_path / f"r{seed}.run")))
    outputs = set()
    for workers in ("1", "2", "3"):
        for fmt in ("json", "table"):
            assert (
                main(["eval", str(qp), *runs, "--metrics", ",".join(METRICS), "--format", fmt, "--workers", workers])
                == 0
            )
            out, err = capsys.readouterr()
            outputs.add((fmt, out, err))
    assert len(outputs) == 2  # one per format, whatever the workers
    for _, _, err in outputs:  # every run lacks q5 and holds q3, which the qrels lack: warnings in run order
        named = [line.split(": ")[2] for line in err.splitlines() if "warning:" in line]
        assert named == [f"r{i}.run" for i in range(5) for _ in range(2)], err
    bad = []
    for name, line in (("bad1.run", "q1 Q0 broken\n"), ("bad2.run", "q2 Q0 d1 1 x t\n")):
        bad.append(tmp_path / name)
        bad[-1].write_text(Path(runs[0]).read_text() + line)
    for workers in ("1", "2"):
        assert main(["eval", str(qp), runs[0], str(bad[0]), str(bad[1]), "--workers", workers]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"qrelkit: error: {bad[0]}:"), err
        assert "expected 6 fields" in err


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), block=st.integers(40, 400), workers=st.integers(2, 5))
def test_any_number_of_workers_is_bit_identical(
    tmp_path_factory: pytest.TempPathFactory, seed: int, block: int, workers: int
) -> None:
    """Blocks ranked by several threads merge in file order: the same arrays as one worker, bit for bit."""
    qp, rp, _ = make_files(tmp_path_factory.mktemp("w"), seed, n_queries=12, depth=15)
    one = evaluate(qp, rp, metrics=METRICS, block_bytes=block, workers=1)
    assert_same(one, evaluate(qp, rp, metrics=METRICS, block_bytes=block, workers=workers))
    assert_same(one, evaluate(qp, rp, metrics=METRICS))


def test_workers_report_the_first_bad_line_in_file_order(tmp_path: Path) -> None:
    """Two bad blocks: whichever thread finishes first, the error names the earlier line."""
    qp, _, run = make_files(tmp_path, seed=7)
    bad = list(run)
    bad[3] = bad[3].replace(" Q0 ", " Q0 x ", 1).rsplit(" ", 2)[0] + "\n"
    bad[-2] = "q0 Q0 broken\n"
    rp = tmp_path / "bad.run"
    rp.write_text("".join(bad))
    messages = set()
    for workers in (1, 2, 4):
        with pytest.raises(InputError) as exc:
            evaluate(qp, rp, block_bytes=50, workers=workers)
        messages.add(str(exc.value))
    assert len(messages) == 1 and f"{rp}:4:" in messages.pop()


def test_a_bad_qrels_file_is_reported_before_the_run_read_alongside_it(tmp_path: Path) -> None:
    """A big run's first blocks are parsed while a side thread reads the qrels: the errors keep the sequential
    order (qrels, then categories, then the run), whichever thread gets there first."""
    qp, _, run = make_files(tmp_path, seed=9)
    bad_run = tmp_path / "bad.run"
    bad_run.write_text("".join(run[:5]) + "q0 Q0 broken\n" + "".join(run[5:]))
    bad_qrels = tmp_path / "bad.qrels"
    bad_qrels.write_text(qp.read_text() + "q1 0 d1 high\n")
    line = len(qp.read_text().splitlines()) + 1
    for workers in (1, 2):
        with pytest.raises(InputError) as exc:
            evaluate(bad_qrels, bad_run, block_bytes=50, workers=workers)
        assert str(exc.value) == f"{bad_qrels}:{line}: grade 'high' is not an integer"
        cats = tmp_path / "cats.tsv"
        cats.write_text("query_id\tcategory\nq1\ta\nq1\tb\n")
        with pytest.raises(InputError) as exc:
            evaluate(qp, bad_run, categories=cats, block_bytes=50, workers=workers)
        assert str(exc.value) == f"{cats}:3: query 'q1' given two categories"
        with pytest.raises(InputError) as exc:
            evaluate(qp, bad_run, block_bytes=50, workers=workers)
        assert str(exc.value).startswith(f"{bad_run}:6: expected 6 fields")


def test_a_run_cut_short_while_it_is_read_gets_a_sentence(tmp_path: Path) -> None:
    """The run file is truncated after its first block is read (as a writer rewriting it in place would): the
    evaluation stops with one sentence naming the file — no crash (memory-mapped blocks ended in a traceback, or
    in SIGBUS when the cut fell inside a mapped block), no result computed from half a file. Run in a child, so a
    crash cannot take pytest."""
    qp, rp, _ = make_files(tmp_path, 0, n_queries=40, depth=30)
    code = (
        f"from eval_core import evaluate\nfrom eval_core.errors import InputError\nimport os\n"
        f"def cut(n):\n    os.truncate({str(rp)!r}, os.path.getsize({str(rp)!r}) // 2)\n"
        f"try:\n    evaluate({str(qp)!r}, {str(rp)!r}, block_bytes=200, workers=2, progress=cut)\n"
        f"except InputError as exc:\n    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == (
        f"{rp}: the file changed while it was read (is it still being written?); run again once it is complete"
    )


@pytest.mark.parametrize("block", [1 << 10, 100_000, 300_000])
def test_spans_cut_a_plain_file_at_query_starts_reading_only_around_the_cuts(tmp_path: Path, block: int) -> None:
    """An uncompressed file is cut without reading it through: each span ends where a new query begins (the line
    before the cut names another query), the spans tile the file, a query longer than the block (q7: ~450 kB)
    stays whole — its block doubled — and a cut found in a window that starts inside a line (blocks above the
    64 kB window) is still at a line start. Comment and blank lines go with the query after them."""
    rng = np.random.default_rng(1)
    lines = []
    for q in range(20):
        if q == 5:
            lines += ["# a comment\n", "\n"]
        lines += [
            f"q{q} Q0 d{i} {i} {rng.random():.6f} t\n" for i in range(18_000 if q == 7 else rng.integers(1, 3000))
        ]
    data = "".join(lines).encode()
    path = tmp_path / "run"
    path.write_bytes(data)
    with path.open("rb") as fh:
        spans = list(_spans(fh.fileno(), len(data), block))
    assert spans[0][0] == 0 and spans[-1][1] == len(data)
    assert all(a[1] == b[0] for a, b in itertools.pairwise(spans))
    for _, cut in spans[:-1]:
        assert data[cut - 1 : cut] == b"\n"
        before = data[data.rindex(b"\n", 0, cut - 1) + 1 : cut - 1]  # a data line of the query the span ends with
        after = next(ln for ln in data[cut : cut + 4096].splitlines() if ln.strip() and not ln.startswith(b"#"))
        assert before.split()[0] != after.split()[0]
    owners = [
        {ln.split()[0] for ln in data[a:b].splitlines() if ln.strip() and not ln.startswith(b"#")} for a, b in spans
    ]
    assert sum(len(o) for o in owners) == 20  # every query in exactly one span
    assert data.count(b"# a comment") == 1 and any(b"# a comment\n\nq5 " in data[a:b] for a, b in spans)


def test_blocks_bigger_than_the_cut_window_are_bit_identical(tmp_path: Path) -> None:
    """Blocks of 100 kB (their cuts found in 64 kB windows that start inside a line) give the whole-file result."""
    qp, rp, _ = make_files(tmp_path, 3, n_queries=3000, depth=40)
    assert rp.stat().st_size > 600_000
    assert_same(
        evaluate(qp, rp, metrics=METRICS, block_bytes=1 << 40),
        evaluate(qp, rp, metrics=METRICS, block_bytes=100_000, workers=2),
    )
