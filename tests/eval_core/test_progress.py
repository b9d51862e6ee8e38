"""Progress bars: drawn on stderr only when it is a terminal and progress was asked for; never in a pipe or a CI
log, never on stdout; and every bar in the product goes through eval_core.progress."""

from __future__ import annotations

import ast
import fcntl
import io
import os
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from eval_core import progress

ROOT = Path(__file__).resolve().parents[2]


def _run_bar(show: bool = True) -> None:
    for _ in progress.bar(range(5), show=show, desc="counting", mininterval=0):
        pass


def test_no_bar_when_stderr_is_not_a_terminal(monkeypatch, capsys) -> None:
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # a pipe, a file, a CI log
    assert not progress.on_terminal()
    bar = progress.bar(total=3, desc="x")
    assert bar.disable
    bar.update(2)  # a quiet bar still counts, so callers need no second path
    bar.update()
    assert (bar.n, bar.total) == (3, 3)
    bar.set_postfix_str("run")
    bar.set_postfix({"failed": 0}, refresh=False)
    bar.close()
    with progress.bar(["a", "b"], desc="y", leave=False) as items:
        assert list(items) == ["a", "b"] and len(items) == 2
    assert sys.stderr.getvalue() == ""
    assert capsys.readouterr().out == ""


def test_a_bar_that_is_not_drawn_imports_no_tqdm() -> None:
    """tqdm (and the multiprocessing it imports) costs ≈ 40 ms of a command's start-up: a bar on a pipe, or one
    not asked for on a terminal, is a QuietBar, and tqdm is imported only for a bar that is drawn."""
    probe = (
        "import sys\nfrom eval_core import progress\n"
        "for _ in progress.bar(range(3), desc='x'): pass\n"
        "progress.on_terminal = lambda: True\n"
        "progress.bar(total=3, show=False).update(3)\n"
        "print('tqdm' in sys.modules, 'multiprocessing' in sys.modules)\n"
        "progress.bar(total=3).close()\n"
        "print('tqdm' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["False", "False", "True"]


def _drain(fd: int) -> str:
    out = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return out.decode()
        if not chunk:
            return out.decode()
        out += chunk


def test_bar_on_a_terminal_goes_to_stderr_not_stdout(monkeypatch, capsys) -> None:
    leader, follower = os.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a terminal 100 columns wide
    os.set_blocking(leader, False)
    with open(follower, "w", closefd=True) as tty:
        monkeypatch.setattr(sys, "stderr", tty)
        assert progress.on_terminal()
        _run_bar()
        tty.flush()
        drawn = _drain(leader)
        _run_bar(show=False)  # asked for no progress: nothing even on a terminal
        tty.flush()
        quiet = _drain(leader)
    os.close(leader)
    assert "counting: 100%" in drawn and "5/5" in drawn
    assert quiet == ""
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("folder", ["annotator", "db", "eval_core", "scripts", "benchmarks"])
def test_every_bar_goes_through_eval_core_progress(folder: str) -> None:
    offenders = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        if path == ROOT / "eval_core" / "progress.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [a.name for a in node.names] + ([node.module] if isinstance(node, ast.ImportFrom) else [])
                if any(n and n.split(".")[0] == "tqdm" for n in names):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == [], "use eval_core.progress.bar (terminal only, stderr) instead of tqdm directly"
