"""The admin API of load management in a cluster, as Pulsar serves it: the leader broker, this
broker's load report and topics by bundle (broker-stats), and splitting a bundle (done by its
owner: a 307 there, after placing the bundle if nobody owns it)."""

from __future__ import annotations

from typing import Any, Callable, Protocol

from server import web
from server.admin.brokers import redirect_url
from server.admin.errors import NOT_FOUND, PRECONDITION_FAILED, query_flag, require, rest_handler
from server.admin.namespaces import NS
from server.admin.topic_stats import topic_stats
from server.broker_service import MODE_ALL
from server.loadbalance.bundle_split import split_point
from server.loadbalance.config import SPLIT_ALGORITHMS
from server.loadbalance.leader_election import LeaderElection, broker_id_of
from server.topics.topic_name import TopicName

from .bundle_stats import OwnedBundleStats
from .bundles import topic_hash
from .cluster_lookup import ClusterLookup
from .ownership import Ownership


class NamespaceTopics(Protocol):
    async def topics_of_namespace(self, namespace: str, mode: int) -> list[str]: ...

    policies: Any


def leader_routes(leader: LeaderElection) -> list[web.RouteDef]:
    @rest_handler
    async def leader_broker(request: web.Request) -> web.Response:
        """Pulsar's BrokerInfo of the leader."""
        broker_id = broker_id_of(await leader.current())
        require(broker_id is not None, NOT_FOUND, "Couldn't find leader broker")
        return web.json_response({"serviceUrl": f"http://{broker_id}", "brokerId": broker_id})

    return [web.get("/admin/v2/brokers/leaderBroker", leader_broker)]


def broker_stats_routes(load_report: Callable[[], dict[str, Any]], stats: OwnedBundleStats,
                        window_s: float) -> list[web.RouteDef]:
    async def load(request: web.Request) -> web.Response:
        """This broker's LocalBrokerData as of now."""
        return web.json_response(load_report())

    async def topics(request: web.Request) -> web.Response:
        """namespace -> bundle range -> domain -> topic -> its stats (the topics loaded here)."""
        found: dict[str, Any] = {}
        for bundle, loaded in sorted(stats.by_bundle().items(), key=lambda item: str(item[0])):
            by_domain = found.setdefault(bundle.namespace, {}).setdefault(bundle.range, {})
            for topic in loaded:
                by_domain.setdefault(topic.name.domain, {})[str(topic.name)] = topic_stats(topic, window_s)
        return web.json_response(found)

    return [web.get("/admin/v2/broker-stats/load-report", load), web.get("/admin/v2/broker-stats/topics", topics)]


def split_routes(broker: NamespaceTopics, ownership: Ownership, lookup: ClusterLookup,
                 default_algorithm: str) -> list[web.RouteDef]:
    @rest_handler
    async def split(request: web.Request) -> web.Response:
        """Cut the bundle in two where the algorithm says (range_equally_divide: in the
        middle; topic_count_equally_divide: between its middle topics); ?unload=true then
        releases both halves, for the leader to place them anew."""
        namespace = f"{request.match_info['tenant']}/{request.match_info['namespace']}"
        algorithm = request.query.get("splitAlgorithmName") or default_algorithm
        require(algorithm in SPLIT_ALGORITHMS, PRECONDITION_FAILED,
                f"Unsupported namespace bundle split algorithm, supported algorithms are {list(SPLIT_ALGORITHMS)}")
        require(await broker.policies.get_if_exists(namespace) is not None, NOT_FOUND, "Namespace does not exist")
        await ownership.bundles.load(namespace)
        bundle = ownership.bundles.parse(namespace, request.match_info["bundle"])
        placement = await lookup.place_bundle(bundle, query_flag(request, "authoritative"))
        if not placement.is_me:
            raise web.HTTPTemporaryRedirect(redirect_url(placement.owner.http_url, request, placement.authoritative))
        hashes = [topic_hash(name) for name in map(TopicName.parse, await broker.topics_of_namespace(namespace, MODE_ALL))
                  if bundle.holds(name)]
        point = split_point(algorithm, bundle.lower, bundle.upper, hashes)
        require(point is not None, PRECONDITION_FAILED,
                f"Bundle {bundle} cannot be split by {algorithm} ({len(hashes)} topics)")
        halves = await ownership.split(bundle, point)
        if query_flag(request, "unload"):
            for half in halves:
                await ownership.release(half)
        return web.Response(status=204)

    return [web.put(NS + "/{bundle}/split", split)]
