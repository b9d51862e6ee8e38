"""scripts/probe_security.py in a virtualenv without the test extras (the one `make demo` makes): it stops at once
with one sentence naming what is missing and how to get it, instead of a traceback halfway through the probes."""

from __future__ import annotations

import importlib.util
import time

from tests.conftest import ROOT


def _probe_script():
    """scripts/probe_security.py as a module (scripts/ is not a package)."""
    spec = importlib.util.spec_from_file_location("probe_security", ROOT / "scripts" / "probe_security.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_without_playwright_the_probe_stops_first_with_a_sentence(monkeypatch, capsys) -> None:
    probe = _probe_script()
    assert probe.missing_extras() == []  # the test virtualenv has them
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "playwright" else real(name, *a))
    started = time.monotonic()
    assert probe.main(["--no-pg"]) == 2
    assert time.monotonic() - started < 1  # before any store, server or judge endpoint is made
    err = capsys.readouterr().err
    assert err == (
        "probe_security: playwright not installed: the probe needs the test extras (`make install-test`, then "
        "`.venv/bin/python scripts/probe_security.py`)\n"
    )
