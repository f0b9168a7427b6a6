"""The admin API of a cluster broker: topic-level calls go to the topic's owner (a 307, as
Pulsar's validateTopicOwnership answers); namespace bundles can be listed and unloaded; the
active brokers are the registered ones. These routes come before the standalone ones, whose
answers of the same paths (one broker, no bundles) they replace."""

from __future__ import annotations

from typing import Any, Protocol
from urllib.parse import quote

from aiohttp import ClientSession   # as a client only: the web port is server.web's

from server import web
from server.admin.brokers import redirect_url
from server.admin.errors import NOT_FOUND, RestError, query_flag, require, rest_handler
from server.admin.namespaces import NS
from server.admin.topic_access import TopicAccess
from server.admin.topic_stats import partitioned_stats
from server.errors import NamespaceNotFound
from server.topics.topic_name import TopicName

from .broker_registry import BrokerAddress, BrokerRegistry
from .cluster_lookup import ClusterLookup
from .ownership import Ownership


class PartitionCounts(Protocol):
    async def partitioned_count(self, name: TopicName) -> int: ...


#: TOPIC_PATH as the router names its routes (canonical: without the domain's pattern).
TOPIC_ROUTE = "/admin/v2/{domain}/{tenant}/{namespace}/{topic}"


def _canonical(request: web.Request) -> str:
    return request.route.canonical if request.route is not None else ""


def topic_owner_redirects(lookup: ClusterLookup):
    """Middleware: a call on one topic, served by another broker, is redirected there. Calls on
    a partitioned topic's metadata (its partitions, fan-out stats) are served anywhere."""

    async def redirect_to_owner(request: web.Request, handler):  # type: ignore[no-untyped-def]
        canonical = _canonical(request)
        if canonical.startswith(TOPIC_ROUTE) and "/partition" not in canonical[len(TOPIC_ROUTE):]:
            try:
                name = TopicAccess.name(request)
                await lookup.check_namespace(name)
            except (RestError, NamespaceNotFound):
                return await handler(request)   # which answers the bad name or namespace
            placement = await lookup.place(name, request.query.get("authoritative") == "true")
            if not placement.is_me:
                raise web.HTTPTemporaryRedirect(redirect_url(placement.owner.http_url, request,
                                                                 placement.authoritative))
        return await handler(request)
    return redirect_to_owner


def partition_deletes(broker: PartitionCounts, me: BrokerAddress):
    """Middleware: deleting a partitioned topic first deletes each partition at its owner (a
    partition's ledgers must not be deleted under the broker writing them), as Pulsar's admin
    fans the deletion out; the metadata is then deleted here."""

    async def delete_at_owners(request: web.Request, handler):  # type: ignore[no-untyped-def]
        if request.method == "DELETE" and _canonical(request) == TOPIC_ROUTE + "/partitions":
            name = TopicAccess.name(request)
            async with ClientSession() as session:
                for index in range(await broker.partitioned_count(name)):
                    partition = name.partition(index)
                    url = (f"{me.http_url}/admin/v2/{partition.domain}/{partition.namespace}/"
                           f"{quote(partition.local_name, safe='')}")
                    async with session.delete(url, params=request.query) as response:
                        if response.status >= 400 and response.status != 404:
                            raise RestError(response.status, await response.text())
        return await handler(request)
    return delete_at_owners


#: Calls over every partition -> (method, path of the same call on one partition).
_FANNED_OUT = {"/partitioned-stats": ("GET", "/stats"), "/terminate/partitions": ("POST", "/terminate")}


def partition_fan_out(broker: PartitionCounts, me: BrokerAddress):
    """Middleware: a call over every partition of a partitioned topic (stats, terminate) asks
    each partition's own endpoint, which redirects to the partition's owner, and assembles the
    answers, as Pulsar's admin fans them out (a broker alone sees only its own partitions)."""

    async def fan_out(request: web.Request, handler):  # type: ignore[no-untyped-def]
        canonical = _canonical(request)
        call = _FANNED_OUT.get(canonical[len(TOPIC_ROUTE):]) if canonical.startswith(TOPIC_ROUTE) else None
        if call is None:
            return await handler(request)
        name = TopicAccess.name(request)
        count = await broker.partitioned_count(name)
        require(count > 0, NOT_FOUND, "Partitioned Topic not found")
        method, path = call
        answers: dict[TopicName, Any] = {}
        async with ClientSession() as session:
            for index in range(count):
                partition = name.partition(index)
                url = (f"{me.http_url}/admin/v2/{partition.domain}/{partition.namespace}/"
                       f"{quote(partition.local_name, safe='')}{path}")
                async with session.request(method, url) as response:   # 307s followed
                    if response.status >= 400:
                        raise RestError(response.status, await response.text())
                    answers[partition] = await response.json()
        if method == "POST":   # Pulsar: {partition index: message id}
            return web.json_response({str(p.partition_index): answer for p, answer in answers.items()})
        return web.json_response(partitioned_stats({str(p): answer for p, answer in answers.items()},
                                                    count, query_flag(request, "perPartition")))
    return fan_out


def bundle_routes(ownership: Ownership) -> list[web.RouteDef]:
    @rest_handler
    async def bundles(request: web.Request) -> web.Response:
        namespace = f"{request.match_info['tenant']}/{request.match_info['namespace']}"
        found = await ownership.bundles.load(namespace)
        bounds = [f"0x{b.lower:08x}" for b in found] + [f"0x{found[-1].upper:08x}"]
        return web.json_response({"boundaries": bounds, "numBundles": len(found)})

    @rest_handler
    async def unload(request: web.Request) -> web.Response:
        """Release the bundle here; on its owner elsewhere (307); nothing for an unowned one."""
        namespace = f"{request.match_info['tenant']}/{request.match_info['namespace']}"
        await ownership.bundles.load(namespace)
        bundle = ownership.bundles.parse(namespace, request.match_info["bundle"])
        owner = await ownership.owner_of(bundle)
        if owner is not None and owner is not ownership.me:
            raise web.HTTPTemporaryRedirect(redirect_url(owner.http_url, request, authoritative=False))
        await ownership.release(bundle)
        return web.Response(status=204)

    @rest_handler
    async def unload_namespace(request: web.Request) -> web.Response:
        """Every bundle of the namespace, each released by its owner (asked over HTTP)."""
        namespace = f"{request.match_info['tenant']}/{request.match_info['namespace']}"
        async with ClientSession() as session:
            for bundle in await ownership.bundles.load(namespace):
                owner = await ownership.owner_of(bundle)
                if owner is ownership.me:
                    await ownership.release(bundle)
                elif owner is not None:
                    url = f"{owner.http_url}/admin/v2/namespaces/{namespace}/{bundle.range}/unload"
                    async with session.put(url) as response:
                        if response.status >= 400:
                            raise RestError(response.status, await response.text())
        return web.Response(status=204)

    return [web.get(NS + "/bundles", bundles), web.put(NS + "/unload", unload_namespace),
            web.put(NS + "/{bundle}/unload", unload)]


def broker_routes(ownership: Ownership, registry: BrokerRegistry, cluster_name: str) -> list[web.RouteDef]:
    @rest_handler
    async def active_brokers(request: web.Request) -> web.Response:
        require(request.match_info["cluster"] == cluster_name, NOT_FOUND, "Cluster does not exist")
        return web.json_response(sorted(b.address.broker_id for b in await registry.brokers()))

    @rest_handler
    async def owned_namespaces(request: web.Request) -> web.Response:
        """Pulsar's NamespaceOwnershipStatus by bundle; asked of another broker: a 307 there."""
        require(request.match_info["cluster"] == cluster_name, NOT_FOUND, "Cluster does not exist")
        if request.match_info["broker"] != ownership.me.broker_id:
            raise web.HTTPTemporaryRedirect(redirect_url(f"http://{request.match_info['broker']}", request, False))
        return web.json_response({str(b): {"broker_assignment": "shared", "is_controlled": False, "is_active": True}
                                  for b in ownership.owned()})

    return [web.get("/admin/v2/brokers/{cluster}", active_brokers),
            web.get("/admin/v2/brokers/{cluster}/{broker}/ownedNamespaces", owned_namespaces)]
