"""The CLI starts without the heavy libraries: the evaluation commands import them inside their handlers.

Each check runs in a fresh interpreter (sys.modules of this test process already holds everything).
Not a timing test: it asserts which modules are loaded.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT

HEAVY = ("pandas", "scipy", "numpy", "pyarrow", "tqdm", "eval_core.compare", "eval_core.metrics")


def loaded_after(code: str) -> list[str]:
    """Which of HEAVY a fresh interpreter has imported after running `code`."""
    probe = (f"import sys, json\n{code}\n"
             f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("code", [
    "import eval_core",
    "import eval_core.errors, eval_core.metric_registry, eval_core.thresholds, eval_core.paired_tests",
    "import annotator.cli.eval, annotator.cli.compare",
])
def test_evaluation_modules_import_light(code: str) -> None:
    assert loaded_after(code) == []


def test_building_the_eval_and_compare_parsers_imports_nothing_heavy() -> None:
    code = ("import argparse, annotator.cli.eval as e, annotator.cli.compare as c\n"
            "p = argparse.ArgumentParser(); s = p.add_subparsers(); e.register(s); c.register(s)\n"
            "p.parse_args(['eval', 'q', 'r']); p.parse_args(['compare', 'q', 'a', 'b'])")
    assert loaded_after(code) == []


@pytest.mark.parametrize("argv", [["--help"], ["eval", "--help"], ["compare", "--help"], ["diagnose", "--help"]])
def test_qrelkit_help_loads_no_heavy_module(argv: list[str]) -> None:
    """The whole parser (every command group, every team's module) and `--help`: nothing heavy."""
    code = f"from annotator.cli import main\ntry:\n    main({argv!r})\nexcept SystemExit:\n    pass"
    assert loaded_after(code) == []


def test_the_lazy_package_still_hands_out_functions() -> None:
    """`eval_core.compare` / `.evaluate` stay the functions even once their submodules are imported."""
    code = ("import eval_core.compare, eval_core.evaluate\nfrom eval_core import compare, evaluate\n"
            "assert callable(compare) and callable(evaluate) and compare.__name__ == 'compare'\n"
            "assert eval_core.evaluate.__name__ == 'evaluate'")
    assert "eval_core.compare" in loaded_after(code)
