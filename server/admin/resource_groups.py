"""/admin/v2/resourcegroups: Pulsar's resource groups (server/policies/resource_groups.py), kept
at /admin/resourcegroups/{name}, and the group a namespace is attached to
(/admin/v2/namespaces/{tenant}/{namespace}/resourcegroup).

As Pulsar answers: PUT creates a group (a quota it does not give is -1, no limit) or changes
the quotas the body gives; DELETE is refused with 412 "ResourceGroup is in use" while a
namespace names the group; a namespace can only be attached to a group that exists (412
"ResourceGroup does not exist"). Where Pulsar fails with 500 (PUT without a body, DELETE of a
group that does not exist) this answers as for any other request (a group of -1 quotas; 404),
and a body with a field a ResourceGroup does not have is refused (400) where Pulsar ignores it.
"""

from __future__ import annotations

from server import web
from server.broker_service import BrokerService
from server.policies.catalog import RESOURCE_GROUP
from server.policies.policy_values import RESOURCE_GROUP_QUOTAS, resource_group
from server.policies.resource_groups import RESOURCE_GROUPS_ROOT

from .documents import DocumentCollection
from .errors import PRECONDITION_FAILED, json_or_empty, no_content, read_json, require, rest_handler
from .namespaces import NS, Namespaces

GROUPS = "/admin/v2/resourcegroups"


def routes(broker: BrokerService, namespaces: Namespaces) -> list[web.RouteDef]:
    groups = DocumentCollection(broker.configuration, RESOURCE_GROUPS_ROOT, "ResourceGroup")

    async def in_use(name: str) -> bool:
        tenants = namespaces.tenants
        for tenant in await tenants.names():
            for local in await tenants.namespaces(tenant):
                if (await namespaces.policies.get(f"{tenant}/{local}")).get(RESOURCE_GROUP) == name:
                    return True
        return False

    @rest_handler
    async def list_groups(request: web.Request) -> web.Response:
        return web.json_response(await groups.names())

    @rest_handler
    async def get_group(request: web.Request) -> web.Response:
        return web.json_response(await groups.get(request.match_info["name"]))

    @rest_handler
    async def create_or_update(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        quotas = resource_group(await read_json(request, {}))
        if await groups.exists(name):
            await groups.replace(name, {**await groups.get(name), **quotas})
        else:
            await groups.create(name, {**{quota: -1 for quota in RESOURCE_GROUP_QUOTAS}, **quotas})
        await broker.resource_groups.load()
        return no_content()

    @rest_handler
    async def delete_group(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        await groups.get(name)
        require(not await in_use(name), PRECONDITION_FAILED, "ResourceGroup is in use")
        await groups.delete(name)
        await broker.resource_groups.load()
        return no_content()

    def namespace(request: web.Request) -> str:
        return f"{request.match_info['tenant']}/{request.match_info['namespace']}"

    @rest_handler
    async def namespace_group(request: web.Request) -> web.Response:
        """The name as it is, not as a JSON string (Pulsar writes the bare String), or no body."""
        name = (await namespaces.get(namespace(request))).get(RESOURCE_GROUP)
        return json_or_empty(None) if name is None else web.Response(text=name, content_type="application/json")

    @rest_handler
    async def attach(request: web.Request) -> web.Response:
        await namespaces.get(namespace(request))
        name = request.match_info["name"]
        require(await groups.exists(name), PRECONDITION_FAILED, "ResourceGroup does not exist")
        await namespaces.policies.update(namespace(request), **{RESOURCE_GROUP: name})
        return no_content()

    @rest_handler
    async def detach(request: web.Request) -> web.Response:
        await namespaces.get(namespace(request))
        await namespaces.policies.update(namespace(request), **{RESOURCE_GROUP: None})
        return no_content()

    return [web.get(GROUPS, list_groups), web.get(GROUPS + "/{name}", get_group),
            web.put(GROUPS + "/{name}", create_or_update), web.delete(GROUPS + "/{name}", delete_group),
            web.get(NS + "/resourcegroup", namespace_group), web.post(NS + "/resourcegroup/{name}", attach),
            web.delete(NS + "/resourcegroup", detach)]
