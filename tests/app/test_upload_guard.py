"""annotator.app.server: Streamlit's upload PUT answers 403 unless the browser session is logged in (the app
records it on every page run), and a session whose login ended has its uploaded files released."""

from __future__ import annotations

import pytest

from annotator.app import server


def test_the_upload_put_is_refused_until_the_session_is_logged_in(monkeypatch) -> None:
    import asyncio

    from starlette.exceptions import HTTPException
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    async def put(request):
        return Response("stored", status_code=204)

    async def delete(request):
        return Response(status_code=204)

    def original():
        path = "/u/{session_id}/{file_id}"
        return [Route(path, put, methods=["PUT"]), Route(path, delete, methods=["DELETE"])]

    routes = server._guarded_upload_routes(original)()
    guarded = next(r for r in routes if "PUT" in r.methods).endpoint
    assert next(r for r in routes if "DELETE" in r.methods).endpoint is delete

    def status(session_id: str) -> int:
        request = Request({"type": "http", "method": "PUT", "headers": [], "path_params": {"session_id": session_id}})
        try:
            return asyncio.run(guarded(request)).status_code
        except HTTPException as refused:
            return refused.status_code

    released: list[str] = []
    monkeypatch.setattr(server, "release_uploads", released.append)
    assert status("s1") == 403
    server.mark_session("s1", True)
    try:
        assert status("s1") == 204
        assert status("s2") == 403  # another session is not this login
    finally:
        server.mark_session("s1", False)
    assert released == ["s1"]  # the login ended: its files go
    assert status("s1") == 403


def test_install_removes_the_metrics_routes() -> None:
    from streamlit.web.server.starlette import starlette_app

    before = (starlette_app.create_metrics_routes, starlette_app.create_upload_routes)
    try:
        server.install()

        class Runtime:
            stats_mgr = None

        routes = starlette_app.create_metrics_routes(Runtime(), None)
        assert [r.path for r in routes] == [r.path for r in before[0](Runtime(), None)] != []
        assert all(r.endpoint.__name__ == "gone" for r in routes)
    finally:
        starlette_app.create_metrics_routes, starlette_app.create_upload_routes = before


@pytest.mark.parametrize("sid", [None, ""])
def test_no_session_id_records_nothing(sid) -> None:
    before = set(server.LOGGED_IN)
    server.mark_session(sid, True)
    assert before == server.LOGGED_IN
