"""`qrelkit serve`/`demo`: listen on 127.0.0.1 unless told, run Streamlit with the viewer toolbar and no error
details, and pass SIGTERM/SIGINT on to the Streamlit child so stopping the command stops the server."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from annotator.cli import app as cli_app
from annotator.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_the_streamlit_command_listens_locally_with_a_viewer_toolbar_and_no_error_details():
    cmd = cli_app.streamlit_command(8600)
    assert "--server.address=127.0.0.1" in cmd and "--server.port=8600" in cmd
    assert {"--client.toolbarMode=viewer", "--client.showErrorDetails=none", "--server.headless=true"} <= set(cmd)
    # tables offer no unescaped CSV export, and no forced full GC after each run (key press latency)
    assert {"--client.disableDataExport=true", "--runner.postScriptGC=false"} <= set(cmd)
    assert "--server.address=0.0.0.0" in cli_app.streamlit_command(8600, "0.0.0.0")


@pytest.mark.parametrize("command", ["serve", "demo"])
def test_address_defaults_to_localhost_and_is_passed_on(command, tmp_path, monkeypatch):
    seen = []
    monkeypatch.setattr(cli_app, "run_child", lambda cmd, env: seen.append(cmd) or 0)
    monkeypatch.setattr(cli_app, "port_in_use", lambda address, port: False)  # whatever this machine runs on 8601
    monkeypatch.setattr(
        "annotator.demo.build_demo",
        lambda engine, show_progress=False: type("Info", (), {"project": "demo", "created": True, "users": ()})(),
    )
    db = f"sqlite:///{tmp_path / 'x.db'}"
    assert main(["init", "--db", db]) == 0  # serve opens an existing store only; demo builds its own
    assert main([command, "--db", db, "--port", "8601"]) == 0
    assert main([command, "--db", db, "--port", "8601", "--address", "10.1.2.3"]) == 0
    assert [next(a for a in cmd if a.startswith("--server.address=")) for cmd in seen] == [
        "--server.address=127.0.0.1",
        "--server.address=10.1.2.3",
    ]


@pytest.mark.parametrize("command", ["serve", "demo"])
def test_a_port_someone_listens_on_is_refused_before_anything_starts(command, tmp_path, monkeypatch, capsys):
    """Streamlit alone prints "Port 8501 is not available" after `serving … at :8501` (and demo after building and
    printing the logins): refused first instead, in one sentence that names the port and a free one to use."""
    started, built = [], []
    monkeypatch.setattr(cli_app, "run_child", lambda cmd, env: started.append(cmd) or 0)
    monkeypatch.setattr("annotator.demo.build_demo", lambda engine, show_progress=False: built.append(engine))
    db = f"sqlite:///{tmp_path / 'x.db'}"
    assert main(["init", "--db", db]) == 0
    capsys.readouterr()
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        assert cli_app.port_in_use("127.0.0.1", port)
        assert main([command, "--db", db, "--port", str(port)]) == 2
    out, err = capsys.readouterr()
    assert started == [] and built == [] and out == ""
    assert err.count("\n") == 1 and f"port {port} on 127.0.0.1 is in use" in err
    suggested = int(re.search(r"--port (\d+) \(make demo PORT=\1\)", err)[1])
    assert suggested > port and not cli_app.port_in_use("127.0.0.1", suggested)
    assert not cli_app.port_in_use("127.0.0.1", port)  # closed: free again (SO_REUSEADDR, as the server binds)


CHILD = """
import signal, sys, time
def stop(signum, frame):
    open(sys.argv[1], "w").write(signal.Signals(signum).name)
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)
open(sys.argv[1] + ".ready", "w").close()
time.sleep(60)
"""

PARENT = """
import sys
from annotator.cli.app import run_child
sys.exit(run_child([sys.executable, "-c", sys.argv[1], sys.argv[2]], {}))
"""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stop_signal_is_forwarded_to_the_child_and_waited_for(tmp_path, signum):
    marker = tmp_path / "child-stopped"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    parent = subprocess.Popen([sys.executable, "-c", PARENT, CHILD, str(marker)], cwd=ROOT, env=env)
    try:
        deadline = time.monotonic() + 30
        while not Path(f"{marker}.ready").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        parent.send_signal(signum)
        assert parent.wait(timeout=30) == 128 + signum
        assert marker.read_text() == signal.Signals(signum).name  # the child got the same signal, then ended
    finally:
        if parent.poll() is None:
            parent.kill()
