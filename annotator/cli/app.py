"""`qrelkit serve` and `qrelkit demo`: run the Streamlit app (optionally on a freshly built demo project).

The app listens on 127.0.0.1 unless --address says otherwise (expose it through a TLS reverse proxy, see
docs/security.md); SIGTERM and SIGINT are passed on to the Streamlit child, which is waited for, so stopping
`qrelkit serve` frees the port.
"""

from __future__ import annotations

import argparse
import errno
import ipaddress
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

from annotator.cli.common import db_option, store_engine

APP = Path(__file__).resolve().parent.parent / "app" / "main.py"
DEMO_URL = "sqlite:///./qrelkit-demo.db"
DEFAULT_ADDRESS = "127.0.0.1"
STOP_SECONDS = 20  # how long the child may take to shut down after the signal before it is killed

# Streamlit settings the app always runs with: no usage statistics, no file watcher, a viewer toolbar (no
# Deploy button or developer menu), errors as one sentence in the page (details go to the server log), no
# table "Download as CSV" or copy (Streamlit's export does not escape spreadsheet formulas in user strings; the
# app's own downloads and the CLI's CSV do), and no full garbage collection after every script run (it was two
# thirds of the server's time per key press; Python's own collector still runs), and no "magic" (the app writes
# every element itself; magic rewrites each page's syntax tree before compiling it, ~150 ms of CPU a run wherever
# the compiled page is not cached, as in AppTest). The runner's settings are the tests' too (tests/conftest.py).
RUNNER_SETTINGS = {"runner.postScriptGC": False, "runner.magicEnabled": False}
STREAMLIT_OPTIONS = (
    "--server.headless=true",
    "--browser.gatherUsageStats=false",
    "--server.fileWatcherType=none",
    "--client.toolbarMode=viewer",
    "--client.showErrorDetails=none",
    "--client.disableDataExport=true",
    *(f"--{key}={str(value).lower()}" for key, value in RUNNER_SETTINGS.items()),
)


TRUSTED_PROXIES_ENV = "QRELKIT_TRUSTED_PROXIES"  # the config value behind --trusted-proxies
FORWARDED_ALLOW_IPS = "FORWARDED_ALLOW_IPS"  # uvicorn's setting (its default trusts 127.0.0.1 and ::1)


def trusted_proxies(value: str | None) -> str:
    """The proxies whose X-Forwarded-For header names the client, as uvicorn's FORWARDED_ALLOW_IPS wants them:
    comma-separated addresses or networks; '' (the default) trusts none, so forwarded headers are ignored and
    the socket's peer is the client. ValueError names a value that is neither an address nor a network."""
    items = [item.strip() for item in (value or "").split(",") if item.strip()]
    for item in items:
        try:
            ipaddress.ip_network(item, strict=False) if "/" in item else ipaddress.ip_address(item)
        except ValueError:
            raise ValueError(
                f"--trusted-proxies: {item!r} is neither an IP address nor a network (e.g. 10.0.0.5 or 10.0.0.0/24)"
            ) from None
    return ",".join(items)


def streamlit_command(port: int, address: str = DEFAULT_ADDRESS) -> list[str]:
    """The `streamlit run` command line for the app on `address:port`."""
    return [
        sys.executable,
        "-m",
        "annotator.app.server",  # Streamlit's CLI, with uploads for logged-in sessions only and no metrics
        "run",
        str(APP),
        *STREAMLIT_OPTIONS,
        f"--server.port={port}",
        f"--server.address={address}",
    ]


def _die_with_parent() -> None:
    """In the child: receive SIGTERM if `qrelkit serve` itself dies (even by SIGKILL), so no orphan keeps the port."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def run_child(command: list[str], env: dict[str, str]) -> int:
    """Run the Streamlit child until it exits; SIGTERM/SIGINT to us are forwarded to it and it is waited for
    (killed after STOP_SECONDS). Returns its exit code (128 + signal for a forwarded stop, like a shell)."""
    child = subprocess.Popen(command, env=env, preexec_fn=_die_with_parent if sys.platform == "linux" else None)
    received: list[int] = []

    def forward(signum: int, _frame) -> None:
        received.append(signum)
        if child.poll() is None:
            child.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        while True:
            try:
                code = child.wait(timeout=STOP_SECONDS if received else None)
                break
            except subprocess.TimeoutExpired:
                child.kill()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 128 + received[0] if received else code


def port_in_use(address: str, port: int) -> bool:
    """Whether something already listens on `address:port` (a bind that fails with EADDRINUSE; SO_REUSEADDR as
    the server sets it, so a port in TIME_WAIT after a stop is free). Any other bind failure is left to the
    server, which says what it is."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((address, port))
        except OSError as exc:
            return exc.errno == errno.EADDRINUSE
    return False


def check_port(address: str, port: int) -> None:
    """Refuse a port another server holds before anything is printed or started, naming a free one nearby
    (Streamlit alone says only "Port 8501 is not available", after `serving … at` was printed)."""
    if not port_in_use(address, port):
        return
    free = next((p for p in range(port + 1, min(port + 50, 65536)) if not port_in_use(address, p)), None)
    example = free if free is not None else port + 1
    raise RuntimeError(
        f"port {port} on {address} is in use (another qrelkit serve or demo?): choose another with "
        f"--port {example} (make demo PORT={example})"
    )


def serve(
    url: str, port: int, address: str = DEFAULT_ADDRESS, project: str | None = None, proxies: str | None = None
) -> int:
    """Run the app against `url` until stopped; the URL reaches the app through QRELKIT_DB_URL. Only the
    `proxies` (default: $QRELKIT_TRUSTED_PROXIES, else none) may name the client with X-Forwarded-For."""
    from db.store.engine import database_url
    from db.store.schema import init_db

    check_port(address, port)
    trusted = trusted_proxies(os.environ.get(TRUSTED_PROXIES_ENV) if proxies is None else proxies)
    env = dict(os.environ, QRELKIT_DB_URL=url)
    env[TRUSTED_PROXIES_ENV] = env[FORWARDED_ALLOW_IPS] = trusted
    if project:
        env["QRELKIT_PROJECT"] = project
    init_db(url)
    shown = f"[{address}]" if ":" in address else address
    print(f"qrelkit: serving {database_url(url)} at http://{shown}:{port}", file=sys.stderr)
    return run_child(streamlit_command(port, address), env)


def cmd_serve(args: argparse.Namespace) -> int:
    """`qrelkit serve`: the app over the given (or configured) database, which must exist at the newest schema."""
    from db.store.engine import database_url

    trusted_proxies(args.trusted_proxies)
    store_engine(args)
    return serve(database_url(args.db), args.port, args.address, proxies=args.trusted_proxies)


def cmd_demo(args: argparse.Namespace) -> int:
    """`qrelkit demo`: build the demo project once, print its demo logins, then serve it."""
    from annotator.demo import build_demo
    from db.store.schema import init_db

    check_port(args.address, args.port)  # before the build and the demo logins, not after them
    trusted_proxies(args.trusted_proxies)
    url = args.db or DEMO_URL
    info = build_demo(init_db(url), show_progress=True)
    state = "created" if info.created else "already present"
    print(f"qrelkit demo: project {info.project!r} {state} in {url}")
    print("DEMO ACCOUNTS — demo passwords, for trying qrelkit only; never reuse them for real data:")
    for username, role, password in info.users:
        print(f"  {username:<5} {role:<10} password: {password}")
    sys.stdout.flush()
    return serve(url, args.port, address=args.address, project=info.project, proxies=args.trusted_proxies)


def _listen_options(parser: argparse.ArgumentParser) -> None:
    """--port and --address, the same for serve and demo."""
    parser.add_argument("--port", type=int, default=8501, help="HTTP port (default 8501)")
    parser.add_argument(
        "--address",
        default=DEFAULT_ADDRESS,
        help=f"interface to listen on (default {DEFAULT_ADDRESS}: this machine only; to reach it "
        "from others, put a TLS reverse proxy in front, see docs/security.md)",
    )
    parser.add_argument(
        "--trusted-proxies",
        metavar="ADDRS",
        default=None,
        help=f"comma-separated addresses or networks of the reverse proxies whose X-Forwarded-For names the "
        f"client (default: ${TRUSTED_PROXIES_ENV}, else none: forwarded headers are ignored and the "
        "connection's own address is the client, for the login back-off)",
    )


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `serve` and `demo` to the `qrelkit` parser."""
    serve_parser = subparsers.add_parser("serve", help="run the annotation app (Streamlit)")
    db_option(serve_parser)
    _listen_options(serve_parser)
    serve_parser.set_defaults(func=cmd_serve)
    demo_parser = subparsers.add_parser("demo", help="build the demo project (once) and run the app on it")
    demo_parser.add_argument("--db", help=f"database URL (default: {DEMO_URL})")
    _listen_options(demo_parser)
    demo_parser.set_defaults(func=cmd_demo)
