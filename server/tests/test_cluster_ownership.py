"""Bundles, ownership and the load spread of cluster mode, on an in-memory stand-in for the
ZooKeeper store (ephemeral nodes die with their "session"); the real thing is exercised by
compat_tests/test_cluster.py."""

from __future__ import annotations

import asyncio
import json
import zlib

import pytest

from bookkeeper.zk_metadata_store import SessionEvent
from managed_ledger.errors import MetadataBadVersionError, MetadataNotFoundError
from server.cluster.broker_registry import BrokerAddress, BrokerRegistry
from server.cluster.bundle_stats import OwnedBundleStats
from server.cluster.bundles import NamespaceBundles
from server.cluster.cluster_lookup import ClusterLookup
from server.cluster.ownership import Ownership
from server.errors import ServiceNotReady
from server.loadbalance.config import LoadBalancerConfig
from server.loadbalance.leader_election import LeaderElection
from server.loadbalance.load_manager import LoadManager
from server.loadbalance.load_report import LoadReporter
from server.policies.auto_topic_creation import AutoTopicCreation
from server.topics.topic_name import TopicName


class Tree:
    """Nodes shared by every session: path -> (value, version, session or None)."""

    def __init__(self) -> None:
        self.nodes: dict[str, tuple[bytes, int, object]] = {}


class Session:
    """The part of ZkMetadataStore that cluster mode uses."""

    def __init__(self, tree: Tree) -> None:
        self.tree = tree
        self.listeners = []

    async def get(self, path):
        found = self.tree.nodes.get(path)
        return (found[0], found[1]) if found else None

    async def put(self, path, value, expected_version=None):
        found = self.tree.nodes.get(path)
        if found is None and expected_version in (None, -1):   # made (persistent)
            self.tree.nodes[path] = (value, 0, None)
            return 0
        if found is None or (expected_version is not None and found[1] != expected_version):
            raise MetadataBadVersionError(path)
        self.tree.nodes[path] = (value, found[1] + 1, found[2])
        return found[1] + 1

    async def put_ephemeral(self, path, value):
        if path in self.tree.nodes:
            raise MetadataBadVersionError(path)
        self.tree.nodes[path] = (value, 0, self)
        return 0

    async def delete(self, path, expected_version=None):
        if self.tree.nodes.pop(path, None) is None:
            raise MetadataNotFoundError(path)

    async def children(self, path):
        return sorted({p[len(path) + 1:].split("/")[0] for p in self.tree.nodes if p.startswith(path + "/")})

    def add_session_listener(self, listener):
        self.listeners.append(listener)

    async def ephemeral_owner(self, path):
        found = self.tree.nodes.get(path)
        return id(found[2]) if found and found[2] is not None else None

    @property
    def session_id(self):
        return id(self)

    def expire(self, tell: bool = True) -> None:
        """The session ends: its ephemeral nodes go (and, if `tell`, its listeners hear it)."""
        self.tree.nodes = {p: n for p, n in self.tree.nodes.items() if n[2] is not self}
        for listener in self.listeners if tell else ():
            listener(SessionEvent.EXPIRED)


class Topics:
    """The broker side: which topics are loaded, and unloading them."""

    def __init__(self) -> None:
        self.loaded: list[TopicName] = []

    def loaded_topic_names(self):
        return list(self.loaded)

    async def unload_topic(self, name):
        self.loaded.remove(name)
        return True

    async def auto_topic_creation(self, name):
        return AutoTopicCreation(allowed=True, partitions=0)

    async def topic_exists(self, name):
        return True


BUNDLES = NamespaceBundles(4)


def address(port: int) -> BrokerAddress:
    return BrokerAddress(f"pulsar://127.0.0.1:{port}", None, f"http://127.0.0.1:{port + 1000}")


def ownership_of(session: Session, registry: BrokerRegistry, topics: Topics) -> Ownership:
    """Ownership writing the load report (no topics loaded) on each change, as a broker's does."""
    ownership = Ownership(session, BUNDLES, registry, topics, publish=lambda: reporter.write_now())
    reporter = LoadReporter(OwnedBundleStats(lambda: [], ownership, 60.0), LoadBalancerConfig(), registry.publish)
    return ownership


async def broker(tree: Tree, port: int):
    """A broker whose lookups place bundles as the load balancer leader decides (the first
    broker made leads)."""
    session = Session(tree)
    registry = BrokerRegistry(session, address(port))
    await registry.register()
    topics = Topics()
    ownership = ownership_of(session, registry, topics)
    leader = LeaderElection(session, registry.me.broker_id, registry.me.http_url)
    await leader.elect()
    chooser = LoadManager(session, LoadBalancerConfig(), actions=None)
    return session, ownership, topics, ClusterLookup(topics, ownership, registry, leader, chooser)


def test_bundles_are_pulsars_ranges_of_the_crc32_of_the_topic_name():
    ranges = [b.range for b in BUNDLES.all_of("public/default")]
    assert ranges == ["0x00000000_0x40000000", "0x40000000_0x80000000",
                      "0x80000000_0xc0000000", "0xc0000000_0xffffffff"]
    assert BUNDLES.all_of("public/default")[0].path == "/namespace/public/default/0x00000000_0x40000000"
    for i in range(50):
        name = TopicName.parse(f"persistent://public/default/t-{i}")
        bundle = BUNDLES.bundle_of(name)
        assert bundle.lower <= zlib.crc32(str(name).encode()) <= bundle.upper and bundle.holds(name)
    assert BUNDLES.parse("public/default", "0x40000000_0x80000000").lower == 0x40000000
    assert NamespaceBundles(1).all_of("a/b")[0].range == "0x00000000_0xffffffff"


async def test_one_broker_takes_a_bundle_the_other_learns_its_owner():
    tree = Tree()
    _, a, _, _ = await broker(tree, 6650)
    _, b, _, _ = await broker(tree, 6651)
    bundle = BUNDLES.all_of("public/default")[0]
    assert await a.acquire(bundle) is a.me
    assert await b.acquire(bundle) == a.me
    assert json.loads(tree.nodes[bundle.path][0])["nativeUrl"] == "pulsar://127.0.0.1:6650"
    assert json.loads(tree.nodes["/loadbalance/brokers/127.0.0.1:7650"][0])["numBundles"] == 1
    name = next(TopicName.parse(f"persistent://public/default/t-{i}") for i in range(100)
                if bundle.holds(TopicName.parse(f"persistent://public/default/t-{i}")))
    a.check_serves(name)
    with pytest.raises(ServiceNotReady, match="not served by this instance"):
        b.check_serves(name)


async def test_release_unloads_the_bundles_topics_and_frees_it():
    tree = Tree()
    _, a, topics, _ = await broker(tree, 6650)
    _, b, _, _ = await broker(tree, 6651)
    bundle = BUNDLES.all_of("public/default")[1]
    inside = next(TopicName.parse(f"persistent://public/default/t-{i}") for i in range(100)
                  if bundle.holds(TopicName.parse(f"persistent://public/default/t-{i}")))
    outside = next(TopicName.parse(f"persistent://public/default/t-{i}") for i in range(100)
                   if not bundle.holds(TopicName.parse(f"persistent://public/default/t-{i}")))
    topics.loaded = [inside, outside]
    await a.acquire(bundle)
    assert await a.release(bundle)
    assert topics.loaded == [outside]
    assert await b.acquire(bundle) is b.me


async def test_an_expired_session_stops_serving_and_frees_the_bundles():
    tree = Tree()
    session, a, topics, _ = await broker(tree, 6650)
    _, b, _, _ = await broker(tree, 6651)
    bundle = BUNDLES.all_of("public/default")[2]
    name = next(TopicName.parse(f"persistent://public/default/t-{i}") for i in range(100)
                if bundle.holds(TopicName.parse(f"persistent://public/default/t-{i}")))
    topics.loaded = [name]
    await a.acquire(bundle)
    session.expire()
    await asyncio.sleep(0)
    assert not a.owns(bundle) and topics.loaded == []
    assert await b.acquire(bundle) is b.me


async def test_a_zombie_confirms_its_bundle_before_an_authoritative_answer():
    """A broker resumed after its session expired, before it hears of it: plain lookups still
    answer from memory, an authoritative one reads the node and names the new owner."""
    tree = Tree()
    session, a, _, _ = await broker(tree, 6650)
    _, b, _, _ = await broker(tree, 6651)
    bundle = BUNDLES.all_of("public/default")[1]
    await a.acquire(bundle)
    assert await a.owner_of(bundle, confirm=True) is a.me
    session.expire(tell=False)
    assert await b.acquire(bundle) is b.me
    assert await a.owner_of(bundle) is a.me   # not confirmed: what it believes
    assert await a.owner_of(bundle, confirm=True) == b.me and not a.owns(bundle)


async def test_lookups_spread_unowned_bundles_over_the_least_loaded_brokers():
    tree = Tree()
    _, a, _, lookup_a = await broker(tree, 6650)
    _, b, _, lookup_b = await broker(tree, 6651)
    topics = {}
    for i in range(200):
        name = TopicName.parse(f"persistent://public/default/t-{i}")
        topics.setdefault(BUNDLES.bundle_of(name).range, name)
    names = list(topics.values())
    answers = await asyncio.gather(*(lookup_a.answer(n) for n in names))
    redirected = [n for n, answer in zip(names, answers) if answer.redirect]
    assert len(redirected) == 2 and all(not x.proxy_through_service_url for x in answers)
    assert {x.broker_url for x in answers if x.redirect} == {"pulsar://127.0.0.1:6651"}
    again = await lookup_a.answer(redirected[0])   # asked again before B took it: the same choice
    assert again.redirect and again.broker_url == "pulsar://127.0.0.1:6651"
    taken = await lookup_b.answer(redirected[0], authoritative=True)
    assert not taken.redirect and taken.broker_url == "pulsar://127.0.0.1:6651"
    owned = await lookup_a.answer(redirected[0])   # owned elsewhere: Connect to the owner
    assert not owned.redirect and owned.broker_url == "pulsar://127.0.0.1:6651"


async def test_a_restarted_broker_reclaims_the_bundles_of_its_earlier_session():
    tree = Tree()
    _, old, _, _ = await broker(tree, 6650)
    bundle = BUNDLES.all_of("public/default")[3]
    await old.acquire(bundle)
    _, b, _, _ = await broker(tree, 6651)
    assert await b.owner_of(bundle) == address(6650)
    session = Session(tree)   # the same broker again, before ZooKeeper expired the old session
    registry = BrokerRegistry(session, address(6650))
    await registry.register()
    again = ownership_of(session, registry, Topics())
    assert await again.owner_of(bundle) is again.me and again.owns(bundle)
    assert tree.nodes[bundle.path][2] is session


async def test_reads_during_a_take_wait_for_it_never_mistaking_our_node_for_a_stale_one():
    tree = Tree()
    session, a, _, _ = await broker(tree, 6650)
    bundle = BUNDLES.all_of("public/default")[0]
    answers = await asyncio.gather(a.acquire(bundle), a.owner_of(bundle), a.acquire(bundle), a.owner_of(bundle))
    assert all(answer is a.me for answer in answers)
    assert tree.nodes[bundle.path][1:] == (0, session)   # created once, never deleted and re-made


async def test_one_leader_and_a_new_one_once_its_session_is_gone():
    tree = Tree()
    first, second = Session(tree), Session(tree)
    a = LeaderElection(first, "127.0.0.1:7650", "http://127.0.0.1:7650")
    b = LeaderElection(second, "127.0.0.1:7651", "http://127.0.0.1:7651")
    await a.elect()
    await b.elect()
    assert a.is_leader and not b.is_leader and b.leader_id == "127.0.0.1:7650"
    assert json.loads(tree.nodes["/loadbalance/leader"][0]) == {"serviceUrl": "http://127.0.0.1:7650",
                                                                "brokerId": "127.0.0.1:7650"}
    first.expire()
    assert not a.is_leader
    await b.elect()   # as its watch of the node does
    assert b.is_leader and b.leader_id == "127.0.0.1:7651"


async def test_a_split_keeps_every_topic_served_and_stores_the_boundaries_as_pulsar():
    tree = Tree()
    session, a, topics, _ = await broker(tree, 6650)
    bundles = NamespaceBundles(1, session)
    a.bundles = bundles
    whole = (await bundles.load("public/split"))[0]
    names = [TopicName.parse(f"persistent://public/split/t-{i}") for i in range(20)]
    await a.acquire(whole)
    lower, upper = await a.split(whole, 0x7FFFFFFF)
    assert (lower.range, upper.range) == ("0x00000000_0x7fffffff", "0x7fffffff_0xffffffff")
    for name in names:
        a.check_serves(name)
    assert whole.path not in tree.nodes and lower.path in tree.nodes and upper.path in tree.nodes
    stored = json.loads(tree.nodes["/admin/local-policies/public/split"][0])
    assert stored["bundles"] == {"boundaries": ["0x00000000", "0x7fffffff", "0xffffffff"], "numBundles": 2}
    # another broker reads the new boundaries
    assert [b.range for b in await NamespaceBundles(4, session).load("public/split")] == [lower.range, upper.range]
    with pytest.raises(ServiceNotReady):   # no longer a bundle of ours
        await a.split(whole, 0x100)
