"""/admin/v2/namespaces: namespaces of a tenant and their Policies (Pulsar's JSON field names)."""

from __future__ import annotations

from typing import Any

from server import web
from server.broker_service import MODE_ALL, MODE_NON_PERSISTENT, MODE_PERSISTENT, BrokerService
from server.policies.namespace_policies import NamespacePolicies, policies_path
from server.policies.catalog import NAMESPACE_SPECS, PolicySpec, check_fields
from server.policies.policy_values import BACKLOG_QUOTA_TYPES, backlog_quota, named
from server.topics.topic_name import TopicName

from .documents import create_doc, read_doc
from .errors import (BAD_REQUEST, CONFLICT, NOT_FOUND, PRECONDITION_FAILED, json_or_no_content, no_content,
                     query_flag, read_json, require, rest_handler)
from .auth_actions import auth_actions
from .tenants import Tenants

#: The namespaces Pulsar standalone starts with: topics are created only in existing namespaces,
#: short names mean public/default, and clients probe pulsar/system for a transaction coordinator.
DEFAULT_NAMESPACES = ("public/default", "pulsar/system")
NS = "/admin/v2/namespaces/{tenant}/{namespace}"
_TOPIC_MODES = {"PERSISTENT": MODE_PERSISTENT, "NON_PERSISTENT": MODE_NON_PERSISTENT, "ALL": MODE_ALL}


def _empty_auth() -> dict[str, Any]:
    return {"namespace_auth": {}, "destination_auth": {}, "subscription_auth_roles": {}}


class Namespaces:
    def __init__(self, broker: BrokerService, tenants: Tenants) -> None:
        self.broker = broker
        self.tenants = tenants
        self.store = broker.configuration
        self.policies: NamespacePolicies = broker.policies

    def initial_policies(self, body: Any) -> dict[str, Any]:
        """What a new namespace starts with: the request's Policies over Pulsar's defaults. The
        fields this broker applies are checked; the others of Pulsar's Policies (a Java client
        sends them all) are kept as given."""
        require(body is None or isinstance(body, dict), BAD_REQUEST, "Policies must be a JSON object")
        policies: dict[str, Any] = {
            "auth_policies": _empty_auth(), "backlog_quota_map": {},
            "replication_clusters": [self.broker.config.cluster_name],
        }
        policies.update(check_fields(body or {}, known_only=False))
        return policies

    async def create(self, namespace: str, body: Any) -> bool:
        return await create_doc(self.store, policies_path(namespace), self.initial_policies(body))

    async def auth_policies(self, namespace: str) -> dict[str, Any]:
        return (await self.get(namespace)).get("auth_policies") or _empty_auth()

    async def update_auth(self, namespace: str, field: str, key: str, value: Any) -> None:
        """Set (None: remove) one entry of a map of the namespace's auth_policies
        (namespace_auth, destination_auth, subscription_auth_roles)."""
        auth = await self.auth_policies(namespace)
        entries = dict(auth.get(field) or {})
        if value is None:
            entries.pop(key, None)
        else:
            entries[key] = value
        await self.policies.update(namespace, auth_policies={**auth, field: entries})

    async def get(self, namespace: str) -> dict[str, Any]:
        """The namespace's Policies; 404 when the tenant or the namespace does not exist."""
        tenant, _, local = namespace.partition("/")
        require(await self.tenants.exists(tenant), NOT_FOUND, "Tenant does not exist")
        policies = await read_doc(self.store, policies_path(namespace)) if TopicName.is_named_entity(local) else None
        require(policies is not None, NOT_FOUND, "Namespace does not exist")
        return policies

    async def topics(self, namespace: str, include_system: bool = False) -> list[str]:
        return await self.broker.topics_of_namespace(namespace, MODE_ALL, include_system)

    async def ensure_defaults(self) -> None:
        for namespace in DEFAULT_NAMESPACES:
            await self.create(namespace, None)


def _name(request: web.Request) -> str:
    return f"{request.match_info['tenant']}/{request.match_info['namespace']}"


def routes(namespaces: Namespaces) -> list[web.RouteDef]:
    return _lifecycle_routes(namespaces) + _scalar_routes(namespaces) + _map_routes(namespaces)


def _lifecycle_routes(namespaces: Namespaces) -> list[web.RouteDef]:
    @rest_handler
    async def list_namespaces(request: web.Request) -> web.Response:
        tenant = request.match_info["tenant"]
        await namespaces.tenants.get(tenant)
        return web.json_response([f"{tenant}/{ns}" for ns in await namespaces.tenants.namespaces(tenant)])

    @rest_handler
    async def get_policies(request: web.Request) -> web.Response:
        return web.json_response(await namespaces.get(_name(request)))

    @rest_handler
    async def create_namespace(request: web.Request) -> web.Response:
        tenant, local = request.match_info["tenant"], request.match_info["namespace"]
        require(TopicName.is_named_entity(local), PRECONDITION_FAILED, "Namespace name is not valid")
        await namespaces.tenants.get(tenant)
        created = await namespaces.create(_name(request), await read_json(request))
        require(created, CONFLICT, "Namespace already exists")
        return no_content()

    @rest_handler
    async def delete_namespace(request: web.Request) -> web.Response:
        namespace = _name(request)
        await namespaces.get(namespace)
        topics = await namespaces.topics(namespace)
        require(not topics or query_flag(request, "force"), CONFLICT, "Cannot delete non empty namespace")
        for topic in await namespaces.topics(namespace, include_system=True):
            await namespaces.broker.delete_topic(TopicName.parse(topic), force=True)
        await namespaces.broker.delete_partitioned_in(namespace)
        await namespaces.policies.delete(namespace)
        namespaces.broker.topic_policies.forget(namespace)
        return no_content()

    @rest_handler
    async def list_topics(request: web.Request) -> web.Response:
        namespace = _name(request)
        await namespaces.get(namespace)
        mode = _TOPIC_MODES.get(request.query.get("mode", "PERSISTENT").upper())
        require(mode is not None, BAD_REQUEST, "mode must be PERSISTENT, NON_PERSISTENT or ALL")
        return web.json_response(await namespaces.broker.topics_of_namespace(
            namespace, mode, query_flag(request, "includeSystemTopic")))

    @rest_handler
    async def unload_all(request: web.Request) -> web.Response:
        namespace = _name(request)
        await namespaces.get(namespace)
        for topic in await namespaces.topics(namespace):
            await namespaces.broker.unload_topic(TopicName.parse(topic))
        return no_content()

    @rest_handler
    async def clear_backlog(request: web.Request) -> web.Response:
        """Every subscription of every loaded persistent topic skips to the end (Pulsar clears
        the namespace's bundles, which are its loaded topics)."""
        namespace = _name(request)
        await namespaces.get(namespace)
        for topic in namespaces.broker.topics:
            if topic.name.namespace == namespace:
                for subscription in topic.subscriptions.values():
                    subscription.clear_backlog()
        return no_content()

    return [
        web.get("/admin/v2/namespaces/{tenant}", list_namespaces),
        web.put(NS + "/unload", unload_all),
        web.post(NS + "/clearBacklog", clear_backlog),
        web.get(NS, get_policies),
        web.put(NS, create_namespace),
        web.delete(NS, delete_namespace),
        web.get(NS + "/topics", list_topics),
    ]


def _scalar_routes(namespaces: Namespaces) -> list[web.RouteDef]:
    cluster = namespaces.broker.config.cluster_name

    def handlers(spec: PolicySpec) -> list[web.RouteDef]:
        @rest_handler
        async def get(request: web.Request) -> web.Response:
            value = spec.namespace_value(await namespaces.get(_name(request)), cluster)
            return json_or_no_content(spec.namespace_default if value is None else value)

        async def store(request: web.Request, value: Any) -> web.Response:
            namespace = _name(request)
            policies = await namespaces.get(namespace)
            await namespaces.policies.update(namespace, **spec.namespace_fields(policies, cluster, value))
            return no_content()

        @rest_handler
        async def set_(request: web.Request) -> web.Response:
            body = await read_json(request)
            if body is None and spec.empty_body_clears:
                return await store(request, None)
            require(body is not None, BAD_REQUEST, f"{spec.namespace_path} needs a JSON body")
            return await store(request, named(spec.namespace_path, spec.check, body))

        @rest_handler
        async def remove(request: web.Request) -> web.Response:
            return await store(request, None)

        path = f"{NS}/{spec.namespace_path}"
        return [web.get(path, get), web.route(spec.namespace_set_method, path, set_), web.delete(path, remove)]

    return [route for spec in NAMESPACE_SPECS for route in handlers(spec)]


def _map_routes(namespaces: Namespaces) -> list[web.RouteDef]:
    """Policies kept as maps: backlog quotas by type, permissions by role."""

    def quota_type(request: web.Request) -> str:
        kind = request.query.get("backlogQuotaType", "destination_storage")
        require(kind in BACKLOG_QUOTA_TYPES, BAD_REQUEST, f"Unknown backlogQuotaType {kind!r}")
        return kind

    async def update_map(request: web.Request, field: str, key: str, value: Any) -> web.Response:
        namespace = _name(request)
        policies = await namespaces.get(namespace)
        entries = dict(policies.get(field) or {})
        if value is None:
            entries.pop(key, None)
        else:
            entries[key] = value
        await namespaces.policies.update(namespace, **{field: entries})
        return no_content()

    @rest_handler
    async def get_quotas(request: web.Request) -> web.Response:
        return web.json_response((await namespaces.get(_name(request))).get("backlog_quota_map") or {})

    @rest_handler
    async def set_quota(request: web.Request) -> web.Response:
        quota = backlog_quota(await read_json(request))
        return await update_map(request, "backlog_quota_map", quota_type(request), quota)

    @rest_handler
    async def remove_quota(request: web.Request) -> web.Response:
        return await update_map(request, "backlog_quota_map", quota_type(request), None)

    async def update_role(request: web.Request, actions: list[str] | None) -> web.Response:
        await namespaces.update_auth(_name(request), "namespace_auth", request.match_info["role"], actions)
        return no_content()

    @rest_handler
    async def get_permissions(request: web.Request) -> web.Response:
        return web.json_response((await namespaces.auth_policies(_name(request))).get("namespace_auth") or {})

    @rest_handler
    async def grant(request: web.Request) -> web.Response:
        return await update_role(request, auth_actions(await read_json(request)))

    @rest_handler
    async def revoke(request: web.Request) -> web.Response:
        return await update_role(request, None)

    return [
        web.get(NS + "/backlogQuotaMap", get_quotas),
        web.post(NS + "/backlogQuota", set_quota),
        web.delete(NS + "/backlogQuota", remove_quota),
        web.get(NS + "/permissions", get_permissions),
        web.post(NS + "/permissions/{role}", grant),
        web.delete(NS + "/permissions/{role}", revoke),
    ]

