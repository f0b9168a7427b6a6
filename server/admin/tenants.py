"""/admin/v2/tenants: TenantInfo {adminRoles, allowedClusters} kept at /admin/policies/{tenant}.

The tenant's document is the parent of its namespaces' Policies documents, as in Pulsar.
"""

from __future__ import annotations

from typing import Any

from server import web
from server.policies.namespace_policies import POLICIES_ROOT

from .clusters import Clusters
from .documents import DocumentCollection, collection_routes, create_doc, read_doc
from .errors import BAD_REQUEST, CONFLICT, PRECONDITION_FAILED, require

#: The tenants Pulsar standalone starts with: `public` for users, `pulsar` for system namespaces.
DEFAULT_TENANTS = ("public", "pulsar")


class Tenants(DocumentCollection):
    def __init__(self, clusters: Clusters) -> None:
        super().__init__(clusters.store, POLICIES_ROOT, "Tenant")
        self.clusters = clusters

    async def namespaces(self, tenant: str) -> list[str]:
        return sorted(await self.store.children(self.path(tenant)))

    async def using_cluster(self, cluster: str) -> bool:
        for tenant in await self.names():
            info = await read_doc(self.store, self.path(tenant)) or {}
            if cluster in info.get("allowedClusters", []):
                return True
        return False

    async def validated_info(self, body: Any) -> dict[str, Any]:
        """TenantInfo from a request body; every allowed cluster must exist (412 otherwise)."""
        require(isinstance(body, dict), BAD_REQUEST, "Tenant info must be a JSON object")
        roles, clusters = body.get("adminRoles") or [], body.get("allowedClusters") or []
        require(_strings(roles) and _strings(clusters), BAD_REQUEST,
                "adminRoles and allowedClusters must be lists of strings")
        known = set(await self.clusters.names())
        require(set(clusters) <= known, PRECONDITION_FAILED, "Clusters do not exist")
        return {"adminRoles": sorted(set(roles)), "allowedClusters": sorted(set(clusters))}

    async def ensure_defaults(self) -> None:
        for tenant in DEFAULT_TENANTS:
            await create_doc(self.store, self.path(tenant), {
                "adminRoles": [], "allowedClusters": [self.clusters.broker.config.cluster_name]})


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def routes(tenants: Tenants) -> list[web.RouteDef]:
    async def check_delete(tenant: str) -> None:
        require(not await tenants.namespaces(tenant), CONFLICT, "The tenant still has active namespaces")

    return collection_routes(tenants, "/admin/v2/tenants", tenants.validated_info, check_delete)
