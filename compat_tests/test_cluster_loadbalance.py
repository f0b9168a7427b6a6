"""Load management of a pulsard cluster, on real ZooKeeper + bookies, driven by the official
Python client and Pulsar's own pulsar-admin: one leader (re-elected when killed), load reports
as LocalBrokerData, placement by load, bundles split automatically and on request with every
topic still served, and load shed off an overloaded broker."""

from __future__ import annotations

import json
import threading
import time

import pulsar
import pytest

from compat_tests.cluster_brokers import BrokerGroup, http, zk_json
from compat_tests.test_cluster import create_namespace, owner_of, topics_in_distinct_bundles
from compat_tests.test_pulsar_admin_cli import outputs, run_batch
from server.cluster.bundles import NamespaceBundles
from server.topics.topic_name import TopicName

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]

FAST = {"statsUpdateFrequencyInSecs": 2, "loadBalancerReportUpdateMinIntervalMillis": 500,
        "loadBalancerResourceQuotaUpdateIntervalMinutes": 0.05}


@pytest.fixture(scope="module")
def group(cluster, tmp_path_factory):
    group = BrokerGroup(cluster, tmp_path_factory.mktemp("lb-brokers"), 2, **FAST,
                        loadBalancerSplitIntervalMinutes=0.05, loadBalancerNamespaceBundleMaxTopics=4,
                        loadBalancerNamespaceMaximumBundles=8, loadBalancerSheddingEnabled="false")
    try:
        yield group.start()
    finally:
        group.stop()


def wait_for(condition, what: str, timeout_s: float = 90.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.5)
    raise AssertionError(f"never: {what}")


def bundles_of(broker, namespace: str) -> list[str]:
    status, body = http("GET", f"{broker.web_url}/admin/v2/namespaces/{namespace}/bundles")
    assert status == 200, body
    return body["boundaries"]


def round_trip(client, topics: list[str], tag: str) -> None:
    """Each topic takes a message and gives back, from the start, every one it was sent."""
    for topic in topics:
        producer = client.create_producer(topic, batching_enabled=False)
        producer.send(f"{tag}:{topic}".encode())
        producer.close()
    for topic in topics:
        reader = client.create_reader(topic, pulsar.MessageId.earliest)
        got = []
        while reader.has_message_available():
            got.append(reader.read_next(timeout_millis=20000).data().decode())
        reader.close()
        assert f"{tag}:{topic}" in got, (topic, got)


def test_one_leader_and_load_reports_as_pulsar_writes_them(cluster, group):
    a, b = group.brokers
    for broker in group.brokers:
        status, leader = http("GET", f"{broker.web_url}/admin/v2/brokers/leaderBroker")
        assert status == 200 and leader == {"serviceUrl": a.web_url, "brokerId": f"127.0.0.1:{a.web_port}"}, leader
    assert zk_json(cluster, f"/{group.chroot}/loadbalance/leader") == leader
    create_namespace(a, "public/lb-report")
    topic = topics_in_distinct_bundles("public/lb-report", 1, "r")[0]
    # B is not the leader: it sends the lookup of an unowned bundle to A, not authoritatively
    status, location = http("GET", f"{b.web_url}/lookup/v2/topic/persistent/public/lb-report/"
                                   f"{TopicName.parse(topic).local_name}", follow=False)
    assert status == 307 and location.startswith(a.web_url) and "authoritative" not in location
    client = pulsar.Client(b.service_url, operation_timeout_seconds=30)
    try:
        producer = client.create_producer(topic)
        for _ in range(20):
            producer.send(b"x" * 100)
        owner = next(x for x in group.brokers if x.service_url == owner_of(a, topic))
        status, report = http("GET", f"{owner.web_url}/admin/v2/broker-stats/load-report")
        assert status == 200, report
        bundle = f"public/lb-report/{NamespaceBundles(4).bundle_of(TopicName.parse(topic)).range}"
        assert bundle in report["bundles"] and report["lastStats"][bundle]["producerCount"] == 1
        assert report["loadReportType"] == "LocalBrokerData" and report["cpu"]["limit"] > 0
        status, topics = http("GET", f"{owner.web_url}/admin/v2/broker-stats/topics")
        assert topics["public/lb-report"][bundle.rsplit("/", 1)[1]]["persistent"][topic]["msgInCounter"] == 20
        stored = wait_for(lambda: (r := zk_json(cluster, f"/{group.chroot}/loadbalance/brokers/127.0.0.1:"
                                                         f"{owner.web_port}")) and bundle in r["lastStats"] and r,
                          "the report stored")
        assert stored["pulsarServiceUrl"] == owner.service_url and stored["numBundles"] >= 1
        wait_for(lambda: zk_json(cluster, f"/{group.chroot}/loadbalance/bundle-data/{bundle}"),
                 "the leader stores the bundle's data")
    finally:
        client.close()


def test_placement_follows_load(group):
    """While one broker carries traffic, the first bundle of each new namespace goes to the other."""
    a, b = group.brokers
    create_namespace(a, "public/lb-busy")
    busy_topic = topics_in_distinct_bundles("public/lb-busy", 1, "busy")[0]
    client = pulsar.Client(a.service_url, operation_timeout_seconds=30)
    stop = threading.Event()
    try:
        producer = client.create_producer(busy_topic, batching_enabled=False, block_if_queue_full=True)
        busy = owner_of(a, busy_topic)
        idle = next(x.service_url for x in group.brokers if x.service_url != busy)

        def traffic():
            while not stop.is_set():
                producer.send_async(b"y" * 200, None)
        threading.Thread(target=traffic, daemon=True).start()
        wait_for(lambda: any(r["msgRateIn"] > 200 for r in reports(group)), "the traffic reported")
        time.sleep(2)   # reported by the leader's next reading
        chosen = []
        for n in range(3):
            create_namespace(a, f"public/lb-new-{n}")
            topic = topics_in_distinct_bundles(f"public/lb-new-{n}", 1, "t")[0]
            client.create_producer(topic).close()
            chosen.append(owner_of(a, topic))
        assert chosen == [idle] * 3, (busy, chosen)
    finally:
        stop.set()
        client.close()


def reports(group) -> list[dict]:
    return [http("GET", f"{x.web_url}/admin/v2/broker-stats/load-report")[1] for x in group.brokers]


def test_a_namespace_with_many_topics_is_split_and_every_topic_still_served(group):
    a, _ = group.brokers
    create_namespace(a, "public/lb-auto")
    topics = [f"persistent://public/lb-auto/t-{i}" for i in range(24)]   # about 6 a bundle, over 4
    client = pulsar.Client(a.service_url, operation_timeout_seconds=60)
    try:
        producers = [client.create_producer(t, batching_enabled=False) for t in topics]
        for topic, producer in zip(topics, producers):
            producer.send(f"before:{topic}".encode())
        wait_for(lambda: len(bundles_of(a, "public/lb-auto")) > 5, "the namespace's bundles split")
        for topic, producer in zip(topics, producers):   # the clients reconnected where the topics went
            producer.send(f"during:{topic}".encode())
        round_trip(client, topics, "after")
        for topic in topics:
            reader = client.create_reader(topic, pulsar.MessageId.earliest)
            got = [reader.read_next(timeout_millis=20000).data().decode() for _ in range(3)]
            assert got == [f"before:{topic}", f"during:{topic}", f"after:{topic}"]
            reader.close()
    finally:
        client.close()
    assert len(bundles_of(a, "public/lb-auto")) <= 9   # loadBalancerNamespaceMaximumBundles (+1 boundary)


def test_admin_split_as_pulsar_answers_it(group):
    a, b = group.brokers
    create_namespace(a, "public/lb-split")
    ns = f"{b.web_url}/admin/v2/namespaces/public/lb-split"
    status, _ = http("PUT", f"{ns}/0x00000000_0x40000000/split?unload=true&splitAlgorithmName=range_equally_divide")
    assert status == 204
    assert bundles_of(a, "public/lb-split")[:3] == ["0x00000000", "0x20000000", "0x40000000"]
    topics = three_a_bundle("public/lb-split")   # never past loadBalancerNamespaceBundleMaxTopics (4)
    client = pulsar.Client(a.service_url, operation_timeout_seconds=60)
    try:
        round_trip(client, topics, "first")
        status, _ = http("PUT", f"{ns}/0x40000000_0x80000000/split?splitAlgorithmName=topic_count_equally_divide")
        assert status == 204 and len(bundles_of(b, "public/lb-split")) == 7
        round_trip(client, topics, "second")
    finally:
        client.close()
    assert http("PUT", f"{ns}/0x40000000_0x80000000/split")[0] == 412           # not a bundle any more
    assert http("PUT", f"{ns}/0x80000000_0xc0000000/split?splitAlgorithmName=halves")[0] == 412
    assert http("PUT", f"{b.web_url}/admin/v2/namespaces/public/nope/0x00000000_0x40000000/split")[0] == 404


def three_a_bundle(namespace: str) -> list[str]:
    """Three topics in each of the namespace's 4 first bundles."""
    found: dict[str, list[str]] = {}
    for i in range(1000):
        topic = f"persistent://{namespace}/x-{i}"
        found.setdefault(NamespaceBundles(4).bundle_of(TopicName.parse(topic)).range, []).append(topic)
    return [topic for each in found.values() for topic in each[:3]]


def test_pulsar_admin_leader_load_report_and_split(group, pulsar_admin_classpath, tmp_path):
    a, b = group.brokers
    create_namespace(a, "public/lb-cli")
    conf = tmp_path / "client.conf"
    conf.write_text(f"webServiceUrl={b.web_url}\nbrokerServiceUrl={b.service_url}\n")
    commands = [["brokers", "leader-broker"], ["broker-stats", "load-report"],
                ["namespaces", "split-bundle", "public/lb-cli", "-b", "0xc0000000_0xffffffff", "-u"],
                ["namespaces", "bundles", "public/lb-cli"]]
    out = outputs(commands, run_batch(pulsar_admin_classpath, conf, commands, tmp_path))
    assert a.web_url in out["brokers leader-broker"]
    report = json.loads(out["broker-stats load-report"])   # read by pulsar-admin as LocalBrokerData
    assert report["pulsarServiceUrl"] == b.service_url and "cpu" in report and "lastStats" in report
    assert "0xdfffffff" in out["namespaces bundles public/lb-cli"]   # as Pulsar cuts the last range


@pytest.fixture
def shedding_group(cluster, tmp_path):
    """Brokers whose bandwidth (1 Mbit/s) a little traffic overloads; only bandwidth counts."""
    group = BrokerGroup(cluster, tmp_path, 2, **FAST, loadBalancerOverrideBrokerNicSpeedGbps=0.001,
                        loadBalancerCPUResourceWeight=0, loadBalancerMemoryResourceWeight=0,
                        loadBalancerDirectMemoryResourceWeight=0, loadBalancerSheddingIntervalMinutes=0.05,
                        loadBalancerBundleUnloadMinThroughputThreshold=0, loadBalancerHistoryResourcePercentage=0,
                        loadBalancerAutoBundleSplitEnabled="false")
    try:
        yield group.start()
    finally:
        group.stop()


def test_load_is_shed_off_an_overloaded_broker_and_a_killed_leader_is_replaced(shedding_group):
    a, b = shedding_group.brokers
    create_namespace(a, "public/lb-shed")
    topics = topics_in_distinct_bundles("public/lb-shed", 4, "s")
    client = pulsar.Client(a.service_url, operation_timeout_seconds=60)
    stop, sent = threading.Event(), []
    try:
        for topic in topics:   # the leader spreads the 4 bundles, two a broker
            client.create_producer(topic).close()
        owners = {topic: owner_of(a, topic) for topic in topics}
        busy = owners[topics[0]]
        hot = [t for t in topics if owners[t] == busy]
        assert len(hot) == 2, owners
        consumers = [client.subscribe(t, "s", initial_position=pulsar.InitialPosition.Earliest) for t in hot]
        producers = [client.create_producer(t, batching_enabled=False) for t in hot]

        def traffic():
            n = 0
            while not stop.is_set():
                for producer in producers:
                    producer.send(b"z" * 1000)
                    sent.append(n)
                    n += 1
        thread = threading.Thread(target=traffic, daemon=True)
        thread.start()
        moved = wait_for(lambda: [t for t in hot if owner_of(a, t) != busy], "a hot bundle shed", timeout_s=120)
        assert len(moved) == 1
        stop.set()
        thread.join(timeout=60)
        received = 0
        for consumer in consumers:
            while True:
                try:
                    consumer.acknowledge(consumer.receive(timeout_millis=5000))
                    received += 1
                except pulsar.Timeout:
                    break
        assert received == len(sent)   # sends are synchronous: each one receipted
    finally:
        stop.set()
        client.close()
    a.kill9()
    wait_for(lambda: http("GET", f"{b.web_url}/admin/v2/brokers/leaderBroker")[1].get("brokerId")
             == f"127.0.0.1:{b.web_port}", "B elected once A's session expired")
