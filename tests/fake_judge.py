"""A fake OpenAI-compatible judge endpoint on 127.0.0.1 (http.server in a thread), shared by the tests and by
scripts/probe_security.py (run from the repository root, it puts the root on sys.path): each reply is what a
`behave(handler)` function writes, so a test can make the endpoint trickle, flood, echo or answer.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

OK = b'{"choices": [{"message": {"content": "Grade: 1"}}]}'  # the smallest well-formed chat completion


class QuietServer(ThreadingHTTPServer):
    """A threading server that stops with the process and keeps quiet when a client hangs up (a judge that hit
    its deadline or reply cap closes its socket: expected here, nothing to report)."""

    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        pass


def start(handler: type[BaseHTTPRequestHandler]) -> tuple[QuietServer, str]:
    """Serve `handler` on a free port in a background thread: the server and its API root (`…/v1`)."""
    server = QuietServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


class FakeJudge:
    """A local endpoint whose every reply is `behave(handler)`; it records each request's prompt (the last
    message's content)."""

    def __init__(self, behave: Callable[[BaseHTTPRequestHandler], None]) -> None:
        self.prompts: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.prompts.append(body["messages"][-1]["content"])
                with contextlib.suppress(OSError):  # the client gave up (its deadline or cap): expected here
                    behave(self)

            def log_message(self, *args) -> None:
                pass

        self.httpd, self.url = start(Handler)

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def trickle(h: BaseHTTPRequestHandler) -> None:
    """Headers at once, then the body one byte a second (a per-read timeout never fires)."""
    h.send_response(200)
    h.send_header("Content-Length", "1000")
    h.end_headers()
    for _ in range(1000):
        h.wfile.write(b" ")
        h.wfile.flush()
        time.sleep(1.0)


def flood(h: BaseHTTPRequestHandler) -> None:
    """A reply with no length that never ends: 64 KiB after 64 KiB, up to 1 GiB."""
    h.send_response(200)
    h.end_headers()
    block = b"x" * 65536
    for _ in range(16 * 1024):
        h.wfile.write(block)


def reply(h: BaseHTTPRequestHandler, status: int, body: bytes) -> None:
    """One complete reply with its length."""
    h.send_response(status)
    h.send_header("Content-Length", str(len(body)))
    h.end_headers()
    h.wfile.write(body)


def answer(h: BaseHTTPRequestHandler) -> None:
    """A well-formed chat completion: grade 1."""
    reply(h, 200, OK)
