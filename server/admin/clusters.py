"""/admin/v2/clusters: the clusters this broker knows, kept at /admin/clusters/{name}.

A standalone broker is a one-cluster deployment: its own cluster (clusterName) is registered
at the first start with this broker's URLs, as Pulsar standalone does.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable

from server import web
from server.broker_service import BrokerService

from .documents import DocumentCollection, collection_routes, create_doc
from .errors import BAD_REQUEST, PRECONDITION_FAILED, RestError, require

CLUSTERS_ROOT = "/admin/clusters"
CLUSTER_FIELDS = ("serviceUrl", "serviceUrlTls", "brokerServiceUrl", "brokerServiceUrlTls")
#: Whether some tenant lists a cluster among its allowed clusters.
TenantsUsing = Callable[[str], Awaitable[bool]]


class Clusters(DocumentCollection):
    def __init__(self, broker: BrokerService) -> None:
        super().__init__(broker.configuration, CLUSTERS_ROOT, "Cluster")
        self.broker = broker

    async def ensure_local(self) -> None:
        """Register this broker's cluster when the store has not seen it yet (with the internal
        listener's URLs, as Pulsar standalone)."""
        config, internal = self.broker.config, self.broker.listeners.internal
        await create_doc(self.store, self.path(config.cluster_name), {
            "serviceUrl": f"http://{config.advertised_address or config.bind_address}:{config.web_service_port}",
            "serviceUrlTls": "", "brokerServiceUrl": internal.broker_url or "",
            "brokerServiceUrlTls": internal.broker_url_tls or "",
        })


async def _cluster_data(body: Any) -> dict[str, Any]:
    require(isinstance(body, dict), BAD_REQUEST, "Cluster data must be a JSON object")
    return {key: body.get(key, "") or "" for key in CLUSTER_FIELDS}


def routes(clusters: Clusters, tenants_using: TenantsUsing) -> list[web.RouteDef]:
    async def check_delete(name: str) -> None:
        if name == clusters.broker.config.cluster_name or await tenants_using(name):
            raise RestError(PRECONDITION_FAILED, "Cluster not empty")

    return collection_routes(clusters, "/admin/v2/clusters", _cluster_data, check_delete)
