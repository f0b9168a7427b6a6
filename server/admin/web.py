"""The HTTP side of the broker: the admin REST API, HTTP lookup and Prometheus metrics.

aiohttp serves it in the broker's own event loop: a well-kept async HTTP server with routing,
keep-alive and request limits that would otherwise be hand-written here.
"""

from __future__ import annotations

import logging
import socket
import ssl

from aiohttp import web

from server.broker_service import BrokerService
from server.security.http_auth import authentication_middleware, authorization_middleware

from . import AdminResources, admin_routes
from .errors import json_errors
from .http_log import quiet_client_errors
from .metrics import render

log = logging.getLogger(__name__)


def build_app(broker: BrokerService, resources: AdminResources) -> web.Application:
    async def metrics(request: web.Request) -> web.Response:
        body = render(broker.config, [*broker.topics, *broker.non_persistent_topics],
                      broker.authentication.audit.metric_lines(broker.config.cluster_name))
        return web.Response(text=body, content_type="text/plain", charset="utf-8")

    security = broker.config.security
    app = web.Application(middlewares=[
        authentication_middleware(broker.authentication, security.authenticate_metrics_endpoint),
        authorization_middleware(broker.authorization), json_errors])
    app.add_routes([web.get("/metrics", metrics), web.get("/metrics/", metrics), *admin_routes(broker, resources)])
    return app


async def start_web(broker: BrokerService, resources: AdminResources,
                    sockets: list[tuple[socket.socket | None, ssl.SSLContext | None]]) -> web.AppRunner:
    """Serve the admin API, lookups and /metrics on each socket (bound before storage was
    opened; None for a port turned off), with TLS where a context is given."""
    quiet_client_errors()
    runner = web.AppRunner(build_app(broker, resources), access_log=None)
    await runner.setup()
    for sock, context in sockets:
        if sock is not None:
            await web.SockSite(runner, sock, ssl_context=context).start()
    return runner
