"""A topic's permissions (GET, grant POST .../permissions/{role}, revoke DELETE), kept where
Pulsar keeps them: the namespace policies' auth_policies.destination_auth, by topic and role.
GET answers the namespace's grants merged with the topic's, as Pulsar. Stored, not enforced
(see the README: no authorization yet)."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from .errors import no_content, read_json, rest_handler
from .policy_fields import auth_actions
from .topic_access import TOPIC_PATH, TopicAccess


def routes(access: TopicAccess) -> list[web.RouteDef]:
    namespaces = access.namespaces

    async def auth_of(request: web.Request) -> tuple[str, str, dict[str, Any]]:
        name = await access.existing_namespace(request)
        policies = await namespaces.get(name.namespace)
        auth = policies.get("auth_policies") or {}
        return name.namespace, str(name), {"namespace_auth": {}, "destination_auth": {},
                                           "subscription_auth_roles": {}, **auth}

    async def update_role(request: web.Request, actions: list[str] | None) -> web.Response:
        namespace, topic, auth = await auth_of(request)
        by_topic = {key: dict(roles) for key, roles in (auth["destination_auth"] or {}).items()}
        roles = by_topic.setdefault(topic, {})
        if actions is None:
            roles.pop(request.match_info["role"], None)
        else:
            roles[request.match_info["role"]] = actions
        if not roles:
            del by_topic[topic]
        await namespaces.policies.update(namespace, auth_policies={**auth, "destination_auth": by_topic})
        return no_content()

    @rest_handler
    async def get_permissions(request: web.Request) -> web.Response:
        _, topic, auth = await auth_of(request)
        merged: dict[str, set[str]] = {}
        for roles in (auth["namespace_auth"] or {}, (auth["destination_auth"] or {}).get(topic, {})):
            for role, actions in roles.items():
                merged.setdefault(role, set()).update(actions)
        return web.json_response({role: sorted(actions) for role, actions in merged.items()})

    @rest_handler
    async def grant(request: web.Request) -> web.Response:
        return await update_role(request, auth_actions(await read_json(request)))

    @rest_handler
    async def revoke(request: web.Request) -> web.Response:
        return await update_role(request, None)

    return [
        web.get(TOPIC_PATH + "/permissions", get_permissions),
        web.post(TOPIC_PATH + "/permissions/{role}", grant),
        web.delete(TOPIC_PATH + "/permissions/{role}", revoke),
    ]
