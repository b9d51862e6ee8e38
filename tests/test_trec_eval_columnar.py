"""The columnar fast path (single-space files through pyarrow) prints exactly what the line-by-line reader does:
the same run written with single spaces and with tabs (which only the line reader takes) gives identical
`-q -c -m all_trec` output, on seeded data with tied scores, unjudged documents, -2 grades and missing queries,
with the lines in rank order (the fast path's one pass) or not (its sort)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from annotator.cli import main
from eval_core.ranking.trec_eval.columnar import docid_keys, read_run_columns


def _write(tmp_path: Path, seed: int, ranked: bool = False) -> tuple[Path, Path, Path]:
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
    paths = tmp_path / "qrels", tmp_path / "spaced.run", tmp_path / "tabbed.run"
    for path, lines in zip(paths, (qrels, spaced, tabbed), strict=True):
        path.write_text("\n".join(lines) + "\n")
    return paths


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("ranked", [False, True])
@pytest.mark.parametrize("extra", [[], ["-M5"], ["-J"], ["-J", "-M5"], ["-l2"], ["-l0"], ["-l-1"],
                                   ["-m", "ndcg.-1=2,1=3", "-m", "rbp.-2=1", "-m", "relstring.30"],
                                   ["--trec-eval-version", "9"]])
def test_fast_path_equals_line_reader(tmp_path: Path, capsys: pytest.CaptureFixture, seed: int, ranked: bool,
                                      extra: list[str]) -> None:
    qrels, spaced, tabbed = _write(tmp_path, seed, ranked)
    assert read_run_columns(spaced) is not None and read_run_columns(tabbed) is None
    outs = []
    for run in (spaced, tabbed):
        assert main(["trec_eval", "-q", "-c", "-m", "all_trec", *extra, str(qrels), str(run)]) == 0
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1]
    assert "num_q                 \tall\t" in outs[0]


def test_docid_keys_depend_on_the_string_alone() -> None:
    """A docid's key is the same whatever its neighbours, chunks or offset type (run and qrels are keyed apart),
    and 2,000 distinct strings of 0–30 bytes (NUL and non-ASCII included) get 2,000 distinct keys."""
    rng = np.random.default_rng(0)
    alphabet = ["a", "b", "\x00", "é", "9"]
    strings = list(dict.fromkeys("".join(rng.choice(alphabet, size=int(rng.integers(0, 31))).tolist())
                                 for _ in range(2500)))[:2000]
    whole = docid_keys(pa.array(strings))
    assert len(set(whole.tolist())) == len(strings)
    chunked = docid_keys(pa.chunked_array([pa.array(strings).slice(0, 7), pa.array(strings).slice(7)]))
    assert (chunked == whole).all()
    assert (docid_keys(pa.array(strings, type=pa.large_string())) == whole).all()
    assert all(docid_keys(pa.array([s]))[0] == whole[i] for i, s in enumerate(strings[:300]))


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


def test_fast_run_reader_takes_docids_as_bytes_and_leaves_odd_query_ids(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture) -> None:
    """b'd\\xff1' (not UTF-8) and 'd1' tie at score 1; trec_eval breaks ties by docid descending in byte order and
    0xff > '1', so b'd\\xff1' is ranked first and the only relevant one, 'd1', second: recip_rank = 1/2. A query id
    that is not UTF-8 sends the run to the line reader."""
    qrels, run, odd = tmp_path / "qrels", tmp_path / "run", tmp_path / "odd.run"
    qrels.write_bytes(b"q1 0 d1 1\n")
    run.write_bytes(b"q1 Q0 d1 1 1 r\nq1 Q0 d\xff1 2 1 r\n")
    odd.write_bytes(b"q\xff1 Q0 d1 1 1 r\nq1 Q0 d1 1 1 r\n")
    cols = read_run_columns(run)
    assert cols is not None and cols.docid.to_pylist() == [b"d1", b"d\xff1"]
    assert read_run_columns(odd) is None
    assert main(["trec_eval", "-m", "recip_rank", str(qrels), str(run)]) == 0
    assert capsys.readouterr().out.split() == ["recip_rank", "all", "0.5000"]
