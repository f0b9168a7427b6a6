"""The web console's routes: its files by name and type, nothing else under /console/, and which
paths are served without authentication."""

from __future__ import annotations

import asyncio

import pytest

from server.console import console_routes, is_console_file
from server.console.routes import STATIC
from server.web.messages import Headers, HTTPException, Request
from server.web.routing import Router


class OneBroker:
    async def reports(self):
        return [{"webServiceUrl": "http://127.0.0.1:8080", "bundles": []}]


def get(path: str):
    """(status, Content-Type, body) of GET path through the console's routes alone."""
    async def read_body() -> bytes:
        return b""

    request = Request("GET", path, Headers([]), None, read_body)   # type: ignore[arg-type]
    match = Router(console_routes(OneBroker())).resolve("GET", request.route_path)
    request.match_info = match.info
    try:
        response = asyncio.run(match.handler(request))
    except HTTPException as exc:
        return exc.status, None, b""
    return response.status, response.headers.get("Content-Type"), response.body


@pytest.mark.parametrize("path", ["/", "/console", "/console/"])
def test_the_shell_is_served_at_the_root_and_under_console(path):
    status, media, body = get(path)
    assert (status, media) == (200, "text/html; charset=utf-8")
    assert body == (STATIC / "index.html").read_bytes()


def test_each_file_is_served_with_its_media_type():
    assert get("/console/app.js")[:2] == (200, "text/javascript; charset=utf-8")
    assert get("/console/console.css")[:2] == (200, "text/css; charset=utf-8")
    assert get("/console/logo.svg")[:2] == (200, "image/svg+xml; charset=utf-8")
    for module in STATIC.glob("*.js"):   # every module the pages import is served
        assert get(f"/console/{module.name}")[0] == 200


@pytest.mark.parametrize("path", ["/console/missing.js", "/console/app.py", "/console/%2E%2E%2Fconfig.py",
                                  "/console/static/app.js"])
def test_nothing_else_is_served(path):
    assert get(path)[0] == 404


def test_the_brokers_report_is_json():
    status, media, body = get("/console/api/brokers")
    assert (status, media) == (200, "application/json; charset=utf-8") and b"127.0.0.1:8080" in body


def test_only_the_files_are_open_to_anyone():
    assert all(map(is_console_file, ["/", "/console", "/console/", "/console/app.js", "/console/console.css"]))
    assert not any(map(is_console_file, ["/console/api/brokers", "/admin/v2/tenants", "/console/../admin",
                                         "/metrics", "/console/x.py"]))
