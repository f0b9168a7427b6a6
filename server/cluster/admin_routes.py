"""The admin API of a cluster broker: topic-level calls go to the topic's owner (a 307, as
Pulsar's validateTopicOwnership answers), and namespace bundles can be listed and unloaded."""

from __future__ import annotations

from aiohttp import web

from server.admin.brokers import redirect_url
from server.admin.errors import rest_handler
from server.admin.namespaces import NS
from server.admin.topic_access import TopicAccess

from .cluster_lookup import ClusterLookup
from .ownership import Ownership

#: TOPIC_PATH as aiohttp names its routes (canonical: without the domain's pattern).
TOPIC_ROUTE = "/admin/v2/{domain}/{tenant}/{namespace}/{topic}"



def topic_owner_redirects(lookup: ClusterLookup):
    """Middleware: a call on one topic, served by another broker, is redirected there. Calls on
    a partitioned topic's metadata (its partitions, fan-out stats) are served anywhere."""

    @web.middleware
    async def redirect_to_owner(request: web.Request, handler):  # type: ignore[no-untyped-def]
        route = request.match_info.route.resource
        canonical = route.canonical if route is not None else ""
        if canonical.startswith(TOPIC_ROUTE) and "/partition" not in canonical[len(TOPIC_ROUTE):]:
            placement = await lookup.place(TopicAccess.name(request), request.query.get("authoritative") == "true")
            if not placement.is_me:
                raise web.HTTPTemporaryRedirect(redirect_url(placement.owner.http_url, request, placement.redirect))
        return await handler(request)
    return redirect_to_owner


def bundle_routes(ownership: Ownership) -> list[web.RouteDef]:
    @rest_handler
    async def bundles(request: web.Request) -> web.Response:
        namespace = f"{request.match_info['tenant']}/{request.match_info['namespace']}"
        found = ownership.bundles.all_of(namespace)
        bounds = [f"0x{b.lower:08x}" for b in found] + [f"0x{found[-1].upper:08x}"]
        return web.json_response({"boundaries": bounds, "numBundles": len(found)})

    @rest_handler
    async def unload(request: web.Request) -> web.Response:
        """Release the bundle here; on its owner elsewhere (307); nothing for an unowned one."""
        namespace = f"{request.match_info['tenant']}/{request.match_info['namespace']}"
        bundle = ownership.bundles.parse(namespace, request.match_info["bundle"])
        owner = await ownership.owner_of(bundle)
        if owner is not None and owner is not ownership.me:
            raise web.HTTPTemporaryRedirect(redirect_url(owner.http_url, request, authoritative=False))
        await ownership.release(bundle)
        return web.Response(status=204)

    return [web.get(NS + "/bundles", bundles), web.put(NS + "/{bundle}/unload", unload)]
