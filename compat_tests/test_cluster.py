"""Two pulsard brokers on one real ZooKeeper + 3 real bookies (the session cluster fixture),
driven by the official Python client: bundles spread over both, lookups redirected and
followed, a broker killed with kill -9 and its topics taken over with nothing receipted lost."""

from __future__ import annotations

import os
import signal
import threading
import time

import pulsar
import pytest

from compat_tests.cluster_brokers import BrokerGroup, http, ledger_ensemble
from server.cluster.bundles import NamespaceBundles
from server.topics.topic_name import TopicName

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(240)]

BUNDLES = NamespaceBundles(4)


@pytest.fixture(scope="module")
def brokers(cluster, tmp_path_factory):
    group = BrokerGroup(cluster, tmp_path_factory.mktemp("cluster-brokers"), 2)
    try:
        yield group.start().brokers
    finally:
        group.stop()


def owner_of(broker, topic: str) -> str:
    """The nativeUrl of the broker serving topic (HTTP lookup, redirects followed)."""
    name = TopicName.parse(topic)
    status, body = http("GET", f"{broker.web_url}/lookup/v2/topic/{name.domain}/{name.namespace}/{name.local_name}")
    assert status == 200, body
    return body["brokerUrl"]


def topics_in_distinct_bundles(namespace: str, count: int, prefix: str) -> list[str]:
    found: dict[str, str] = {}
    for i in range(1000):
        topic = f"persistent://{namespace}/{prefix}-{i}"
        found.setdefault(BUNDLES.bundle_of(TopicName.parse(topic)).range, topic)
        if len(found) == count:
            return list(found.values())
    raise AssertionError("not enough bundles hit")


def create_namespace(broker, namespace: str, **policies) -> None:
    status, body = http("PUT", f"{broker.web_url}/admin/v2/namespaces/{namespace}", {})
    assert status in (204, 409), body
    for field, value in policies.items():
        status, body = http("POST", f"{broker.web_url}/admin/v2/namespaces/{namespace}/{field}", value)
        assert status in (200, 204), body


def test_partitioned_topic_spread_over_both_brokers(brokers):
    a, b = brokers
    topic = "persistent://public/default/spread"
    status, body = http("PUT", f"{a.web_url}/admin/v2/persistent/public/default/spread/partitions", 8)
    assert status == 204, body
    client = pulsar.Client(a.service_url, operation_timeout_seconds=30)
    try:
        consumer = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
        producer = client.create_producer(topic, batching_enabled=False,
                                          message_routing_mode=pulsar.PartitionsRoutingMode.RoundRobinDistribution)
        sent = {f"m-{i}" for i in range(200)}
        for value in sorted(sent):
            producer.send(value.encode())
        received = set()
        while len(received) < len(sent):
            message = consumer.receive(timeout_millis=20000)
            received.add(message.data().decode())
            consumer.acknowledge(message)
        assert received == sent
    finally:
        client.close()
    owners = {owner_of(b, f"{topic}-partition-{i}") for i in range(8)}
    assert owners == {a.service_url, b.service_url}
    status, active = http("GET", f"{a.web_url}/admin/v2/brokers/pulsard-cluster")
    assert sorted(active) == sorted(f"127.0.0.1:{x.web_port}" for x in brokers)
    for broker in brokers:   # asked of A, each answered by the broker itself (307)
        status, owned = http("GET", f"{a.web_url}/admin/v2/brokers/pulsard-cluster/127.0.0.1:{broker.web_port}"
                                    f"/ownedNamespaces")
        assert status == 200 and any(k.startswith("public/default/0x") for k in owned), owned
    status, reports = http("GET", f"{a.web_url}/console/api/brokers")   # the web console's cluster page
    assert status == 200 and sorted(r["webServiceUrl"] for r in reports) == sorted(x.web_url for x in brokers)
    assert all(any(bundle.startswith("public/default/0x") for bundle in r["bundles"]) for r in reports), reports
    status, body = http("GET", f"{b.web_url}/admin/v2/persistent/public/default/spread-partition-0/stats")
    assert status == 200 and body["msgInCounter"] + body["msgOutCounter"] > 0, body   # 307 to its owner
    for broker in brokers:   # fanned out to every partition's owner, whichever broker is asked
        status, stats = http("GET", f"{broker.web_url}/admin/v2/persistent/public/default/spread/partitioned-stats"
                                    f"?perPartition=true")
        assert status == 200, stats
        assert stats["msgInCounter"] == 200 and stats["metadata"]["partitions"] == 8, stats
        assert len(stats["partitions"]) == 8, stats
    status, body = http("DELETE", f"{b.web_url}/admin/v2/persistent/public/default/spread/partitions?force=true")
    assert status == 204, body   # each partition deleted at its owner, then the metadata
    _, names = http("GET", f"{a.web_url}/admin/v2/persistent/public/default")
    assert not [n for n in names if "/spread" in n], names


def test_lookup_redirect_is_followed_by_the_client(brokers):
    a, b = brokers
    create_namespace(a, "public/redirect")
    topics = topics_in_distinct_bundles("public/redirect", 4, "r")
    for broker in brokers:
        _, data = http("GET", f"{broker.web_url}/admin/v2/namespaces/public/redirect/bundles")
        assert data["numBundles"] == 4
    # asked for four unowned bundles, A keeps some and sends the others to the less loaded B
    answers = {topic: http("GET", f"{a.web_url}/lookup/v2/topic/persistent/public/redirect/"
                                  f"{TopicName.parse(topic).local_name}", follow=False) for topic in topics}
    redirected = [topic for topic, (status, _) in answers.items() if status == 307]
    assert redirected, answers
    assert answers[redirected[0]][1].startswith(b.web_url) and "authoritative=true" in answers[redirected[0]][1]
    client = pulsar.Client(a.service_url, operation_timeout_seconds=30)
    try:   # A answers the binary lookup with Redirect (authoritative); the client asks B, which takes it
        producer = client.create_producer(redirected[0])
        producer.send(b"through a redirect")
        reader = client.create_reader(redirected[0], pulsar.MessageId.earliest)
        assert reader.read_next(timeout_millis=10000).data() == b"through a redirect"
    finally:
        client.close()
    assert owner_of(a, redirected[0]) == b.service_url


def test_bundle_unload_lets_another_broker_take_it(brokers):
    a, b = brokers
    topic = "persistent://public/default/unload-me"
    client = pulsar.Client(a.service_url, operation_timeout_seconds=30)
    try:
        producer = client.create_producer(topic, batching_enabled=False)
        producer.send(b"before")
        owner = owner_of(a, topic)
        other = b if owner == a.service_url else a
        bundle = BUNDLES.bundle_of(TopicName.parse(topic)).range
        # asked of the broker that does not own it: 307 to the owner, which releases it
        status, body = http("PUT", f"{other.web_url}/admin/v2/namespaces/public/default/{bundle}/unload")
        assert status == 204, body
        producer.send(b"after")   # the client looks the topic up again and reconnects
        assert owner_of(a, topic) in (a.service_url, b.service_url)
        assert read_all(client, topic) == ["before", "after"]
        status, body = http("PUT", f"{other.web_url}/admin/v2/persistent/public/default/unload-me/unload")
        assert status == 204, body   # topic unload, on the owner through a 307
        producer.send(b"again")
        assert read_all(client, topic) == ["before", "after", "again"]
        status, body = http("PUT", f"{a.web_url}/admin/v2/namespaces/public/default/unload")
        assert status == 204, body   # every bundle, at its owner
        for broker in brokers:
            _, owned = http("GET", f"{broker.web_url}/admin/v2/brokers/pulsard-cluster/127.0.0.1:{broker.web_port}"
                                   f"/ownedNamespaces")
            assert not [k for k in owned if k.startswith("public/default/")], owned
        producer.send(b"last")
        assert read_all(client, topic) == ["before", "after", "again", "last"]
    finally:
        client.close()


def test_a_broker_paused_past_its_session_loses_its_bundles(brokers):
    """SIGSTOP B past its ZooKeeper session: A takes B's bundle (fencing B's ledger); resumed,
    B learns its session expired, stops serving, and its clients move to A."""
    a, b = brokers
    create_namespace(a, "public/pause", deduplication=True)
    topic = "persistent://public/pause/paused"
    status, body = http("GET", f"{b.web_url}/lookup/v2/topic/persistent/public/pause/paused?authoritative=true")
    assert status == 200 and body["brokerUrl"] == b.service_url, body
    old_client = pulsar.Client(b.service_url, operation_timeout_seconds=30)
    new_client = pulsar.Client(a.service_url, operation_timeout_seconds=30)
    try:
        old = old_client.create_producer(topic, producer_name="old", batching_enabled=False)
        old.send(b"old-1")
        os.kill(b.pid, signal.SIGSTOP)
        try:
            time.sleep(6)   # past metadataStoreSessionTimeoutMillis (4 s)
            assert owner_of(a, topic) == a.service_url   # B's node expired: A takes the bundle
            new = new_client.create_producer(topic, producer_name="new", batching_enabled=False)
            new.send(b"new-1")
        finally:
            os.kill(b.pid, signal.SIGCONT)
        time.sleep(2)
        old.send(b"old-2")   # B gave the topic up: the producer reconnects to A
        _, owned = http("GET", f"{b.web_url}/admin/v2/brokers/pulsard-cluster/127.0.0.1:{b.web_port}/ownedNamespaces")
        assert not [k for k in owned if k.startswith("public/pause/")], owned
        assert sorted(read_all(new_client, topic)) == ["new-1", "old-1", "old-2"]
    finally:
        old_client.close()
        new_client.close()


def read_all(client, topic: str) -> list[str]:
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    values = []
    while reader.has_message_available():
        values.append(reader.read_next(timeout_millis=10000).data().decode())
    reader.close()
    return values


def test_broker_killed_its_topics_move_nothing_lost_nothing_duplicated(brokers):
    """Runs last: it kills B."""
    a, b = brokers
    create_namespace(a, "public/failover", deduplication=True)
    topic = "persistent://public/failover/orders"
    status, body = http("PUT", f"{a.web_url}/admin/v2/persistent/public/failover/orders/partitions", 4)
    assert status == 204, body
    for i in range(4):   # the partitions are in 4 bundles: A takes two, B two (authoritative lookups)
        owner = brokers[i % 2]
        status, body = http("GET", f"{owner.web_url}/lookup/v2/topic/persistent/public/failover/"
                                   f"orders-partition-{i}?authoritative=true")
        assert status == 200 and body["brokerUrl"] == owner.service_url, body
    client = pulsar.Client(a.service_url, operation_timeout_seconds=60)
    try:
        consumer = client.subscribe(topic, "audit", initial_position=pulsar.InitialPosition.Earliest)
        producer = client.create_producer(
            topic, producer_name="failover-producer", batching_enabled=False, send_timeout_millis=0,
            message_routing_mode=pulsar.PartitionsRoutingMode.RoundRobinDistribution)
        owners = {owner_of(a, f"{topic}-partition-{i}") for i in range(4)}
        assert owners == {a.service_url, b.service_url}, "both brokers serve partitions"
        receipted: set[str] = set()
        lock = threading.Lock()

        def receipt(result, message_id, value):
            if result == pulsar.Result.Ok:
                with lock:
                    receipted.add(value)

        for i in range(600):
            value = f"order-{i}"
            producer.send_async(value.encode(), lambda r, m, v=value: receipt(r, m, v))
            if i == 200:
                b.kill9()
            time.sleep(0.005)
        producer.flush()
        assert len(receipted) == 600
        owners = {owner_of(a, f"{topic}-partition-{i}") for i in range(4)}
        assert owners == {a.service_url}, "A took B's bundles over"
        consumed: set[str] = set()
        while not receipted <= consumed:
            message = consumer.receive(timeout_millis=30000)
            consumed.add(message.data().decode())
            consumer.acknowledge(message)
        stored = [value for i in range(4) for value in read_all(client, f"{topic}-partition-{i}")]
        assert sorted(stored) == sorted(receipted), "every receipted message stored exactly once"
    finally:
        client.close()


def test_a_bookie_killed_mid_run_loses_nothing_and_writes_go_on(cluster, tmp_path):
    """E=2, Qw=2, Qa=2 over the three bookies: kill -9 one of them while the official client
    produces through a broker; the ledger's ensemble moves to the third bookie, every receipted
    message is there once and in order, and the broker keeps taking sends."""
    group = BrokerGroup(cluster, tmp_path, 1, managedLedgerDefaultEnsembleSize=2,
                        managedLedgerDefaultWriteQuorum=2, managedLedgerDefaultAckQuorum=2).start()
    client = pulsar.Client(group.brokers[0].service_url, operation_timeout_seconds=30)
    topic = "persistent://public/default/bookie-kill"
    try:
        producer = client.create_producer(topic, batching_enabled=False, send_timeout_millis=60_000,
                                          block_if_queue_full=True)
        receipted: list[bytes] = []
        lock = threading.Lock()

        def on_receipt(result, _msg_id, value):
            if result == pulsar.Result.Ok:
                with lock:
                    receipted.append(value)

        victim = None
        for i in range(600):
            value = f"m-{i:04d}".encode()
            producer.send_async(value, lambda r, m, v=value: on_receipt(r, m, v))
            if i == 200:
                producer.flush()
                victim = writing_bookie(cluster, group.brokers[0], topic)
                cluster.kill_bookie(victim)
            time.sleep(0.002)
        producer.flush()
        assert len(receipted) == 600, f"{len(receipted)} of 600 receipted after the bookie died"
        producer.send(b"after")   # writes go on

        reader = client.create_reader(topic, pulsar.MessageId.earliest)
        stored = []
        while reader.has_message_available():
            stored.append(reader.read_next(timeout_millis=20000).data())
        assert stored == sorted(receipted) + [b"after"]
    finally:
        client.close()
        group.stop()
        if victim is not None:
            cluster.restart_bookie(victim)


def writing_bookie(cluster, broker, topic: str) -> int:
    """The index of a bookie in the ensemble of the ledger the topic writes now."""
    ensemble = ledger_ensemble(cluster, broker, topic)
    return next(i for i, bookie in enumerate(cluster.bookie_list) if bookie.bookie_id in ensemble)
