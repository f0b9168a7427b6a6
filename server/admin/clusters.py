"""/admin/v2/clusters: the clusters this broker knows, kept at /admin/clusters/{name}.

A standalone broker is a one-cluster deployment: its own cluster (clusterName) is registered
at the first start with this broker's URLs, as Pulsar standalone does.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable

from aiohttp import web

from ..broker_service import BrokerService
from ..topic_name import TopicName
from .errors import (BAD_REQUEST, CONFLICT, NOT_FOUND, PRECONDITION_FAILED, RestError, no_content,
                     read_json, require, rest_handler)
from .metadata_json import create_doc, delete_doc, read_doc, write_doc

CLUSTERS_ROOT = "/admin/clusters"
#: Whether some tenant lists a cluster among its allowed clusters.
TenantsUsing = Callable[[str], Awaitable[bool]]
CLUSTER_FIELDS = ("serviceUrl", "serviceUrlTls", "brokerServiceUrl", "brokerServiceUrlTls")


def cluster_path(name: str) -> str:
    return f"{CLUSTERS_ROOT}/{name}"


class Clusters:
    def __init__(self, broker: BrokerService) -> None:
        self.broker = broker
        self.store = broker.metadata

    async def names(self) -> list[str]:
        return sorted(await self.store.children(CLUSTERS_ROOT))

    async def get(self, name: str) -> dict[str, Any]:
        data = await read_doc(self.store, cluster_path(name)) if TopicName.is_named_entity(name) else None
        require(data is not None, NOT_FOUND, "Cluster does not exist")
        return data

    async def ensure_local(self) -> None:
        """Register this broker's cluster when the store has not seen it yet."""
        config = self.broker.config
        await create_doc(self.store, cluster_path(config.cluster_name), {
            "serviceUrl": f"http://{config.advertised_address or config.bind_address}:{config.web_service_port}",
            "serviceUrlTls": "", "brokerServiceUrl": config.service_url, "brokerServiceUrlTls": "",
        })


def _cluster_data(body: Any) -> dict[str, Any]:
    require(isinstance(body, dict), BAD_REQUEST, "Cluster data must be a JSON object")
    return {key: body.get(key, "") or "" for key in CLUSTER_FIELDS}


def routes(clusters: Clusters, tenants_using: TenantsUsing) -> list[web.RouteDef]:
    @rest_handler
    async def list_clusters(request: web.Request) -> web.Response:
        return web.json_response(await clusters.names())

    @rest_handler
    async def get_cluster(request: web.Request) -> web.Response:
        return web.json_response(await clusters.get(request.match_info["cluster"]))

    @rest_handler
    async def create_cluster(request: web.Request) -> web.Response:
        name = request.match_info["cluster"]
        require(TopicName.is_named_entity(name), PRECONDITION_FAILED, "Cluster name is not valid")
        data = _cluster_data(await read_json(request, {}))
        require(await create_doc(clusters.store, cluster_path(name), data), CONFLICT, "Cluster already exists")
        return no_content()

    @rest_handler
    async def update_cluster(request: web.Request) -> web.Response:
        name = request.match_info["cluster"]
        await clusters.get(name)
        await write_doc(clusters.store, cluster_path(name), _cluster_data(await read_json(request, {})))
        return no_content()

    @rest_handler
    async def delete_cluster(request: web.Request) -> web.Response:
        name = request.match_info["cluster"]
        await clusters.get(name)
        if name == clusters.broker.config.cluster_name or await tenants_using(name):
            raise RestError(PRECONDITION_FAILED, "Cluster not empty")
        await delete_doc(clusters.store, cluster_path(name))
        return no_content()

    return [
        web.get("/admin/v2/clusters", list_clusters),
        web.get("/admin/v2/clusters/{cluster}", get_cluster),
        web.put("/admin/v2/clusters/{cluster}", create_cluster),
        web.post("/admin/v2/clusters/{cluster}", update_cluster),
        web.delete("/admin/v2/clusters/{cluster}", delete_cluster),
    ]
