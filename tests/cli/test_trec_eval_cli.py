"""`qrelkit trec_eval`: trec_eval's output layout, option parsing (glued, repeated, long forms), its exit statuses,
and the 10.0-only values on one small hand-built query.

The query (used throughout): qrels judge a, b, c, d relevant (grade 1) and e non-relevant (grade 0); the run ranks
a (score 4), x (3), b (2), y (1), so x and y are not in the qrels and c, d are never retrieved.
R = 4, 2 relevant retrieved at ranks 1 and 3.
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from annotator.cli import main

QRELS = "q1 0 a 1\nq1 0 b 1\nq1 0 c 1\nq1 0 d 1\nq1 0 e 0\n"
RUN = "q1 Q0 a 1 4 tag\nq1 Q0 x 2 3 tag\nq1 Q0 b 3 2 tag\nq1 Q0 y 4 1 tag\n"


@pytest.fixture()
def files(tmp_path: Path) -> tuple[str, str]:
    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text(QRELS)
    run.write_text(RUN)
    return str(qrels), str(run)


def _run(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    status = main(["trec_eval", *argv])
    out = capsys.readouterr()
    return status, out.out, out.err


def _value(out: str, name: str, qid: str = "all") -> str:
    for line in out.splitlines():
        fields = line.split("\t")
        if fields[0].strip() == name and fields[1] == qid:
            return fields[2]
    raise AssertionError(f"{name} {qid} not in output:\n{out}")


def test_default_output_is_the_official_set_in_trec_eval_layout(
    files: tuple[str, str], capsys: pytest.CaptureFixture
) -> None:
    """The layout is `%-22s\\t%s\\t%6.4f` (counts `%ld`), runid first: num_ret 4, num_rel 4, num_rel_ret 2,
    map = (1/1 + 2/3)/4 = 0.4167, P_5 = 2/5."""
    status, out, _ = _run(capsys, *files)
    assert status == 0
    lines = out.splitlines()
    assert lines[0] == "runid                 \tall\ttag"
    assert lines[1] == "num_q                 \tall\t1"
    assert lines[2] == "num_ret               \tall\t4"
    assert "map                   \tall\t0.4167" in lines
    assert "P_5                   \tall\t0.4000" in lines
    assert [ln.split("\t")[0].strip() for ln in lines[:8]] == [
        "runid",
        "num_q",
        "num_ret",
        "num_rel",
        "num_rel_ret",
        "map",
        "gm_map",
        "Rprec",
    ]


def test_ten_only_values(files: tuple[str, str], capsys: pytest.CaptureFixture) -> None:
    """Hand derivations for the measures trec_eval 9 does not have or computes differently:
    - iprec_at_recall_0.30: 10.0 rounds 0.3·4 = 1.2 to 1 relevant doc: best precision from rank 1 on = 1.0;
      version 9 takes int(1.2 + 0.9) = 2: best precision from rank 3 on = 2/3.
    - yaap = log((1 + s)/(1 + R − s)), s = 1/1 + 2/3: log(2.6667/3.3333) = log(0.8) = −0.2231.
    - rbp (p = 0.9) = 0.1·(0.9⁰ + 0.9²) = 0.1810.
    - rbp_resid: unjudged x, y at ranks 2, 4: 0.9⁴ + 0.1·(0.9¹ + 0.9³) = 0.6561 + 0.1629 = 0.8190.
    - unj_5 = 2/5, unj_10 = 2/10.
    """
    status, out, _ = _run(
        capsys, "-m", "iprec_at_recall", "-m", "yaap", "-m", "rbp", "-m", "rbp_resid", "-m", "unj.5,10", *files
    )
    assert status == 0
    assert _value(out, "iprec_at_recall_0.30") == "1.0000"
    assert _value(out, "yaap") == f"{math.log(0.8):6.4f}" == "-0.2231"
    assert _value(out, "rbp") == "0.1810"
    assert _value(out, "rbp_resid") == "0.8190"
    assert _value(out, "unj_5") == "0.4000"
    assert _value(out, "unj_10") == "0.2000"
    status, out9, _ = _run(capsys, "--trec-eval-version", "9", "-m", "iprec_at_recall", *files)
    assert _value(out9, "iprec_at_recall_0.30") == "0.6667"


def test_diff_versions_lists_what_differs(files: tuple[str, str], capsys: pytest.CaptureFixture) -> None:
    """Cutoffs (10.0 round(x·4) vs 9 int(x·4 + 0.9)): 0.30 → 1 vs 2 (1.0 vs 2/3) and 0.60 → 2 vs 3 (2/3 vs 0:
    only 2 relevant retrieved) differ; 0.20 (1, 1), 0.40 (2, 2), 0.50 (2, 2) and 0.70 (3, 3) do not."""
    status, out, _ = _run(capsys, "--diff-versions", "-m", "iprec_at_recall", *files)
    assert status == 0
    assert out.splitlines() == [
        "iprec_at_recall_0.30  \tq1\t1.0000\t0.6667",
        "iprec_at_recall_0.60  \tq1\t0.6667\t0.0000",
    ]


def test_per_query_glued_and_long_options(files: tuple[str, str], capsys: pytest.CaptureFixture) -> None:
    """-q prints the query's lines first; -mP.1,3 and --measure relstring.3 glue parameters; -M2 keeps the top 2
    (a, x: P_1 = 1, P_3 = 1/3, relstring '1-'); -n drops the summary."""
    status, out, _ = _run(capsys, "-q", "-n", "-mP.1,3", "--measure", "relstring.3", "-M2", *files)
    assert status == 0
    assert out.splitlines() == [
        "P_1                   \tq1\t1.0000",
        "P_3                   \tq1\t0.3333",
        "relstring_3           \tq1\t'1-'",
    ]


def test_level_for_rel_and_judged_only(files: tuple[str, str], capsys: pytest.CaptureFixture) -> None:
    """-l2: nothing is relevant (num_rel 0); -J drops x and y, so b moves to rank 2: P_5 stays 2/5 and
    recip_rank 1, set_P = 2/2."""
    _, out, _ = _run(capsys, "-l2", "-m", "num_rel", *files)
    assert _value(out, "num_rel") == "0"
    _, out, _ = _run(capsys, "-J", "-m", "set_P", "-m", "num_ret", *files)
    assert _value(out, "set_P") == "1.0000"
    assert _value(out, "num_ret") == "2"


def test_missing_query_needs_c(tmp_path: Path, files: tuple[str, str], capsys: pytest.CaptureFixture) -> None:
    """A qrels query without results: refused (exit 4) unless -c, which scores it as trec_eval 10.0 does
    (its stand-in ranking: num_ret 0, relstring '', map 0) and averages over both queries: map 0.4167 / 2."""
    qrels = tmp_path / "qrels2"
    qrels.write_text(QRELS + "q2 0 a 1\n")
    status, out, err = _run(capsys, str(qrels), files[1])
    assert status == 4 and out == ""
    assert err.count("\n") == 1 and "q2" in err and "-c" in err
    status, out, _ = _run(capsys, "-c", "-q", "-m", "map", "-m", "num_ret", "-m", "relstring", str(qrels), files[1])
    assert status == 0
    assert _value(out, "num_ret", "q2") == "0"
    assert _value(out, "relstring", "q2") == "''"
    assert _value(out, "map") == f"{(1 + 2 / 3) / 4 / 2:6.4f}"


def test_missing_query_in_version_9(tmp_path: Path, files: tuple[str, str], capsys: pytest.CaptureFixture) -> None:
    """trec_eval 9 evaluates only the queries the run has (its loop runs over the results' queries): q2, judged but
    not retrieved, is skipped without -c (no refusal; num_q 1, map = (1/1 + 2/3)/4 = 0.4167) and has no -q lines
    with -c either, where the means divide by both qrels queries (map 0.4167/2 = 0.2083) and num_q counts them
    (m_num_q.c: with -c, the number of topics in the rel_info file), as 10.0 does."""
    qrels = tmp_path / "qrels2"
    qrels.write_text(QRELS + "q2 0 a 1\n")
    v9 = ("--trec-eval-version", "9", "-q", "-m", "num_q", "-m", "map", "-m", "num_ret")
    status, out, err = _run(capsys, *v9, str(qrels), files[1])
    assert status == 0 and err == ""
    assert (_value(out, "num_q"), _value(out, "map"), _value(out, "num_ret")) == ("1", "0.4167", "4")
    assert "\tq2\t" not in out
    status, out, _ = _run(capsys, *v9, "-c", str(qrels), files[1])
    assert status == 0
    assert (_value(out, "num_q"), _value(out, "map"), _value(out, "num_ret")) == ("2", "0.2083", "4")
    assert "\tq2\t" not in out
    _, out10, _ = _run(capsys, "-c", "-m", "num_q", str(qrels), files[1])
    assert _value(out10, "num_q") == "2"


def test_debug_level_option(tmp_path: Path, files: tuple[str, str], capsys: pytest.CaptureFixture) -> None:
    """trec_eval 10.0's -D level[.qid] (get_debug_level_query): `0.q2` evaluates only q2, whose one line ranks its
    one relevant document first (AP 1); the summary is q2's alone (map 1.0000, num_q 1), and with -c it divides by
    both qrels queries (map 1/2, num_q 2), as calc_avg uses every rel_info query. A qid with no qrels leaves no
    query (exit 7); -D 0 changes nothing; a level above 0 asks for trec_eval's debug printout, which qrelkit does
    not reproduce, so it is refused (exit 1, one line)."""
    qrels, run = tmp_path / "qrels2", tmp_path / "run2"
    qrels.write_text(QRELS + "q2 0 a 1\n")
    run.write_text(RUN + "q2 Q0 a 1 1 tag\n")
    m = ("-m", "num_q", "-m", "map")
    status, out, _ = _run(capsys, "-D", "0.q2", "-q", *m, str(qrels), str(run))
    assert status == 0
    assert [ln for ln in out.splitlines() if "\tq" in ln] == ["map                   \tq2\t1.0000"]
    assert (_value(out, "num_q"), _value(out, "map")) == ("1", "1.0000")
    status, out, _ = _run(capsys, "--Debug_level", "0.q2", "-c", *m, str(qrels), str(run))
    assert (_value(out, "num_q"), _value(out, "map")) == ("2", "0.5000")
    status, out, err = _run(capsys, "-D", "0.q9", *m, str(qrels), str(run))
    assert status == 7 and "No queries" in err
    assert _run(capsys, "-D", "0", *m, *files)[1] == _run(capsys, *m, *files)[1]
    status, out, err = _run(capsys, "-D", "2", *m, *files)
    assert status == 1 and out == "" and err.count("\n") == 1 and "-D 2" in err


def test_old_format_option(files: tuple[str, str], capsys: pytest.CaptureFixture) -> None:
    """-o (old, non-relational output): trec_eval 10.0 sets a flag nothing reads, so the output is unchanged;
    trec_eval 9 prints the -q lines, then 'old format not yet supported' and exits 10 without a summary."""
    plain = _run(capsys, "-q", "-m", "map", *files)[1]
    assert _run(capsys, "-o", "-q", "-m", "map", *files)[1] == plain
    assert _run(capsys, "--Output_old_results_format", "x", "-q", "-m", "map", *files)[1] == plain
    status, out, err = _run(capsys, "--trec-eval-version", "9", "-o", "-q", "-m", "map", *files)
    assert status == 10
    assert out == "map                   \tq1\t0.4167\n"
    assert "old format not yet supported" in err


@pytest.mark.parametrize("version", ["9", "10"])
def test_rndcg_without_relevant_documents(tmp_path: Path, capsys: pytest.CaptureFixture, version: str) -> None:
    """m_Rndcg.c (the same in 9 and 10.0): a query with no relevant document scores 0 (an early return); one whose
    relevant documents all have gain ≤ 0 reaches no R level with a positive ideal DCG and divides 0.0 by 0.

    q1 judges a and b with grade 0 and retrieves a, x; q2 judges a with grade 1 and retrieves it.
    - -l1: q1 has R = 0 → 0.0000; q2: ideal gains [1], one boundary (after rank 1) with DCG 1/log2(2) = ideal DCG
      → 1.0000; mean 0.5000.
    - -l0: q1 has R = 2 but gain 0 for grade 0, so no boundary counts: 0.0/0, printed by glibc as '-nan' (x86's
      0/0 has the sign bit); q2 still 1.0000; the mean carries the NaN."""
    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text("q1 0 a 0\nq1 0 b 0\nq2 0 a 1\n")
    run.write_text("q1 Q0 a 1 2 t\nq1 Q0 x 2 1 t\nq2 Q0 a 1 1 t\n")
    v = ("--trec-eval-version", version, "-q", "-m", "Rndcg")
    status, out, _ = _run(capsys, *v, str(qrels), str(run))
    assert status == 0
    assert (_value(out, "Rndcg", "q1"), _value(out, "Rndcg", "q2"), _value(out, "Rndcg")) == (
        "0.0000",
        "1.0000",
        "0.5000",
    )
    status, out, _ = _run(capsys, *v, "-l0", str(qrels), str(run))
    assert status == 0
    assert (_value(out, "Rndcg", "q1"), _value(out, "Rndcg", "q2"), _value(out, "Rndcg")) == (
        "  -nan",
        "1.0000",
        "  -nan",
    )


@pytest.mark.parametrize(
    ("argv", "status", "says"),
    [
        (["-m", "nonsense"], 1, "illegal measure 'nonsense'"),
        (["-m", "P."], 1, "improper measure"),
        (["-m", "P.5,5"], 2, "duplicate cutoffs"),
        (["-m", "P.0"], 2, "Negative cutoff"),
        (["-m", "utility.1,2,3"], 4, "utility"),
        (["-R", "bogus"], 2, "Illegal rel_format 'bogus'"),
        (["-T", "other"], 2, "Illegal retrieval results format"),
    ],
)
def test_refusals(
    files: tuple[str, str], capsys: pytest.CaptureFixture, argv: list[str], status: int, says: str
) -> None:
    """What trec_eval refuses, with its exit status and one line on stderr."""
    got, out, err = _run(capsys, *argv, *files)
    assert got == status
    assert says in err and err.count("\n") == 1
    assert out == ""


def test_unreadable_and_malformed_inputs(tmp_path: Path, files: tuple[str, str], capsys: pytest.CaptureFixture) -> None:
    """Exit 2 naming the file (and line): a missing file; a run line with 3 fields; a docid retrieved twice."""
    status, _, err = _run(capsys, str(tmp_path / "nope"), files[1])
    assert status == 2 and "nope" in err
    bad = tmp_path / "bad.run"
    bad.write_text("q1 Q0 a 1 4 tag\nq1 Q0 b\n")
    status, _, err = _run(capsys, files[0], str(bad))
    assert status == 2 and f"{bad}:2:" in err
    dup = tmp_path / "dup.run"
    dup.write_text("q1 Q0 a 1 4 tag\n# a comment\nq2 Q0 a 1 3 tag\nq1 Q0 b 2 3 tag\nq1 Q0 a 3 2 tag\n")
    status, _, err = _run(capsys, files[0], str(dup))
    assert status == 2
    assert f"{dup}:5: docid 'a' is retrieved twice for query 'q1' (first on line 1)" in err


def test_scores_are_float64_in_10_float32_in_9(
    tmp_path: Path, files: tuple[str, str], capsys: pytest.CaptureFixture
) -> None:
    """e (non-relevant) scores 4.0000001, a (relevant) 4: distinct in float64 (e first, recip_rank 1/2), one
    float32 value in version 9, where the tie goes to the docid later in byte order (e) as well; with docids
    swapped the tie makes the difference: z (relevant, 4) vs b2... kept simple: check the 10.0 order only."""
    run = tmp_path / "near.run"
    run.write_text("q1 Q0 a 1 4 tag\nq1 Q0 0e 2 4.0000001 tag\n")
    _, out10, _ = _run(capsys, "-m", "recip_rank", files[0], str(run))
    _, out9, _ = _run(capsys, "--trec-eval-version", "9", "-m", "recip_rank", files[0], str(run))
    assert _value(out10, "recip_rank") == "0.5000"  # 4.0000001 > 4 in float64
    assert _value(out9, "recip_rank") == "1.0000"  # a tie in float32: docid 'a' > '0e' comes first


def test_zscores(tmp_path: Path, files: tuple[str, str], capsys: pytest.CaptureFixture) -> None:
    """-Z: (value − mean)/sd per query and measure, names prefixed by Z, counts as reals; a measure without a line
    in the file is −1000000. num_ret 4 against mean 2, sd 1 → 2.0; P_5 absent → −1000000."""
    z = tmp_path / "z"
    z.write_text("q1 num_ret 2 1\n")
    status, out, _ = _run(capsys, "-q", "-Z", str(z), "-m", "num_ret", "-m", "P.5", *files)
    assert status == 0
    assert "Znum_ret               \tq1\t2.0000" in out.splitlines()
    assert "ZP_5                   \tq1\t-1000000.0000" in out.splitlines()


def test_command_line_entry(files: tuple[str, str]) -> None:
    """`python -m annotator trec_eval` as a process: trec_eval's usage exit status 1 for a missing file argument."""
    done = subprocess.run([sys.executable, "-m", "annotator", "trec_eval", files[0]], capture_output=True, text=True)
    assert done.returncode == 1


@pytest.mark.parametrize("persistence", [0.9, 0.95, 0.5])
def test_rbp_and_rbp_resid_round_as_trec_eval_loops_do(persistence: float) -> None:
    """m_rbp.c and m_rbp_resid.c walk the ranks once: `cur_p` is the previous one times p (not pow), and each
    rank's term is added to the running sum in rank order. Written out here for 40 queries of 300 documents with
    judged ones scattered among unjudged and unpooled ones, the values must be equal to the last bit (a total of
    all weights minus the judged ones, or pow, differs in the last bits)."""
    from eval_core.ranking.trec_eval.reading import qrels_from_dict, results_from_dict
    from eval_core.ranking.trec_eval.run import per_query

    rng = __import__("numpy").random.default_rng(7)
    qrels, run, expected = {}, {}, {}
    for q in range(40):
        docs = [f"d{i}" for i in range(300)]
        grades = {d: int(g) for d, g in zip(docs, rng.integers(-1, 3, 300), strict=True) if rng.random() < 0.3}
        qrels[f"q{q}"], run[f"q{q}"] = grades, {d: float(300 - i) for i, d in enumerate(docs)}
        rbp = resid = 0.0
        cur_p = 1.0
        for d in docs:  # rank order: scores descending
            g = grades.get(d)
            if g is None or g < 0:
                resid += cur_p
            elif g >= 1:  # gain = grade; rbp's gains lie in [0, 2] here, so they are scaled to [0, 1] by max 2
                rbp += g / 2 * cur_p
            cur_p = cur_p * persistence
        expected[f"q{q}"] = ((1.0 - persistence) * rbp, cur_p + (1 - persistence) * resid)
    got = per_query(qrels_from_dict(qrels), results_from_dict(run), (f"rbp.p={persistence}", "rbp_resid"))
    for q, (rbp, resid) in expected.items():
        assert got[q][f"rbp_p={persistence}"] == rbp
        if persistence == 0.9:  # rbp_resid's p is the default
            assert got[q]["rbp_resid"] == resid


@pytest.mark.parametrize("rel_format", ["qrels_prefs", "qrels_jg"])
def test_debug_query_with_preference_and_judge_group_files(
    tmp_path: Path, capsys: pytest.CaptureFixture, rel_format: str
) -> None:
    """-D 0.qid is the same loop for every rel_info format (trec_eval.c skips the other queries of the run): the -q
    lines are q2's lines of the full evaluation, the summary is q2's alone, and with -c it divides by both queries.
    q1 is this module's query; q2 ranks its relevant a above its non-relevant f, so every fraction of q2 is 1."""
    qrels, run = tmp_path / "qrels2", tmp_path / "run2"
    qrels.write_text(QRELS + "q2 0 a 1\nq2 0 f 0\n")
    run.write_text(RUN + "q2 Q0 a 1 2 tag\nq2 Q0 f 2 1 tag\n")
    m = ("-m", "num_q", "-m", "map_avgjg") if rel_format == "qrels_jg" else ("-m", "num_q", "-m", "prefs_simp")
    name = m[-1]
    status, full, _ = _run(capsys, "-R", rel_format, "-q", *m, str(qrels), str(run))
    assert status == 0
    status, one, _ = _run(capsys, "-R", rel_format, "-D", "0.q2", "-q", *m, str(qrels), str(run))
    assert status == 0
    assert [ln for ln in one.splitlines() if "\tq" in ln] == [ln for ln in full.splitlines() if "\tq2\t" in ln]
    assert (_value(one, "num_q"), _value(one, name)) == ("1", "1.0000")
    status, both, _ = _run(capsys, "-R", rel_format, "-D", "0.q2", "-c", *m, str(qrels), str(run))
    assert (_value(both, "num_q"), _value(both, name)) == ("2", "0.5000")


def test_num_rel_summary_with_c_counts_every_positive_qrels_line_whatever_l_says(capsys, tmp_path: Path) -> None:
    """m_num_rel.c's te_calc_avg_num_rel: under -c the `all` value is the number of qrels lines with rel > 0, over
    every qrels query (q2 is missing from the run), not the sum of the per-query counts at -l. Here grades 2, 1, 0
    on q1 and 2, 1 on q2: four lines with rel > 0, while the per-query num_rel at -l2 is 1 each (sum 2)."""
    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text("q1 0 a 2\nq1 0 b 1\nq1 0 c 0\nq2 0 a 2\nq2 0 b 1\n")
    run.write_text("q1 Q0 a 1 2 t\nq1 Q0 c 2 1 t\n")
    status, out, _ = _run(capsys, "-q", "-c", "-l2", "-m", "num_rel", str(qrels), str(run))
    assert status == 0
    assert _value(out, "num_rel", "q1") == "1" and _value(out, "num_rel", "q2") == "1"
    assert _value(out, "num_rel") == "4"
    _, out, _ = _run(capsys, "-c", "-l2", "-m", "num_rel", "--trec-eval-version", "9", str(qrels), str(run))
    assert _value(out, "num_rel") == "1"  # trec_eval 9 sums the evaluated queries' counts


def test_stand_in_clean_up_goes_by_printed_name(tmp_path: Path, files: tuple[str, str], capsys) -> None:
    """trec_eval.c, after -c's stand-in ranking of a query the run lacks (one document outside the qrels),
    zeroes the values named exactly num_ret, utility, rbp_resid, clears relstring (strcmp), and every name
    starting with unj (strncmp). A measure given parameters prints them in its name, so it keeps what the
    stand-in ranking gives. Here q2 has one relevant document (R = 1), the ranking 1 document, 0 relevant:
    utility.1,-1,-1,1 = 1·0 − 1·(1 − 0) − 1·(1 − 0) + 1·(0 + 0 − 1 − 1) = −4 (m_utility.c, -N 0);
    rbp_resid.p=0.8: one unjudged document at rank 1, sum = 1, p^1 = 0.8: 0.8 + 0.2·1 = 1 (m_rbp_resid.c);
    relstring.20: the first min(20, 1) values, one not in the pool: '-' (m_relstring.c)."""
    qrels = tmp_path / "qrels2"
    qrels.write_text(QRELS + "q2 0 a 1\n")
    base = ["-c", "-q", str(qrels), files[1]]
    _, out, _ = _run(capsys, "-m", "utility", "-m", "rbp_resid", "-m", "relstring", "-m", "unj.3", *base)
    assert _value(out, "utility", "q2") == "0.0000"
    assert _value(out, "rbp_resid", "q2") == "0.0000"
    assert _value(out, "relstring", "q2") == "''"
    assert _value(out, "unj_3", "q2") == "0.0000"  # strncmp(name, "unj", 3) matches whatever the cutoffs
    _, out, _ = _run(capsys, "-m", "utility.1,-1,-1,1", "-m", "rbp_resid.p=0.8", "-m", "relstring.20", *base)
    assert _value(out, "utility_1,-1,-1,1", "q2") == "-4.0000"
    assert _value(out, "rbp_resid_p=0.8", "q2") == "1.0000"
    assert _value(out, "relstring_20", "q2") == "'-'"


def test_interpolated_precision_of_an_empty_ranking_is_negative_nan(tmp_path: Path, capsys) -> None:
    """m_iprec_at_recall.c and m_11pt_avg.c start from precis = num_rel_ret / num_ret, which is 0.0 / 0.0 when
    -J leaves no judged document (x86's default NaN has its sign bit set; glibc prints it '-nan'), and give it
    to every cutoff of at most num_rel_ret = 0 relevant documents. With R = 1, 10.0 rounds fraction·R
    (lround): 0.0–0.4 → 0 (NaN), 0.5–1.0 → 1 (left at 0); 9 adds 0.9 and truncates: only 0.0 → 0.
    11pt_avg sums a NaN, so it is NaN; over cutoffs .5 and .75 (both 1) it is 0. Without -J nothing is NaN."""
    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text("q1 0 a 1\nq1 0 b 0\n")
    run.write_text("q1 Q0 x 1 2 t\nq1 Q0 y 2 1 t\n")
    status, out, _ = _run(capsys, "-q", "-J", "-m", "iprec_at_recall", "-m", "11pt_avg", str(qrels), str(run))
    assert status == 0
    for frac in ("0.00", "0.10", "0.20", "0.30", "0.40"):
        assert _value(out, f"iprec_at_recall_{frac}", "q1") == "  -nan"
    for frac in ("0.50", "0.60", "1.00"):
        assert _value(out, f"iprec_at_recall_{frac}", "q1") == "0.0000"
    assert _value(out, "11pt_avg", "q1") == "  -nan"
    assert _value(out, "iprec_at_recall_0.00") == "  -nan"  # the mean over the one query
    assert _value(out, "11pt_avg") == "  -nan"
    _, out, _ = _run(capsys, "-J", "-m", "11pt_avg..5,.75", str(qrels), str(run))
    assert _value(out, "11pt_avg_.5,.75") == "0.0000"
    _, out, _ = _run(capsys, "-q", "-m", "iprec_at_recall", str(qrels), str(run))
    assert _value(out, "iprec_at_recall_0.00", "q1") == "0.0000"
    _, out, _ = _run(capsys, "-q", "-J", "-m", "iprec_at_recall", "--trec-eval-version", "9", str(qrels), str(run))
    assert _value(out, "iprec_at_recall_0.00", "q1") == "  -nan"
    assert _value(out, "iprec_at_recall_0.10", "q1") == "0.0000"
