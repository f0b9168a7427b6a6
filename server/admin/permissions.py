"""Topic and subscription permissions, at Pulsar's paths (namespace ones are in namespaces.py):

- /admin/v2/{domain}/{t}/{ns}/{topic}/permissions (GET: namespace and topic grants merged),
  .../permissions/{role} (POST a list of actions, DELETE), kept in the namespace's
  auth_policies.destination_auth under the topic's name, as Pulsar keeps them;
- /admin/v2/namespaces/{t}/{ns}/permissions/subscription/{sub} (POST a list of roles: only they
  may consume it), GET .../permissions/subscription, DELETE .../permissions/{sub}/{role}.
"""

from __future__ import annotations

from server import web

from .errors import BAD_REQUEST, PRECONDITION_FAILED, no_content, read_json, require, rest_handler
from .namespaces import NS, Namespaces
from .auth_actions import auth_actions
from .topic_access import TOPIC_PATH, TopicAccess


def routes(namespaces: Namespaces, topics: TopicAccess) -> list[web.RouteDef]:
    @rest_handler
    async def topic_permissions(request: web.Request) -> web.Response:
        name = await topics.existing_namespace(request)
        auth = await namespaces.auth_policies(name.namespace)
        merged = {role: list(actions) for role, actions in (auth.get("namespace_auth") or {}).items()}
        for role, actions in ((auth.get("destination_auth") or {}).get(str(name)) or {}).items():
            merged[role] = sorted(set(merged.get(role, [])) | set(actions))
        return web.json_response(merged)

    async def update_topic_role(request: web.Request, actions: list[str] | None) -> web.Response:
        name = await topics.existing_namespace(request)
        auth = await namespaces.auth_policies(name.namespace)
        grants = dict((auth.get("destination_auth") or {}).get(str(name)) or {})
        role = request.match_info["role"]
        if actions is None:
            require(role in grants, PRECONDITION_FAILED, "Permissions are not set at the topic level")
            grants.pop(role)
        else:
            grants[role] = actions
        await namespaces.update_auth(name.namespace, "destination_auth", str(name), grants or None)
        return no_content()

    @rest_handler
    async def grant_topic(request: web.Request) -> web.Response:
        return await update_topic_role(request, auth_actions(await read_json(request)))

    @rest_handler
    async def revoke_topic(request: web.Request) -> web.Response:
        return await update_topic_role(request, None)

    def namespace(request: web.Request) -> str:
        return f"{request.match_info['tenant']}/{request.match_info['namespace']}"

    @rest_handler
    async def subscription_permissions(request: web.Request) -> web.Response:
        return web.json_response((await namespaces.auth_policies(namespace(request))).get("subscription_auth_roles")
                                 or {})

    @rest_handler
    async def grant_subscription(request: web.Request) -> web.Response:
        roles = await read_json(request)
        require(isinstance(roles, list) and all(isinstance(r, str) for r in roles), BAD_REQUEST,
                "Roles must be a list of strings")
        ns = namespace(request)
        current = (await namespaces.auth_policies(ns)).get("subscription_auth_roles") or {}
        merged = sorted(set(current.get(request.match_info["subscription"], [])) | set(roles))
        await namespaces.update_auth(ns, "subscription_auth_roles", request.match_info["subscription"], merged)
        return no_content()

    @rest_handler
    async def revoke_subscription(request: web.Request) -> web.Response:
        ns, sub, role = namespace(request), request.match_info["subscription"], request.match_info["role"]
        current = (await namespaces.auth_policies(ns)).get("subscription_auth_roles") or {}
        remaining = [r for r in current.get(sub, []) if r != role]
        await namespaces.update_auth(ns, "subscription_auth_roles", sub, remaining or None)
        return no_content()

    return [
        web.get(TOPIC_PATH + "/permissions", topic_permissions),
        web.post(TOPIC_PATH + "/permissions/{role}", grant_topic),
        web.delete(TOPIC_PATH + "/permissions/{role}", revoke_topic),
        web.get(NS + "/permissions/subscription", subscription_permissions),
        web.post(NS + "/permissions/subscription/{subscription}", grant_subscription),
        web.delete(NS + "/permissions/{subscription}/{role}", revoke_subscription),
    ]
