"""Authentication (and then authorization) of the web port's requests, as an aiohttp middleware.

As Pulsar's web service: with authenticationEnabled every request needs credentials
(Authorization: Bearer <token> or Basic, or a client certificate on the TLS port) and gets 401
without valid ones, except /metrics unless authenticateMetricsEndpoint. The role is kept in
request["role"] for the authorization checks.
"""

from __future__ import annotations

import logging

from aiohttp import web

from server.errors import AuthenticationError

from .authentication import Authentication

log = logging.getLogger(__name__)

ROLE = "role"
METRICS_PATHS = ("/metrics", "/metrics/")


def authentication_middleware(authentication: Authentication, authenticate_metrics: bool):
    @web.middleware
    async def authenticate(request: web.Request, handler):
        open_path = request.path in METRICS_PATHS and not authenticate_metrics
        if not authentication.enabled or open_path:
            return await handler(request)
        peercert = request.transport.get_extra_info("peercert") if request.transport else None
        try:
            identity = await authentication.authenticate_http(request.headers.get("Authorization"), peercert)
        except AuthenticationError as exc:
            log.info("HTTP %s %s from %s: 401 %s", request.method, request.path, request.remote, exc)
            return web.json_response({"reason": "Authentication required"}, status=401,
                                     headers={"WWW-Authenticate": 'Bearer realm="pulsar"'})
        request[ROLE] = identity.role
        return await handler(request)

    return authenticate
