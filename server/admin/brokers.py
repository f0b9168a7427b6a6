"""/admin/v2/brokers (readiness, version, the active brokers) and HTTP lookup; the health check
has a module of its own (health_check.py)."""

from __future__ import annotations

from urllib.parse import urlencode

from server import web
from server.broker_service import BrokerService
from server.config_rules import key_values
from server.version import broker_version

from .errors import NOT_FOUND, require, rest_handler
from .topic_access import TopicAccess

LOOKUP_PATH = "/lookup/v2/topic/{domain:persistent|non-persistent}/{tenant}/{namespace}/{topic}"
#: The header naming the client's listener when the query has no listenerName (as in Pulsar).
LISTENER_NAME_HEADER = "X-Pulsar-ListenerName"


def redirect_url(base: str, request: web.Request, authoritative: bool) -> str:
    """The same request on another broker (Pulsar's 307s), marked authoritative when this
    broker chose that one to take the bundle."""
    query = dict(request.query)
    if authoritative:
        query["authoritative"] = "true"
    return f"{base}{request.path}" + (f"?{urlencode(query)}" if query else "")


def routes(broker: BrokerService, access: TopicAccess) -> list[web.RouteDef]:
    config = broker.config

    def web_address(request: web.Request) -> str:
        return request.host or f"{config.bind_address}:{config.web_service_port}"

    async def ok(request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def broker_version_text(request: web.Request) -> web.Response:
        return web.Response(text=broker_version())

    @rest_handler
    async def active_brokers(request: web.Request) -> web.Response:
        """This cluster's brokers (GET /admin/v2/brokers names no cluster: the local one)."""
        cluster = request.match_info.get("cluster", config.cluster_name)
        require(cluster == config.cluster_name, NOT_FOUND, "Cluster does not exist")
        return web.json_response([web_address(request)])

    async def leader_broker(request: web.Request) -> web.Response:
        """A standalone broker leads itself: Pulsar's BrokerInfo (the web service URL, brokerId)."""
        return web.json_response({"serviceUrl": f"http://{web_address(request)}", "brokerId": web_address(request)})

    async def runtime_configuration(request: web.Request) -> web.Response:
        """Every configuration key with its value in force, as strings (pulsar-admin's
        `clusters list` reads clusterName here to mark the current cluster)."""
        return web.json_response({key: str(value).lower() if isinstance(value, bool) else str(value)
                                  for key, value in key_values(config)})

    @rest_handler
    async def lookup(request: web.Request) -> web.Response:
        listener = request.query.get("listenerName") or request.headers.get(LISTENER_NAME_HEADER, "")
        answer = await broker.lookup.answer(access.name(request), listener,
                                            request.query.get("authoritative") == "true")
        if answer.redirect:  # a cluster broker sends the client to the leader, or to the one it chose
            raise web.HTTPTemporaryRedirect(redirect_url(answer.http_url or "", request, answer.authoritative))
        return web.json_response({"brokerUrl": answer.broker_url or "", "brokerUrlTls": answer.broker_url_tls or "",
                                  "httpUrl": answer.http_url or f"http://{web_address(request)}", "httpUrlTls": "",
                                  "nativeUrl": answer.broker_url or ""})

    return [
        web.get("/admin/v2/brokers/ready", ok),
        web.get("/admin/v2/brokers/version", broker_version_text),
        web.get("/admin/v2/brokers/leaderBroker", leader_broker),
        web.get("/admin/v2/brokers/configuration/runtime", runtime_configuration),
        web.get("/admin/v2/brokers", active_brokers),
        web.get("/admin/v2/brokers/{cluster}", active_brokers),
        web.get(LOOKUP_PATH, lookup),
    ]
