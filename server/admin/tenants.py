"""/admin/v2/tenants: TenantInfo {adminRoles, allowedClusters} kept at /admin/policies/{tenant}.

The tenant's document is the parent of its namespaces' Policies documents, as in Pulsar.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ..namespace_policies import POLICIES_ROOT
from ..topic_name import TopicName
from .clusters import Clusters
from .errors import (BAD_REQUEST, CONFLICT, NOT_FOUND, PRECONDITION_FAILED, no_content, read_json,
                     require, rest_handler)
from .metadata_json import create_doc, delete_doc, read_doc, write_doc

DEFAULT_TENANT = "public"


def tenant_path(tenant: str) -> str:
    return f"{POLICIES_ROOT}/{tenant}"


class Tenants:
    def __init__(self, clusters: Clusters) -> None:
        self.clusters = clusters
        self.store = clusters.store

    async def names(self) -> list[str]:
        return sorted(await self.store.children(POLICIES_ROOT))

    async def get(self, tenant: str) -> dict[str, Any]:
        info = await read_doc(self.store, tenant_path(tenant)) if TopicName.is_named_entity(tenant) else None
        require(info is not None, NOT_FOUND, "Tenant does not exist")
        return info

    async def exists(self, tenant: str) -> bool:
        return TopicName.is_named_entity(tenant) and await read_doc(self.store, tenant_path(tenant)) is not None

    async def namespaces(self, tenant: str) -> list[str]:
        return sorted(await self.store.children(tenant_path(tenant)))

    async def using_cluster(self, cluster: str) -> bool:
        for tenant in await self.names():
            info = await read_doc(self.store, tenant_path(tenant)) or {}
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

    async def ensure_default(self) -> None:
        await create_doc(self.store, tenant_path(DEFAULT_TENANT), {
            "adminRoles": [], "allowedClusters": [self.clusters.broker.config.cluster_name]})


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def routes(tenants: Tenants) -> list[web.RouteDef]:
    @rest_handler
    async def list_tenants(request: web.Request) -> web.Response:
        return web.json_response(await tenants.names())

    @rest_handler
    async def get_tenant(request: web.Request) -> web.Response:
        return web.json_response(await tenants.get(request.match_info["tenant"]))

    @rest_handler
    async def create_tenant(request: web.Request) -> web.Response:
        tenant = request.match_info["tenant"]
        require(TopicName.is_named_entity(tenant), PRECONDITION_FAILED, "Tenant name is not valid")
        info = await tenants.validated_info(await read_json(request, {}))
        require(await create_doc(tenants.store, tenant_path(tenant), info), CONFLICT, "Tenant already exists")
        return no_content()

    @rest_handler
    async def update_tenant(request: web.Request) -> web.Response:
        tenant = request.match_info["tenant"]
        await tenants.get(tenant)
        await write_doc(tenants.store, tenant_path(tenant), await tenants.validated_info(await read_json(request, {})))
        return no_content()

    @rest_handler
    async def delete_tenant(request: web.Request) -> web.Response:
        tenant = request.match_info["tenant"]
        await tenants.get(tenant)
        require(not await tenants.namespaces(tenant), CONFLICT, "The tenant still has active namespaces")
        await delete_doc(tenants.store, tenant_path(tenant))
        return no_content()

    return [
        web.get("/admin/v2/tenants", list_tenants),
        web.get("/admin/v2/tenants/{tenant}", get_tenant),
        web.put("/admin/v2/tenants/{tenant}", create_tenant),
        web.post("/admin/v2/tenants/{tenant}", update_tenant),
        web.delete("/admin/v2/tenants/{tenant}", delete_tenant),
    ]
