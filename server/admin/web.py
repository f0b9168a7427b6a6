"""The HTTP side of the broker: the admin REST API, HTTP lookup, Prometheus metrics and the web
console.

server.web serves it in the broker's own event loop: routing, middlewares, keep-alive and
request limits on h11.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
from collections.abc import AsyncIterator, Sequence

from server import web
from server.broker_service import BrokerService
from server.console import BrokerLoads, console_routes, is_console_file
from server.console.local_load import LocalLoad
from server.security.http_auth import authentication_middleware, authorization_middleware
from server.version import broker_version

from .resources import AdminResources, admin_routes
from .broker_metrics import StorageRates, broker_lines, process_lines
from .errors import json_errors
from .metrics import TopicMetrics
from .transaction_metrics import transaction_lines

log = logging.getLogger(__name__)

#: A listening socket (None for a port turned off) and its TLS context (None for plain HTTP).
Listener = tuple[socket.socket | None, ssl.SSLContext | None]


def build_app(broker: BrokerService, resources: AdminResources, middlewares: Sequence[web.Middleware] = (),
              routes: Sequence[web.RouteDef] = (), loads: BrokerLoads | None = None) -> web.Application:
    """The app; a cluster broker adds its middlewares (redirects to owners) and routes, which
    come first so that they replace the standalone answers of the same paths, and the brokers'
    load reports its console shows (standalone: its own). Authentication and authorization come
    before everything."""
    storage_rates = StorageRates()
    enabled = broker.config.web_console_enabled
    console = console_routes(loads or LocalLoad(broker, broker_version)) if enabled else []

    async def metrics(request: web.Request) -> web.Response:
        return web.StreamedResponse(metrics_text(), content_type="text/plain", charset="utf-8")

    async def metrics_text() -> AsyncIterator[bytes]:
        """Written piece by piece, other work running in between: 100,000 topics take seconds."""
        persistent = list(broker.topics)
        topics = TopicMetrics(broker.config)
        for _ in topics.read([*persistent, *broker.non_persistent_topics]):
            await asyncio.sleep(0)
        cluster = broker.config.cluster_name
        for piece in topics.text(broker.authentication.audit.metric_lines(cluster)):
            yield piece.encode()
            await asyncio.sleep(0)
        yield ("\n".join(broker_lines(broker, topics, persistent, storage_rates) + process_lines()
                         + transaction_lines(broker.transactions, cluster)) + "\n").encode()

    security = broker.config.security
    return web.Application(
        [*routes, web.get("/metrics", metrics), web.get("/metrics/", metrics), *admin_routes(broker, resources),
         *console],
        [authentication_middleware(broker.authentication, security.authenticate_metrics_endpoint,
                                   is_console_file if enabled else lambda path: False),
         authorization_middleware(broker.authorization), json_errors, *middlewares])


async def start_web(broker: BrokerService, resources: AdminResources, listeners: Sequence[Listener],
                    middlewares: Sequence[web.Middleware] = (), routes: Sequence[web.RouteDef] = (),
                    loads: BrokerLoads | None = None) -> web.Application:
    """Serve the admin API, lookups, /metrics and the web console on each listening socket
    (bound before storage was opened), with TLS where a context is given; stop() ends it."""
    app = build_app(broker, resources, middlewares, routes, loads)
    await app.serve((sock, context) for sock, context in listeners if sock is not None)
    return app
