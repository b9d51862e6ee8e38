"""The columnar fast path (single-space files through pyarrow) prints exactly what the line-by-line reader does:
the same run written with single spaces and with tabs (which only the line reader takes) gives identical
`-q -c -m all_trec` output, on seeded data with tied scores, unjudged documents, -2 grades and missing queries,
with the lines in rank order (the fast path's one pass) or not (its sort)."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from annotator.cli import main
from eval_core.errors import InputError
from eval_core.io.keys import string_keys
from eval_core.ranking.trec_eval.columnar import NotColumnar, build_columnar, read_lines, read_ranked
from eval_core.ranking.trec_eval.reading import read_qrels, read_results
from eval_core.ranking.trec_eval.rels import build


def _write(tmp_path: Path, seed: int, ranked: bool = False) -> tuple[Path, Path, Path, Path]:
    """Qrels, and one run three ways: single spaces, tabs (both read by the fast path) and tabs after a comment
    line (which only the line reader reads)."""
    rng = np.random.default_rng(seed)
    qrels, spaced, tabbed = [], [], []
    for q in range(12):
        docs = rng.choice(60, size=int(rng.integers(1, 40)), replace=False)
        if q % 5:
            for d in rng.choice(60, size=15, replace=False):
                qrels.append(f"q{q} 0 d{d} {rng.choice([-1, 0, 0, 1, 2, 3])}")
        if q % 4 != 1:
            scores = rng.choice([0.5, 1.0, 1.5, 2.0, 3.25], size=len(docs))
            if ranked:  # each query's lines by score descending, as most runs are written
                scores = np.sort(scores)[::-1]
            for rank, (d, score) in enumerate(zip(docs, scores.tolist(), strict=True)):
                spaced.append(f"q{q} Q0 d{d} {rank} {score} run{seed}")
                tabbed.append(f"q{q}\tQ0\td{d}\t{rank}\t{score}\trun{seed}")
    paths = tmp_path / "qrels", tmp_path / "spaced.run", tmp_path / "tabbed.run", tmp_path / "commented.run"
    for path, lines in zip(paths, (qrels, spaced, tabbed, ["# a comment", *tabbed]), strict=True):
        path.write_text("\n".join(lines) + "\n")
    return paths


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("ranked", [False, True])
@pytest.mark.parametrize(
    "extra",
    [
        [],
        ["-M5"],
        ["-J"],
        ["-J", "-M5"],
        ["-l2"],
        ["-l0"],
        ["-l-1"],
        ["-m", "ndcg.-1=2,1=3", "-m", "rbp.-2=1", "-m", "relstring.30"],
        ["--trec-eval-version", "9"],
    ],
)
def test_fast_path_equals_line_reader(
    tmp_path: Path, capsys: pytest.CaptureFixture, seed: int, ranked: bool, extra: list[str]
) -> None:
    qrels, spaced, tabbed, commented = _write(tmp_path, seed, ranked)
    assert read_ranked(spaced, read_qrels(qrels)) is not None and read_ranked(tabbed, read_qrels(qrels)) is not None
    assert read_ranked(commented, read_qrels(qrels)) is None
    outs = []
    for run in (spaced, tabbed, commented):
        assert main(["trec_eval", "-q", "-c", "-m", "all_trec", *extra, str(qrels), str(run)]) == 0
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1] == outs[2]
    assert "num_q                 \tall\t" in outs[0]


def test_string_keys_depend_on_the_string_alone() -> None:
    """A docid's key is the same whatever its neighbours, chunks or offset type (run and qrels are keyed apart),
    and 2,000 distinct strings of 0–30 bytes (NUL and non-ASCII included) get 2,000 distinct keys."""
    rng = np.random.default_rng(0)
    alphabet = ["a", "b", "\x00", "é", "9"]
    strings = list(
        dict.fromkeys("".join(rng.choice(alphabet, size=int(rng.integers(0, 31))).tolist()) for _ in range(2500))
    )[:2000]
    whole = string_keys(pa.array(strings))
    assert len(set(whole.tolist())) == len(strings)
    chunked = string_keys(pa.chunked_array([pa.array(strings).slice(0, 7), pa.array(strings).slice(7)]))
    assert (chunked == whole).all()
    assert (string_keys(pa.array(strings, type=pa.large_string())) == whole).all()
    assert all(string_keys(pa.array([s]))[0] == whole[i] for i, s in enumerate(strings[:300]))


def test_docids_that_are_not_utf8(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A docid whose bytes are not UTF-8 (b'd\\xff1') is matched byte for byte whichever reader takes the files:
    judged relevant with 'a', both retrieved at ranks 1 and 2 → map (1/1 + 2/2)/2 = 1; retrieved only 'a' with an
    unjudged 'b' → map (1/1)/2 = 0.5."""
    qrels, bad_run, ok_run = tmp_path / "qrels", tmp_path / "bad.run", tmp_path / "ok.run"
    qrels.write_bytes(b"q1 0 d\xff1 1\nq1 0 a 1\n")
    bad_run.write_bytes(b"q1 Q0 a 1 2 r\nq1 Q0 d\xff1 2 1 r\n")
    ok_run.write_bytes(b"q1 Q0 a 1 2 r\nq1 Q0 b 2 1 r\n")
    for run, want in ((bad_run, "1.0000"), (ok_run, "0.5000")):
        assert main(["trec_eval", "-m", "map", str(qrels), str(run)]) == 0
        assert capsys.readouterr().out == f"map                   \tall\t{want}\n"


def test_fast_qrels_reader_gives_the_line_readers_judgments(tmp_path: Path) -> None:
    from eval_core.ranking.trec_eval.reading import _arrow_qrels

    path = tmp_path / "qrels"
    path.write_text("q2 0 b 1\nq10 0 a 2\nq2 0 a -1\nq1 0 c 0\n")
    fast = _arrow_qrels(path)
    assert fast is not None
    assert list(fast.by_query) == ["q1", "q10", "q2"]  # byte order of the ids: "q1" < "q10" < "q2"
    assert list(fast.by_query["q2"].items()) == [("b", 1), ("a", -1)]  # file order within the query
    assert fast.by_query == {"q1": {"c": 0}, "q10": {"a": 2}, "q2": {"b": 1, "a": -1}}
    assert "q3" not in fast.by_query and len(fast.by_query) == 3


def test_fast_qrels_reader_leaves_a_repeated_judgment_to_the_line_reader(tmp_path: Path) -> None:
    from eval_core.errors import InputError
    from eval_core.ranking.trec_eval.reading import _arrow_qrels, read_qrels

    path = tmp_path / "qrels"
    path.write_text("q1 0 a 1\nq2 0 a 0\nq1 0 a 0\n")  # "a" twice for q1 (once for q2: no repeat there)
    assert _arrow_qrels(path) is None
    with pytest.raises(InputError, match="judged twice") as err:
        read_qrels(path)
    assert str(err.value).startswith(f"{path}:3: ")


def test_fast_run_reader_takes_docids_as_bytes_and_leaves_odd_query_ids(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """b'd\\xff1' (not UTF-8) and 'd1' tie at score 1; trec_eval breaks ties by docid descending in byte order and
    0xff > '1', so b'd\\xff1' is ranked first and the only relevant one, 'd1', second: recip_rank = 1/2. A query id
    that is not UTF-8 sends the run to the line reader."""
    qrels, run, odd = tmp_path / "qrels", tmp_path / "run", tmp_path / "odd.run"
    qrels.write_bytes(b"q1 0 d1 1\n")
    run.write_bytes(b"q1 Q0 d1 1 1 r\nq1 Q0 d\xff1 2 1 r\n")
    odd.write_bytes(b"q\xff1 Q0 d1 1 1 r\nq1 Q0 d1 1 1 r\n")
    assert read_lines(str(run), str(run)).docid.to_pylist() == [b"d1", b"d\xff1"]
    with pytest.raises(NotColumnar):
        read_lines(str(odd), str(odd))
    for path, want in ((run, "0.5000"), (odd, "1.0000")):  # odd: q1 retrieves its relevant d1 first
        assert main(["trec_eval", "-m", "recip_rank", str(qrels), str(path)]) == 0
        assert capsys.readouterr().out == f"recip_rank            \tall\t{want}\n"
    assert main(["trec_eval", "-m", "recip_rank", str(qrels), str(run)]) == 0
    assert capsys.readouterr().out.split() == ["recip_rank", "all", "0.5000"]


def _same_matrix(a, b) -> None:
    assert a.qids == b.qids
    for name in ("num_ret", "levels", "bogus"):
        assert (getattr(a, name) == getattr(b, name)).all(), name
    assert (a.hit == b.hit).all()
    assert (a.rank[a.hit] == b.rank[b.hit]).all() and (a.value[a.hit] == b.value[b.hit]).all()


@pytest.mark.parametrize("block_bytes", [1, 64, 700, 1 << 24])
@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("float32", [False, True])
def test_blocks_of_whole_queries_rank_as_the_line_reader(
    tmp_path: Path, block_bytes: int, workers: int, float32: bool
) -> None:
    """Whatever the block size (1 byte: one query a block; 16 MiB: the whole file) and the number of threads, the
    blocks' hits make the line reader's matrix — with -c, -M and -J applied after the merge."""
    qrels_path, spaced, _, _ = _write(tmp_path, 3, ranked=False)
    qrels = read_qrels(qrels_path)
    fast = read_ranked(spaced, qrels, float32=float32, workers=workers, block_bytes=block_bytes)
    assert fast is not None
    slow = read_results(spaced, float32=float32)
    for opts in ({}, {"complete": True}, {"max_docs": 5, "complete": True}, {"judged_only": True}):
        _same_matrix(build_columnar(qrels, fast, **opts), build(qrels, slow, **opts))


@pytest.mark.parametrize("block_bytes", [1, 1 << 24])
@pytest.mark.parametrize("workers", [1, 2])
def test_qrels_still_being_read_give_the_same_hits_and_their_problem_first(
    tmp_path: Path, block_bytes: int, workers: int
) -> None:
    """`qrelkit trec_eval` reads the qrels on a side thread while the run's first blocks are parsed: qrels given as
    a function that waits for them (here, 0.2 s) make the same hits as qrels given at once; qrels that fail name
    their own problem even when the run's first line is bad too, as when the files were read in turn."""
    import threading

    qrels_path, spaced, _, _ = _write(tmp_path, 5, ranked=False)
    qrels = read_qrels(qrels_path)
    done = threading.Event()
    threading.Timer(0.2, done.set).start()

    def later():
        done.wait()
        return qrels

    fast = read_ranked(spaced, later, workers=workers, block_bytes=block_bytes)
    at_once = read_ranked(spaced, qrels, workers=workers, block_bytes=block_bytes)
    assert fast is not None and at_once is not None and fast.run_id == at_once.run_id == "run5"
    for opts in ({}, {"complete": True}):
        _same_matrix(build_columnar(qrels, fast, **opts), build_columnar(qrels, at_once, **opts))

    def failed():
        raise InputError("bad.qrels", 3, "relevance 'x' is not an integer")

    bad_run = tmp_path / "bad.run"
    bad_run.write_text("q0 Q0 d99 1 zz run5\n" + spaced.read_text())  # q0 comes first: its block is bad
    for run in (spaced, bad_run):
        with pytest.raises(InputError, match=r"bad\.qrels:3"):
            read_ranked(run, failed, workers=workers, block_bytes=block_bytes)


def test_the_command_names_a_bad_qrels_file_before_a_bad_run(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    qrels, run = tmp_path / "bad.qrels", tmp_path / "bad.run"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 x\n")
    run.write_text("q1 Q0 d1 1 zz r\n")
    assert main(["trec_eval", str(qrels), str(run)]) == 2
    assert capsys.readouterr().err.strip() == f"qrelkit trec_eval: {qrels}:2: relevance 'x' is not an integer"
    assert main(["trec_eval", str(qrels), str(tmp_path / "no.run")]) == 2
    assert capsys.readouterr().err.strip() == f"qrelkit trec_eval: {qrels}:2: relevance 'x' is not an integer"


def test_a_run_whose_queries_are_not_grouped_is_read_whole(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """q1's lines before and after q2's: the blocks would split q1 (Scattered), so the file is ranked whole —
    d2 (score 3) first, then d1 (2), d3 (1): with d1 and d3 relevant, AP = (1/2 + 2/3) / 2 = 0.5833."""
    qrels_path, run = tmp_path / "qrels", tmp_path / "run"
    qrels_path.write_text("q1 0 d1 1\nq1 0 d3 1\nq2 0 d9 1\n")
    run.write_text("q1 Q0 d1 1 2 r\nq2 Q0 d9 1 1 r\nq1 Q0 d2 2 3 r\nq1 Q0 d3 3 1 r\n")
    ranked = read_ranked(run, read_qrels(qrels_path), block_bytes=1)
    assert ranked is not None
    assert ranked.ranked.num_ret.tolist() == [3, 1]
    assert sorted(zip(ranked.ranked.q.tolist(), ranked.ranked.rank.tolist(), strict=True)) == [(0, 2), (0, 3), (1, 1)]
    assert main(["trec_eval", "-q", "-m", "map", str(qrels_path), str(run)]) == 0
    assert capsys.readouterr().out.splitlines() == [  # q2: d9 first, AP 1; the mean (0.5833 + 1) / 2
        "map                   \tq1\t0.5833",
        "map                   \tq2\t1.0000",
        "map                   \tall\t0.7917",
    ]


@pytest.mark.parametrize(
    "content",
    [
        b"q1 Q0 d1 1 1 r\nq1 Q0 d1 2 0.5 r\n",  # d1 twice: the line reader names it
        b"q1 Q0 d1 1 nan r\n",  # NaN: ranked by the line reader's comparison
        b"q1 Q0 d1\v1 1 r\n",  # a vertical tab: the line reader splits there (tabs and spaces the fast path reads)
        b"# a comment line\nq1 Q0 d1 1 1 r\n",
        b"q1 Q0 d1 1 1 r extra\n",
        b"",
    ],
)
def test_what_only_the_line_reader_decides(tmp_path: Path, content: bytes) -> None:
    qrels_path, run = tmp_path / "qrels", tmp_path / "run"
    qrels_path.write_text("q1 0 d1 1\n")
    run.write_bytes(content)
    assert read_ranked(run, read_qrels(qrels_path), block_bytes=1) is None


@pytest.mark.parametrize("block_bytes", [1, 1 << 24])
@pytest.mark.parametrize("workers", [1, 2])
def test_gzip_runs_and_qrels_read_as_their_plain_text(
    tmp_path: Path, capsys: pytest.CaptureFixture, block_bytes: int, workers: int
) -> None:
    """trec_eval 10.0 reads a gzip file's compressed bytes as lines; qrelkit looks through gzip, whatever the
    file's name: the spaced and tabbed runs (fast path, in blocks), the commented one (line reader) and the qrels,
    compressed, print what their plain text prints, run id included."""
    qrels, spaced, tabbed, commented = _write(tmp_path, 4, ranked=True)
    packed = {}
    for path, name in ((qrels, "qrels.gz"), (spaced, "spaced"), (tabbed, "tabbed.run.gz"), (commented, "c.gz")):
        packed[path] = tmp_path / name
        packed[path].write_bytes(gzip.compress(path.read_bytes()))
    fast = read_ranked(packed[spaced], read_qrels(packed[qrels]), workers=workers, block_bytes=block_bytes)
    assert fast is not None and fast.run_id == "run4"
    _same_matrix(
        build_columnar(read_qrels(qrels), fast, complete=True),
        build(read_qrels(qrels), read_results(spaced), complete=True),
    )
    assert read_ranked(packed[commented], read_qrels(qrels)) is None  # the comment: the line reader's
    for run in (spaced, tabbed, commented):
        assert main(["trec_eval", "-q", "-c", "-m", "all_trec", str(qrels), str(run)]) == 0
        plain = capsys.readouterr().out
        assert main(["trec_eval", "-q", "-c", "-m", "all_trec", str(packed[qrels]), str(packed[run])]) == 0
        assert capsys.readouterr().out == plain
        assert "runid                 \tall\trun4" in plain


def test_a_gzip_run_cut_short_is_one_sentence(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    qrels, spaced, _, _ = _write(tmp_path, 5)
    cut = tmp_path / "cut.gz"
    cut.write_bytes(gzip.compress(spaced.read_bytes())[:40])
    assert main(["trec_eval", "-m", "map", str(qrels), str(cut)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"qrelkit trec_eval: {cut}") and "cannot read the file" in err and len(err.splitlines()) == 1
