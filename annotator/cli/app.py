"""`qrelkit serve` and `qrelkit demo`: run the Streamlit app (optionally on a freshly built demo project)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from db.engine import database_url
from db.schema import init_db

APP = Path(__file__).resolve().parent.parent / "app.py"
DEMO_URL = "sqlite:///./qrelkit-demo.db"


def streamlit_command(port: int) -> list[str]:
    """The `streamlit run` command line: headless, no usage statistics, no file watcher."""
    return [sys.executable, "-m", "streamlit", "run", str(APP), "--server.headless=true",
            "--browser.gatherUsageStats=false", "--server.fileWatcherType=none", f"--server.port={port}"]


def serve(url: str, port: int, project: str | None = None) -> int:
    """Run the app against `url` until interrupted; the URL reaches the app through QRELKIT_DB_URL."""
    env = dict(os.environ, QRELKIT_DB_URL=url)
    if project:
        env["QRELKIT_PROJECT"] = project
    init_db(url)
    print(f"qrelkit: serving {database_url(url)} at http://localhost:{port}", file=sys.stderr)
    try:
        return subprocess.call(streamlit_command(port), env=env)
    except KeyboardInterrupt:
        return 130


def cmd_serve(args: argparse.Namespace) -> int:
    """`qrelkit serve`: the app over the given (or configured) database."""
    return serve(database_url(args.db), args.port)


def cmd_demo(args: argparse.Namespace) -> int:
    """`qrelkit demo`: build the demo project once, print its demo logins, then serve it."""
    from annotator.demo import build_demo

    url = args.db or DEMO_URL
    info = build_demo(init_db(url), show_progress=True)
    state = "created" if info.created else "already present"
    print(f"qrelkit demo: project {info.project!r} {state} in {url}")
    print("DEMO ACCOUNTS — demo passwords, for trying qrelkit only; never reuse them for real data:")
    for username, role, password in info.users:
        print(f"  {username:<5} {role:<10} password: {password}")
    sys.stdout.flush()
    return serve(url, args.port, project=info.project)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `serve` and `demo` to the `qrelkit` parser."""
    serve_parser = subparsers.add_parser("serve", help="run the annotation app (Streamlit)")
    serve_parser.add_argument("--db", help="database URL (default: QRELKIT_DB_URL, else ./qrelkit.db)")
    serve_parser.add_argument("--port", type=int, default=8501, help="HTTP port (default 8501)")
    serve_parser.set_defaults(func=cmd_serve)
    demo_parser = subparsers.add_parser("demo", help="build the demo project (once) and run the app on it")
    demo_parser.add_argument("--db", help=f"database URL (default: {DEMO_URL})")
    demo_parser.add_argument("--port", type=int, default=8501, help="HTTP port (default 8501)")
    demo_parser.set_defaults(func=cmd_demo)
