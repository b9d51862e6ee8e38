"""Writers: atomic files take the user's umask as it is when they are written, and importing never touches it."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from eval_core.io.writers import write_atomically

ROOT = Path(__file__).resolve().parents[2]


def test_importing_the_readers_and_writers_leaves_the_umask_alone():
    """os.umask can only be read by setting it, which races with any thread creating a file: no import calls it."""
    script = textwrap.dedent(
        """
        import os, sys
        calls = []
        real = os.umask
        os.umask(0o027)
        os.umask = lambda mask: calls.append(mask) or real(mask)
        import eval_core, eval_core.io.formats, eval_core.io.writers, eval_core.io.trec_text, eval_core.io.judgments
        import eval_core.io.collection, db.exports, db.releases
        os.umask = real
        mask = os.umask(0o027)
        print(calls, oct(mask))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.split() == ["[]", "0o27"]


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_a_written_file_follows_the_umask_set_after_import(tmp_path, monkeypatch, mask):
    """The umask in force when the file is written counts (a service may set it after importing qrelkit); the
    writer never reads it (os.umask is made to fail) — the kernel applies it when the file is created."""
    old = os.umask(mask)
    try:

        def refuse(_: int) -> int:
            raise AssertionError("os.umask called while writing")

        monkeypatch.setattr(os, "umask", refuse)
        write_atomically(tmp_path / "out.txt", iter(["a\n", "b\n"]))
        write_atomically(tmp_path / "out.txt.gz", iter(["a\n"]))
    finally:
        monkeypatch.undo()
        os.umask(old)
    assert (tmp_path / "out.txt").read_text() == "a\nb\n"
    for name in ("out.txt", "out.txt.gz"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o666 & ~mask
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt", "out.txt.gz"]  # no temporary left


def test_a_failed_write_leaves_neither_file_nor_temporary(tmp_path):
    def lines():
        yield "a\n"
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        write_atomically(tmp_path / "out.txt", lines())
    assert list(tmp_path.iterdir()) == []
