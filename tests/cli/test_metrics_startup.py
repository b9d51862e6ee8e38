"""The CLI starts without the heavy libraries: the evaluation commands import them inside their handlers.

Each check runs in a fresh interpreter (sys.modules of this test process already holds everything).
Not a timing test: it asserts which modules are loaded.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import subprocess
import sys
from collections import defaultdict
from typing import Any

import pytest

from annotator.cli import COMMANDS, build_parser, main
from tests.conftest import ROOT

HEAVY = ("pandas", "scipy", "numpy", "pyarrow", "tqdm", "eval_core.ranking.significance", "eval_core.ranking.metrics")
# What evaluating a run never needs: the store, the app, its charts, SciPy, and the other command groups.
NOT_FOR_EVAL = (
    "sqlalchemy",
    "sqlmodel",
    "alembic",
    "streamlit",
    "altair",
    "scipy",
    "tqdm",
    "db",
    *sorted(set(COMMANDS.values()) - {"annotator.cli.eval"}),
)
SEED = [str(ROOT / "examples" / "seed000.qrels"), str(ROOT / "examples" / "seed000.run")]


def loaded_after(code: str, modules: tuple[str, ...] = HEAVY) -> list[str]:
    """Which of `modules` a fresh interpreter has imported after running `code`."""
    probe = f"import sys, json\n{code}\nprint(json.dumps([m for m in {modules!r} if m in sys.modules]))"
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "code",
    [
        "import eval_core",
        "import eval_core.errors, eval_core.ranking.registry, eval_core.thresholds, eval_core.ranking.paired_tests",
        "import annotator.cli.eval, annotator.cli.compare",
    ],
)
def test_evaluation_modules_import_light(code: str) -> None:
    assert loaded_after(code) == []


def test_building_the_eval_and_compare_parsers_imports_nothing_heavy() -> None:
    code = (
        "import argparse, annotator.cli.eval as e, annotator.cli.compare as c\n"
        "p = argparse.ArgumentParser(); s = p.add_subparsers(); e.register(s); c.register(s)\n"
        "p.parse_args(['eval', 'q', 'r']); p.parse_args(['compare', 'q', 'a', 'b'])"
    )
    assert loaded_after(code) == []


@pytest.mark.parametrize("argv", [["--help"], ["eval", "--help"], ["compare", "--help"], ["diagnose", "--help"]])
def test_qrelkit_help_loads_no_heavy_module(argv: list[str]) -> None:
    """The whole parser (every command group, every team's module) and `--help`: nothing heavy."""
    code = f"from annotator.cli import main\ntry:\n    main({argv!r})\nexcept SystemExit:\n    pass"
    assert loaded_after(code) == []


def test_the_package_hands_out_functions_and_its_modules_do_not_shadow_them() -> None:
    """`eval_core.compare` / `.evaluate` are functions, also once the modules defining them are imported
    (those modules are named `ranking.significance` and `ranking.evaluation`, so no name is shadowed)."""
    code = (
        "import eval_core.ranking.significance, eval_core.ranking.evaluation\n"
        "import eval_core\nfrom eval_core import compare, evaluate\n"
        "assert callable(compare) and callable(evaluate) and compare.__name__ == 'compare'\n"
        "assert eval_core.evaluate.__name__ == 'evaluate' and eval_core.compare is compare"
    )
    assert "eval_core.ranking.significance" in loaded_after(code)


def run_main(argv: list[str]) -> str:
    """Code for `loaded_after`: `qrelkit ARGV` in process, its output discarded."""
    return (
        f"import contextlib, io\nfrom annotator.cli import main\n"
        f"with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
        f"    assert main({argv!r}) == 0"
    )


def test_qrelkit_eval_loads_only_its_own_command_group() -> None:
    """The README's example: no store, no app, no SciPy, no progress bar, no other command's module."""
    argv = ["eval", *SEED, "--metrics", "recall@k,P@k,mrr,ndcg_exp@10", "--k", "3,5,10"]
    assert loaded_after(run_main(argv), NOT_FOR_EVAL) == []


def test_qrelkit_trec_eval_and_eval_of_several_runs_load_only_their_own_command_group() -> None:
    """`qrelkit trec_eval` (its module, not eval's) and `qrelkit eval` of two runs read side by side: no store,
    no app, no SciPy, no progress bar (small runs), no other command's module."""
    two = ["eval", *SEED, str(ROOT / "examples" / "seed002.run")]
    assert loaded_after(run_main(two), NOT_FOR_EVAL) == []
    others = (*(m for m in NOT_FOR_EVAL if m != "annotator.cli.trec_eval"), "annotator.cli.eval")
    assert loaded_after(run_main(["trec_eval", "-q", "-c", "-m", "all_trec", *SEED]), others) == []


def test_a_bar_big_enough_to_draw_imports_no_tqdm_off_a_terminal() -> None:
    """Runs worth a bar get one only on a terminal: with stderr a pipe (CI, a log) the bar is quiet and tqdm (with
    multiprocessing, ≈ 40 ms) is not imported; seen from a terminal it is."""
    big = f"import annotator.cli.eval\nannotator.cli.eval.PROGRESS_BYTES = 0\n{run_main(['eval', *SEED])}"
    assert loaded_after(big, ("tqdm", "multiprocessing")) == []
    tty = "import eval_core.progress\neval_core.progress.on_terminal = lambda: True\n"
    assert loaded_after(tty + big, ("tqdm",)) == ["tqdm"]


def test_eval_and_trec_eval_ask_no_terminal_width_unless_they_print_help(
    capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """argparse's formatters learn the terminal's width from shutil (with bz2 and lzma, ≈ 6 ms of start-up); the
    qrelkit parser's ask for it only when help or a usage line is printed, and print what argparse's print."""
    for argv in (["trec_eval", "-q", "-c", "-m", "all_trec", *SEED], ["eval", *SEED]):
        assert loaded_after(run_main(argv), ("shutil", "bz2", "lzma")) == [], argv
    code = "from annotator.cli import main\ntry:\n    main(['trec_eval', '--help'])\nexcept SystemExit:\n    pass"
    assert loaded_after(code, ("shutil",)) == ["shutil"]
    for argv in (["--help"], ["eval", "--help"], ["trec_eval", "--help"], ["trec_eval", "-x", "q", "r"]):
        for columns in ("50", "150"):
            monkeypatch.setenv("COLUMNS", columns)
            with pytest.raises(SystemExit):
                main(argv)
            ours = capsys.readouterr()
            with monkeypatch.context() as argparses:
                argparses.setattr("annotator.cli.HelpFormatter", argparse.HelpFormatter)
                for module in ("annotator.cli.eval", "annotator.cli.trec_eval"):
                    argparses.setattr(f"{module}.RawDescriptionHelpFormatter", argparse.RawDescriptionHelpFormatter)
                with pytest.raises(SystemExit):
                    main(argv)
            assert ours == capsys.readouterr(), (argv, columns)


def test_qrelkit_eval_loads_no_pandas_unless_a_table_of_queries_is_asked_for() -> None:
    """Means are what `qrelkit eval` prints: pandas (≈ 0.3 s of start-up) comes only with --per-query; the
    block reader of big runs stays without it too (pyarrow's pa.array and to_numpy would import it)."""
    assert loaded_after(run_main(["eval", *SEED]), ("pandas",)) == []
    assert loaded_after(run_main(["eval", *SEED, "--format", "json"]), ("pandas",)) == []
    assert loaded_after(run_main(["eval", *SEED, "--per-query"]), ("pandas",)) == ["pandas"]
    blocks = (
        f"from eval_core import evaluate\nev = evaluate({SEED[0]!r}, {SEED[1]!r}, block_bytes=4096)\n"
        "assert ev.mean['ndcg@10'] > 0"
    )
    assert loaded_after(blocks, ("pandas",)) == []
    assert loaded_after(blocks + "\nassert len(ev.per_query) > 0", ("pandas",)) == ["pandas"]


def test_qrelkit_trec_eval_loads_no_pandas() -> None:
    """pyarrow imports pandas (≈ 0.2 s) on its first pa.array of a list or ndarray; `qrelkit trec_eval` reads both
    files, ranks in blocks and prints every measure without one (buffers go through arrow_ints instead)."""
    argv = ["trec_eval", "-q", "-m", "all_trec", *SEED]
    assert loaded_after(run_main(argv), ("pandas",)) == []


def test_compare_with_the_default_test_loads_no_scipy() -> None:
    """SciPy is imported by the t-test and Wilcoxon only; the randomization test is NumPy."""
    argv = ["compare", *SEED, str(ROOT / "examples" / "seed002.run")]  # the second run scores 0: a difference
    assert loaded_after(run_main(argv), ("scipy",)) == []
    assert loaded_after(run_main([*argv, "--test", "t"]), ("scipy",)) == ["scipy"]


def test_the_command_table_names_what_each_module_registers() -> None:
    """COMMANDS (which module `qrelkit CMD` imports) in step with the modules, in `qrelkit --help` order."""
    registered = defaultdict(list)
    for module in dict.fromkeys(COMMANDS.values()):
        subparsers = argparse.ArgumentParser().add_subparsers()
        __import__(module, fromlist=["register"]).register(subparsers)
        registered[module] = list(subparsers.choices)
    expected = defaultdict(list)
    for command, module in COMMANDS.items():
        expected[module].append(command)
    assert registered == expected, "a command added or moved: list it in annotator.cli.COMMANDS"
    assert [c for names in registered.values() for c in names] == list(COMMANDS)


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_commands_help_is_the_same_from_its_module_alone(command: str, capsys: pytest.CaptureFixture) -> None:
    """`qrelkit CMD --help` (one module registered) prints what the full parser prints."""
    with pytest.raises(SystemExit):
        build_parser().parse_args([command, "--help"])
    full = capsys.readouterr().out
    with pytest.raises(SystemExit):
        main([command, "--help"])
    assert capsys.readouterr().out == full
    assert f"usage: qrelkit {command} " in full


def test_qrelkit_eval_and_trec_eval_load_no_pyarrow_compute(tmp_path) -> None:
    """`import pyarrow.compute` wraps each of Arrow's ~300 kernels with a generated docstring (≈ 40 ms, an eighth of
    a small evaluation): the readers and the ranking call the kernels through eval_core.io.arrow_compute, and
    Array.take/cast/filter/is_null (which import it on first use) are not called on the way. A tab-separated run
    with a query the qrels lack takes the tab parse and the run-only-query listing."""
    run = (ROOT / "examples" / "seed000.run").read_text().replace(" ", "\t") + "qx\tQ0\tdx\t1\t1.0\tt\n"
    (tmp_path / "tabs.run").write_text(run)
    argv = [SEED[0], str(tmp_path / "tabs.run")]
    for command in (["eval", *argv], ["eval", "--format", "json", *argv], ["trec_eval", "-q", "-c", "-m", "all_trec"]):
        full = command if command[0] == "eval" else [*command, *argv]
        assert loaded_after(run_main(full), ("pyarrow.compute",)) == [], full


def blas_threads_after(code: str, env: dict[str, str]) -> list[int]:
    """The thread counts threadpoolctl reports for the BLAS libraries a fresh interpreter loaded running `code`."""
    import os

    probe = f"{code}\nimport json, threadpoolctl\nprint(json.dumps([p['num_threads'] for p in "
    probe += "threadpoolctl.threadpool_info() if p['user_api'] == 'blas']))"
    base = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True, env=base | env
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_eval_and_trec_eval_start_numpy_with_one_blas_thread() -> None:
    """OpenBLAS starts a thread per core when NumPy is imported (≈ 50 ms of CPU); eval and trec_eval call no BLAS
    routine, so they ask for one thread, unless the environment names a count. Other commands keep the default."""
    pytest.importorskip("threadpoolctl")
    import os

    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one core: OpenBLAS starts one thread anyway")
    assert blas_threads_after(run_main(["eval", *SEED]), {}) == [1]
    assert blas_threads_after(run_main(["trec_eval", "-m", "all_trec", *SEED]), {}) == [1]
    assert blas_threads_after(run_main(["eval", *SEED]), {"OPENBLAS_NUM_THREADS": "2"}) == [2]
    assert blas_threads_after("import numpy", {}) == [len(os.sched_getaffinity(0))]


def as_the_script(argv: list[str], stdout: Any = subprocess.PIPE) -> subprocess.CompletedProcess[str]:
    """`qrelkit ARGV` as the console script runs it (sys.argv, main() with no argument, sys.exit of its status),
    with an atexit handler that says on stderr whether the interpreter's teardown ran."""
    probe = (
        "import atexit, sys\natexit.register(lambda: print('teardown ran', file=sys.stderr))\n"
        f"sys.argv = ['qrelkit', *{argv!r}]\nfrom annotator.cli import main\nsys.exit(main())"
    )
    return subprocess.run([sys.executable, "-c", probe], cwd=ROOT, stdout=stdout, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize(
    ("argv", "status"),
    [
        (["trec_eval", "-q", "-c", "-m", "all_trec", *SEED], 0),
        (["eval", *SEED, "--format", "json"], 0),
        (["eval", *SEED, "--fail-below", "ndcg@10=2"], 1),  # a failed gate: its sentence and exit 1 still
        (["trec_eval", "-m", "no_such_measure", *SEED], 1),  # trec_eval's illegal measure: exit 1
    ],
)
def test_eval_and_trec_eval_leave_without_the_interpreters_teardown(argv: list[str], status: int, tmp_path) -> None:
    """eval and trec_eval end with os._exit once stdout and stderr are flushed (the teardown of NumPy's and
    pyarrow's objects is 0.03–0.06 s of a small call): their whole output, to a pipe and to a file, and their exit
    status, are what the same command prints in process; a command that keeps a store does tear down."""
    expected_out, expected_err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(expected_out), contextlib.redirect_stderr(expected_err):
        try:
            got = main(argv)
        except SystemExit as exc:
            got = int(exc.code or 0)
    assert got == status
    piped = as_the_script(argv)
    assert (piped.returncode, piped.stdout, piped.stderr) == (status, expected_out.getvalue(), expected_err.getvalue())
    with (tmp_path / "out.txt").open("w") as fh:
        to_file = as_the_script(argv, stdout=fh)
    assert (to_file.returncode, to_file.stderr) == (status, expected_err.getvalue())
    assert (tmp_path / "out.txt").read_text() == expected_out.getvalue()


def test_other_commands_tear_down_and_a_full_disk_is_one_sentence() -> None:
    """Only EXIT_AT_ONCE commands skip the teardown; and output that the final flush cannot write (a full disk) is
    main's one sentence and exit 2, not Python's `Exception ignored` and 120."""
    assert as_the_script(["compare", *SEED, str(ROOT / "examples" / "seed002.run")]).stderr.endswith("teardown ran\n")
    with open("/dev/full", "w") as full:
        out = as_the_script(["trec_eval", "-m", "P.5", *SEED], stdout=full)
    assert (out.returncode, out.stderr) == (
        2,
        "qrelkit: error: cannot write the file: the disk is full (nothing was written)\n",
    )


def test_eval_and_trec_eval_collect_no_garbage_while_they_import() -> None:
    """An EXIT_AT_ONCE command's process collects cyclic garbage after 100,000 new objects, not 700: importing
    NumPy, pyarrow and qrelkit made ~50 collections that found nothing (≈ 14 ms). Measured from main() to the exit:
    no collection at all on the seed example; another command keeps Python's default."""
    probe = (
        "import gc, os, sys\nimport annotator.cli as cli\n"
        "before = sum(s['collections'] for s in gc.get_stats())\n"
        "def spy(status):\n"
        "    after = sum(s['collections'] for s in gc.get_stats())\n"
        "    print(gc.get_threshold()[0], after - before, file=sys.stderr)\n"
        "    os._exit(status)\n"
        "cli.exit_now = spy\nsys.argv = ['qrelkit', *sys.argv[1:]]\nsys.exit(cli.main())"
    )
    for argv in (["trec_eval", "-q", "-c", "-m", "all_trec", *SEED], ["eval", *SEED, "--format", "json"]):
        out = subprocess.run([sys.executable, "-c", probe, *argv], cwd=ROOT, capture_output=True, text=True)
        assert (out.returncode, out.stderr.split()[-2:]) == (0, ["100000", "0"]), argv
    other = "import gc, sys\nfrom annotator.cli import main\nsys.argv = ['qrelkit', *sys.argv[1:]]\nmain()\n"
    other += "print(gc.get_threshold()[0], file=sys.stderr)"
    argv = ["compare", *SEED, str(ROOT / "examples" / "seed002.run")]
    out = subprocess.run([sys.executable, "-c", other, *argv], cwd=ROOT, capture_output=True, text=True)
    assert out.stderr.split()[-1:] == ["700"]
