"""Routes: a method, a path template and a handler; the router picks the one for a request.

Templates name path segments `{name}` (any text but "/") or `{name:regex}`. As aiohttp's
router did, the most specific route wins: candidates are tried by their literal prefix, the
request path's own first, then its parents', and in the order given among equals; so a
literal path such as /admin/v2/brokers/health beats an earlier /admin/v2/brokers/{cluster}.
A path that matches only with other methods answers 405 (with Allow), no match at all 404.
A GET route serves HEAD too.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

from .messages import HTTPException, HTTPMethodNotAllowed, HTTPNotFound, Request, Response

Handler = Callable[[Request], Awaitable[Response]]

_VARIABLE = re.compile(r"\{(?P<name>[_a-zA-Z][_a-zA-Z0-9]*)(?::(?P<pattern>[^{}]+))?\}")
_SEGMENT = "[^{}/]+"


@dataclass(frozen=True)
class RouteDef:
    method: str
    path: str
    handler: Handler


def route(method: str, path: str, handler: Handler) -> RouteDef:
    return RouteDef(method.upper(), path, handler)


def get(path: str, handler: Handler) -> RouteDef:
    return route("GET", path, handler)


def post(path: str, handler: Handler) -> RouteDef:
    return route("POST", path, handler)


def put(path: str, handler: Handler) -> RouteDef:
    return route("PUT", path, handler)


def delete(path: str, handler: Handler) -> RouteDef:
    return route("DELETE", path, handler)


class Route:
    """A RouteDef compiled. `canonical` is its template without the variables' regexes, the
    name middlewares recognise a route by."""

    def __init__(self, definition: RouteDef) -> None:
        self.methods = {definition.method, "HEAD"} if definition.method == "GET" else {definition.method}
        self.handler = definition.handler
        self.canonical = _VARIABLE.sub(r"{\g<name>}", definition.path)
        pattern, end = "", 0
        for variable in _VARIABLE.finditer(definition.path):
            pattern += re.escape(definition.path[end:variable.start()])
            pattern += f"(?P<{variable['name']}>{variable['pattern'] or _SEGMENT})"
            end = variable.end()
        self._pattern = re.compile(pattern + re.escape(definition.path[end:]))

    @property
    def prefix(self) -> str:
        """The literal segments before the first variable: the router's index key."""
        literal = self.canonical.partition("{")[0].rpartition("/")[0] if "{" in self.canonical else self.canonical
        return literal.rstrip("/") or "/"

    def match(self, route_path: str) -> dict[str, str] | None:
        """The variables, unescaped, if the path fits the template."""
        found = self._pattern.fullmatch(route_path)
        if found is None:
            return None
        return {name: value.replace("%2F", "/").replace("%25", "%") for name, value in found.groupdict().items()}


@dataclass(frozen=True)
class Match:
    """The route for a request (None when there is none) with its path variables, and the
    handler to call: the route's, or one raising the 404 or 405."""
    route: Route | None
    info: dict[str, str]
    handler: Handler


class Router:
    def __init__(self, definitions: Iterable[RouteDef]) -> None:
        self._by_prefix: dict[str, list[Route]] = {}
        for definition in definitions:
            compiled = Route(definition)
            self._by_prefix.setdefault(compiled.prefix, []).append(compiled)

    def resolve(self, method: str, route_path: str) -> Match:
        allowed: set[str] = set()
        part = route_path
        while part:
            for candidate in self._by_prefix.get(part, ()):
                info = candidate.match(route_path)
                if info is None:
                    continue
                if method in candidate.methods:
                    return Match(candidate, info, candidate.handler)
                allowed |= candidate.methods
            if part == "/":
                break
            part = part.rpartition("/")[0] or "/"
        return Match(None, {}, _raising(HTTPMethodNotAllowed(allowed) if allowed else HTTPNotFound()))


def _raising(exc: HTTPException) -> Handler:
    async def refuse(request: Request) -> Response:
        raise exc
    return refuse
