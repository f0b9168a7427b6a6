"""An HTTP application: routes and middlewares, served on listening sockets bound beforehand.

A middleware is `async def middleware(request, handler) -> Response`; the first in the list
wraps all the others, and they wrap the 404 and 405 answers too (so authentication comes
before a client learns which paths exist).
"""

from __future__ import annotations

import asyncio
import functools
import socket
import ssl
from collections.abc import Awaitable, Callable, Iterable, Sequence

from .messages import Request, Response
from .protocol import HttpConnection
from .routing import Handler, RouteDef, Router

Middleware = Callable[[Request, Handler], Awaitable[Response]]

#: Connections the kernel queues before they are accepted (as aiohttp's sites had it).
BACKLOG = 128
#: On stop, requests being answered get this many seconds to finish before they are cancelled.
SHUTDOWN_GRACE = 2.0


class Application:
    def __init__(self, routes: Iterable[RouteDef], middlewares: Sequence[Middleware] = ()) -> None:
        self._router = Router(routes)
        self._middlewares = tuple(middlewares)
        self._servers: list[asyncio.Server] = []
        self._connections: set[HttpConnection] = set()

    async def handle(self, request: Request) -> Response:
        match = self._router.resolve(request.method, request.route_path)
        request.match_info, request.route = match.info, match.route
        handler = match.handler
        for middleware in reversed(self._middlewares):
            handler = functools.partial(middleware, handler=handler)
        return await handler(request)

    async def serve(self, listeners: Iterable[tuple[socket.socket, ssl.SSLContext | None]]) -> None:
        """Serve on each listening socket, with TLS where a context is given."""
        loop = asyncio.get_running_loop()
        for sock, context in listeners:
            self._servers.append(await loop.create_server(
                lambda: HttpConnection(self.handle, self._connections), sock=sock, ssl=context, backlog=BACKLOG))

    async def stop(self) -> None:
        """Stop listening, close idle connections, give answers in the making SHUTDOWN_GRACE."""
        for server in self._servers:
            server.close()
        running = [task for connection in list(self._connections) if (task := connection.shut_down())]
        if running:
            _, late = await asyncio.wait(running, timeout=SHUTDOWN_GRACE)
            for task in late:
                task.cancel()
            if late:
                await asyncio.wait(late)
