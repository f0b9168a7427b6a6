"""What handlers and middlewares see of HTTP: the request, the response, and the exceptions
that answer with a status (404, 405, 413, redirects).

A request's body is read only when its handler asks (Request.read): a request refused early
(401, 404, 413 on a declared length) never waits for its upload.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

if TYPE_CHECKING:
    from .routing import Route

DEFAULT_CONTENT_TYPE = "application/octet-stream"


class Headers(Mapping[str, str]):
    """Request headers by case-insensitive name; a repeated header gives its first value."""

    def __init__(self, pairs: Iterable[tuple[str, str]]) -> None:
        self._values: dict[str, str] = {}
        for name, value in pairs:
            self._values.setdefault(name.lower(), value)

    def __getitem__(self, name: str) -> str:
        return self._values[name.lower()]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)


class Request:
    """One request: method, paths, query, headers and the connection's transport (peer address,
    TLS client certificate). Middlewares keep per-request values in it by key (request["role"])."""

    def __init__(self, method: str, target: str, headers: Headers, transport: asyncio.Transport,
                 read_body: Callable[[], Awaitable[bytes]]) -> None:
        raw_path, _, query = target.partition("?")
        self.method = method
        self.path = decode_path(raw_path)
        #: The path routes match: an escaped "/" (or "%") stays escaped, inside its segment.
        self.route_path = decode_path(raw_path, keep_separators=True)
        #: Each query parameter's first value ("+" and %-escapes decoded, blank values kept).
        self.query: dict[str, str] = {}
        for name, value in parse_qsl(query, keep_blank_values=True):
            self.query.setdefault(name, value)
        self.headers = headers
        self.transport = transport
        #: The path's variables and the route matched (None when none did), set by the router.
        self.match_info: dict[str, str] = {}
        self.route: Route | None = None
        self._read_body = read_body
        self._body: bytes | None = None
        self._state: dict[str, Any] = {}

    @property
    def host(self) -> str | None:
        return self.headers.get("Host")

    @property
    def remote(self) -> str | None:
        peer = self.transport.get_extra_info("peername")
        return str(peer[0]) if peer else None

    @property
    def content_type(self) -> str:
        """The media type without its parameters, lower case; octet-stream when none is given."""
        raw = self.headers.get("Content-Type", "")
        return raw.partition(";")[0].strip().lower() or DEFAULT_CONTENT_TYPE

    async def read(self) -> bytes:
        """The whole body (413 past the server's limit), read once."""
        if self._body is None:
            self._body = await self._read_body()
        return self._body

    async def text(self) -> str:
        charset = re.search(r";\s*charset=\"?([\w.:-]+)", self.headers.get("Content-Type", ""), re.IGNORECASE)
        return (await self.read()).decode(charset.group(1) if charset else "utf-8")

    async def json(self) -> Any:
        return json.loads(await self.text())

    def __getitem__(self, key: str) -> Any:
        return self._state[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._state[key] = value

    def __contains__(self, key: str) -> bool:
        return key in self._state


class Response:
    """A whole answer. `text` is encoded with `charset` (utf-8) and typed text/plain unless
    `content_type` says otherwise; `body` is sent as given; neither means no body."""

    def __init__(self, *, status: int = 200, text: str | None = None, body: bytes | None = None,
                 content_type: str | None = None, charset: str | None = None,
                 headers: Mapping[str, str] | None = None) -> None:
        self.status = status
        self.headers: dict[str, str] = dict(headers or {})
        if text is not None:
            charset = charset or "utf-8"
            body = text.encode(charset)
            content_type = content_type or "text/plain"
        self.body = body or b""
        if content_type or body is not None:
            media = content_type or DEFAULT_CONTENT_TYPE
            self.headers.setdefault("Content-Type", f"{media}; charset={charset}" if charset else media)


class StreamedResponse(Response):
    """An answer written as `chunks` yields them (chunked, or up to the close for HTTP/1.0),
    each once the client has taken the one before: for a large answer made piece by piece,
    which neither waits whole in memory nor holds the event loop while it is made."""

    def __init__(self, chunks: AsyncIterator[bytes], *, status: int = 200, content_type: str | None = None,
                 charset: str | None = None, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(status=status, body=b"", content_type=content_type, charset=charset, headers=headers)
        self.chunks = chunks


def json_response(data: Any, *, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    return Response(status=status, text=json.dumps(data), content_type="application/json", headers=headers)


class HTTPException(Exception):
    """Raised to answer with `status`; unless a middleware reshapes it, the answer is the
    plain text "<status>: <reason>" with `headers`."""

    status = 500
    reason = "Internal Server Error"

    def __init__(self, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(self.reason)
        self.headers: dict[str, str] = dict(headers or {})

    def response(self) -> Response:
        return Response(status=self.status, text=f"{self.status}: {self.reason}", headers=self.headers)


class HTTPBadRequest(HTTPException):
    status, reason = 400, "Bad Request"


class HTTPNotFound(HTTPException):
    status, reason = 404, "Not Found"


class HTTPMethodNotAllowed(HTTPException):
    status, reason = 405, "Method Not Allowed"

    def __init__(self, allowed: Iterable[str]) -> None:
        super().__init__({"Allow": ",".join(sorted(allowed))})


class HTTPRequestEntityTooLarge(HTTPException):
    status, reason = 413, "Request Entity Too Large"


class HTTPTemporaryRedirect(HTTPException):
    """307: the same request, to `location` (cluster mode sends calls to a topic's owner)."""

    status, reason = 307, "Temporary Redirect"

    def __init__(self, location: str) -> None:
        super().__init__({"Location": location})


_ESCAPES = re.compile(r"(?:%[0-9A-Fa-f]{2})+")


def decode_path(raw: str, keep_separators: bool = False) -> str:
    """%-escapes decoded as UTF-8; bytes that are not valid UTF-8 stay escaped (so a handler can
    tell them from text). With `keep_separators`, escaped "/" and "%" stay escaped too."""

    def decode(run: re.Match[str]) -> str:
        text = bytes.fromhex(run.group().replace("%", "")).decode("utf-8", "surrogateescape")
        if keep_separators:
            text = text.replace("%", "%25").replace("/", "%2F")
        return re.sub("[\udc80-\udcff]", lambda byte: f"%{ord(byte.group()) - 0xdc00:02X}", text)

    return _ESCAPES.sub(decode, raw) if "%" in raw else raw
