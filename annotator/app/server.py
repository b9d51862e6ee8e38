"""Streamlit's server as `qrelkit serve` runs it: no metrics endpoint, uploads only from a logged-in session, and
headers that keep its pages out of other sites' frames (SECURITY_HEADERS).

Streamlit answers `/_stcore/metrics` to anyone and takes files at `/_stcore/upload_file/<session>/<file>` from any
browser session, logged in or not (issue 29: 4 × 190 MB from the login page, all kept in the server's memory).
`qrelkit serve` starts Streamlit through `python -m annotator.app.server run APP …`, which first replaces the
two route factories Streamlit's Starlette app is built from: no metrics routes, and an upload PUT that answers
403 unless the browser session is one the app resolved to an active login (auth.current_user records it; a
logout, expiry or revocation drops it and releases the session's uploaded files). Checked against
Streamlit 1.67's `streamlit.web.server.starlette.starlette_app`; a Streamlit without those names refuses to start
rather than run unguarded.
"""

from __future__ import annotations

import sys
import threading

LOGGED_IN: set[str] = set()  # Streamlit session ids whose last page run resolved to an active login
_LOCK = threading.Lock()
UPLOAD_REFUSED = "log in before uploading a file"


def mark_session(session_id: str | None, logged_in: bool) -> None:
    """Record whether a Streamlit session is logged in now (called by auth.current_user on every run)."""
    if not session_id:
        return
    with _LOCK:
        if logged_in:
            LOGGED_IN.add(session_id)
            return
        was = session_id in LOGGED_IN
        LOGGED_IN.discard(session_id)
    if was:
        release_uploads(session_id)


def is_logged_in(session_id: str) -> bool:
    with _LOCK:
        return session_id in LOGGED_IN


def release_uploads(session_id: str) -> None:
    """Drop every file this session uploaded (the login ended: what it uploaded is no one's any more)."""
    try:
        from streamlit.runtime import Runtime

        Runtime.instance().uploaded_file_mgr.remove_session_files(session_id)
    except Exception:  # no runtime (AppTest, CLI) or nothing uploaded
        return


def _guarded_upload_routes(original):
    """Wrap Streamlit's upload route factory: its PUT answers 403 for a session that is not logged in."""

    def factory(*args, **kwargs):
        from starlette.exceptions import HTTPException
        from starlette.routing import Route

        routes = []
        for route in original(*args, **kwargs):
            if isinstance(route, Route) and route.methods and "PUT" in route.methods:
                put = route.endpoint

                async def guarded_put(request, _put=put):
                    if not is_logged_in(request.path_params.get("session_id", "")):
                        raise HTTPException(status_code=403, detail=UPLOAD_REFUSED)
                    return await _put(request)

                route = Route(route.path, guarded_put, methods=["PUT"])
            routes.append(route)
        return routes

    return factory


def _no_metrics_routes(original):
    """Wrap Streamlit's metrics route factory: the same paths answer 404 (a path with no route at all would
    get the app's page, 200)."""

    def factory(*args, **kwargs):
        from starlette.responses import PlainTextResponse
        from starlette.routing import Route

        async def gone(request):
            return PlainTextResponse("Not Found", status_code=404)

        return [Route(route.path, gone) for route in original(*args, **kwargs) if isinstance(route, Route)]

    return factory


# On every HTTP response (those a handler set itself are kept): no page of the app inside another site's frame
# (clickjacking a key press or a lead's button), no content-type guessing, no address sent to other sites.
SECURITY_HEADERS = (
    (b"x-frame-options", b"DENY"),
    (b"content-security-policy", b"frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
)


class SecurityHeaders:
    """ASGI middleware adding SECURITY_HEADERS to every HTTP response (the websocket is left as it is)."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {name.lower() for name, _ in headers}
                headers += [(name, value) for name, value in SECURITY_HEADERS if name not in present]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)


def _with_security_headers(original):
    """Wrap Streamlit's middleware factory: SecurityHeaders outermost, so every response passes it."""

    def factory(*args, **kwargs):
        from starlette.middleware import Middleware

        return [Middleware(SecurityHeaders), *original(*args, **kwargs)]

    return factory


def install() -> None:
    """Replace the metrics and upload route factories and the middleware factory of Streamlit's Starlette app
    (before it is built)."""
    from streamlit.web.server.starlette import starlette_app

    needed = ("create_metrics_routes", "create_upload_routes", "create_streamlit_middleware")
    if not all(hasattr(starlette_app, name) for name in needed):
        raise RuntimeError("this Streamlit builds its server differently: qrelkit cannot guard uploads and metrics")
    starlette_app.create_metrics_routes = _no_metrics_routes(starlette_app.create_metrics_routes)
    starlette_app.create_upload_routes = _guarded_upload_routes(starlette_app.create_upload_routes)
    starlette_app.create_streamlit_middleware = _with_security_headers(starlette_app.create_streamlit_middleware)


def main() -> None:
    """`python -m annotator.app.server run APP [streamlit options]`: Streamlit's own CLI, guarded."""
    install()
    from streamlit.web import cli

    sys.argv = ["streamlit", *sys.argv[1:]]
    cli.main()


if __name__ == "__main__":  # run as a script: use the importable module, whose LOGGED_IN auth updates
    from annotator.app import server

    server.main()
