"""Authentication and authorization of the web port's requests, as middlewares of its app.

As Pulsar's web service: with authenticationEnabled every request needs credentials
(Authorization: Bearer <token> or Basic, or a client certificate on the TLS port) and gets 401
without valid ones, except /metrics unless authenticateMetricsEndpoint, and the web console's
files (its pages call the admin API with the user's token). The role is kept in
request["role"] for the authorization checks.

Authorization (authorizationEnabled) follows Pulsar's admin resources: super users may do
everything; a tenant's admin roles everything under /admin/v2/{namespaces|persistent|
non-persistent|schemas}/{tenant}/... and reading the tenant; the lookups clients make over
HTTP (topic lookup, partitions, schema) need the lookup permission, a namespace's topic list the
consume permission; the transaction reads of admin v3 are open to every authenticated role (Pulsar
3.0's TransactionsBase checks ownership only); the rest (clusters, brokers, creating tenants)
needs a super user. 403 otherwise.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from server import web
from server.errors import AuthenticationError

from server.topics.topic_name import TopicName

from .authentication import Authentication
from .authorization import CONSUME, LOOKUP, SUPER_USER_REQUIRED, TENANT_ADMIN_REQUIRED, Authorization

log = logging.getLogger(__name__)

ROLE = "role"
METRICS_PATHS = ("/metrics", "/metrics/")


def authentication_middleware(authentication: Authentication, authenticate_metrics: bool,
                              public: Callable[[str], bool] = lambda path: False):
    """`public` names the paths served to anyone (the web console's files, which hold no data)."""
    async def authenticate(request: web.Request, handler):
        open_path = (request.path in METRICS_PATHS and not authenticate_metrics) or public(request.path)
        if not authentication.enabled or open_path:
            return await handler(request)
        peercert = request.transport.get_extra_info("peercert") if request.transport else None
        try:
            identity = await authentication.authenticate_http(request.headers.get("Authorization"), peercert)
        except AuthenticationError as exc:
            log.debug("HTTP %s %s from %s: 401 %s", request.method, request.path, request.remote, exc)
            return web.json_response({"reason": "Authentication required"}, status=401,
                                     headers={"WWW-Authenticate": 'Bearer realm="pulsar"'})
        request[ROLE] = identity.role
        return await handler(request)

    return authenticate


#: GETs that clients (not administrators) make over HTTP: they need the lookup permission.
CLIENT_TOPIC_READS = ("lookup", "partitions", "schema")
#: Reads that Pulsar serves to any authenticated role.
OPEN_READS = ("/admin/v3/transactions/",)


def authorization_middleware(authorization: Authorization):
    async def authorize(request: web.Request, handler):
        if (not authorization.enabled or ROLE not in request or request.path in METRICS_PATHS
                or (request.method == "GET" and request.path.startswith(OPEN_READS))
                or authorization.is_super_user(request[ROLE])):
            return await handler(request)
        reason = await _refusal(authorization, request, request[ROLE])
        if reason is not None:
            return web.json_response({"reason": reason}, status=403)
        return await handler(request)

    return authorize


async def _refusal(authorization: Authorization, request: web.Request, role: str) -> str | None:
    """Why the role may not make this request, or None."""
    info = request.match_info
    tenant = info.get("tenant") or (info.get("name") if request.path.startswith("/admin/v2/tenants/") else None)
    operation, resource = f"admin {request.method}", request.path
    if tenant is None or (info.get("name") and request.method != "GET"):
        authorization.audit.refused(role, operation, resource)
        return SUPER_USER_REQUIRED
    if await authorization.is_tenant_admin(role, tenant):
        return None
    segments = request.path.rstrip("/").split("/")
    if request.method == "GET" and "topic" in info and (segments[1] == "lookup" or segments[-1] in CLIENT_TOPIC_READS
                                                         or "schema" in segments):
        domain = info.get("domain", "persistent")
        topic = TopicName(domain, tenant, info["namespace"], info["topic"])
        if await authorization.may(role, topic, LOOKUP):
            return None
    elif request.method == "GET" and segments[-1] == "topics" and "namespace" in info:
        if await authorization.may_in_namespace(role, f"{tenant}/{info['namespace']}", CONSUME):
            return None
    authorization.audit.refused(role, operation, resource)
    return TENANT_ADMIN_REQUIRED
