"""The console's routes: its files, and the brokers' load reports.

The files are served without authentication (they hold no data, and a browser cannot attach a
token to a page it navigates to): the page asks for a token and sends it with every admin call.
`/`, `/console` and `/console/` serve the shell; pages are chosen by the URL's #fragment.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Protocol

from server import web

STATIC = Path(__file__).parent / "static"
SHELL = "index.html"
SHELL_PATHS = ("/", "/console", "/console/")
_FILE_NAME = r"[a-z0-9_-]+\.(?:html|js|css|svg)"
_FILE = re.compile(f"/console/{_FILE_NAME}")
_MEDIA_TYPES = {"html": "text/html", "js": "text/javascript", "css": "text/css", "svg": "image/svg+xml"}
#: Fetched anew whenever they changed: an upgraded broker's console is never half old.
_HEADERS = {"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"}


class BrokerLoads(Protocol):
    async def reports(self) -> list[dict[str, Any]]:
        """Each broker's LocalBrokerData: its URLs, load and owned bundles."""


def is_console_file(path: str) -> bool:
    """The shell or one of the console's files (served to anyone: they hold no data)."""
    return path in SHELL_PATHS or _FILE.fullmatch(path) is not None


def console_routes(loads: BrokerLoads) -> list[web.RouteDef]:
    files = {path.name: path.read_bytes() for path in STATIC.iterdir() if path.is_file()}

    def answer(name: str) -> web.Response:
        if name not in files:
            raise web.HTTPNotFound()
        return web.Response(body=files[name], content_type=_MEDIA_TYPES[name.rpartition(".")[2]], charset="utf-8",
                            headers=_HEADERS)

    async def shell(request: web.Request) -> web.Response:
        return answer(SHELL)

    async def file(request: web.Request) -> web.Response:
        return answer(request.match_info["name"])

    async def brokers(request: web.Request) -> web.Response:
        return web.json_response(await loads.reports())

    return [*(web.get(path, shell) for path in SHELL_PATHS),
            web.get("/console/api/brokers", brokers),
            web.get(f"/console/{{name:{_FILE_NAME}}}", file)]
