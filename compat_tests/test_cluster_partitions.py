"""A broker cut off from ZooKeeper but not from the bookies, and the reverse (issue 28), under
produce / consume load with deduplication on, by proxies the test owns (tcp_proxy.py).

- Cut from ZooKeeper past its session timeout, broker A takes its session as lost (ZooKeeper
  has expired it, and B may own A's bundles already): it stops serving its topics, and the
  clients move to B, which fences A's ledgers. Healed, A registers again and serves.
- Cut from the bookies (A runs in a network namespace of its own, its every connection through
  a proxy; the one to ZooKeeper stays up), then its connections to them reset: the writes fail
  and are retried by the client, none receipted meanwhile; healed, writes go on.

Either way every receipted message is read back once, in order, at the position its receipt
named, and no ledger outside the topic's list holds an entry."""

from __future__ import annotations

import contextlib
import time
from typing import Iterator

import pulsar
import pytest

from compat_tests.cluster_brokers import BrokerGroup, http
from compat_tests.cluster_load import POLICIES, Load, client_of, problems_logged, serves_again
from compat_tests.tcp_proxy import NetworkNamespace, TcpProxy
from compat_tests.test_cluster import create_namespace, owner_of
from compat_tests.test_cluster_zombie import bookkeeper_ledgers, topic_ledgers
from server.topics.topic_name import TopicName

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]

SESSION_S = 4                # metadataStoreSessionTimeoutMillis (cluster_brokers.py)
BOOKIE_TIMEOUT_S = 5        # bookkeeperClientTimeoutInSeconds (Pulsar's default 30 s)
CUT_S = 15                   # past it: the adds fail, and are retried
RECEIPT_LAG_S = 3            # a receipt the client got before the cut may reach its callback late
MAX_ERROR_LINES = 10


def owned_by(broker, topic: str) -> None:
    name = TopicName.parse(topic)
    status, body = http("GET", f"{broker.web_url}/lookup/v2/topic/persistent/{name.namespace}/"
                               f"{name.local_name}?authoritative=true")
    assert status == 200 and body["brokerUrl"] == broker.service_url, body


def no_stray_entries(cluster, broker, topic: str, before: set[int]) -> None:
    """No ledger made during the test outside the topic's ledger list holds an entry (none
    written after another broker sealed it, nor a receipt given from it)."""
    listed = topic_ledgers(broker, TopicName.parse(topic))
    for ledger_id, meta in bookkeeper_ledgers(cluster).items():
        if ledger_id not in before and ledger_id not in listed:
            assert meta.last_entry_id < 0, f"ledger {ledger_id} outside the topic's list: {meta}"


@contextlib.contextmanager
def zookeeper_through_a_proxy(cluster, tmp_path) -> Iterator[tuple[TcpProxy, BrokerGroup, pulsar.Client]]:
    """Brokers A and B, A reaching ZooKeeper (for its metadata and the bookies') only through
    the proxy; a client of both."""
    proxy = TcpProxy(cluster.zk_port)
    group = BrokerGroup(cluster, tmp_path, 2, brokerDeleteInactiveTopicsEnabled=False)
    a = group.brokers[0]
    a.config_path.write_text(a.config_path.read_text().replace(cluster.zk_address, f"127.0.0.1:{proxy.port}"))
    client = None
    try:
        group.start()
        client = client_of(group)
        yield proxy, group, client
    finally:
        proxy.heal()
        if client is not None:
            client.close()
        group.stop()
        proxy.stop()


def test_broker_cut_off_from_zookeeper_past_its_session(cluster, tmp_path):
    with zookeeper_through_a_proxy(cluster, tmp_path) as (proxy, group, client):
        a, b = group.brokers
        create_namespace(a, "public/cut-zk", **POLICIES)
        topic = "persistent://public/cut-zk/load"
        before = set(bookkeeper_ledgers(cluster))
        load = None
        try:
            owned_by(a, topic)
            load = Load(client, topic).start()
            load.wait_receipts(100)
            offset = a.log_path.stat().st_size
            proxy.blackhole()
            cut_at = time.monotonic()
            while owner_of(b, topic) != b.service_url:   # A's node goes when ZooKeeper expires it
                assert time.monotonic() - cut_at < 60, "B never took the topic"
                time.sleep(0.5)
            load.wait_receipts(100, timeout=90)
            moved_s = time.monotonic() - cut_at
            while "its session is taken as lost" not in a.log_path.read_bytes()[offset:].decode(errors="replace"):
                assert time.monotonic() - cut_at < 5 * SESSION_S, "A never gave its session up"
                time.sleep(0.2)
            proxy.heal()
            load.wait_receipts(100)
            pauses = load.finish()
            print(f"cut from ZooKeeper: clients served by B again {moved_s:.1f} s after the cut; "
                  f"{len(load.receipts)} receipted, {load.redelivered()} redelivered; {pauses}")
            no_stray_entries(cluster, b, topic, before)
            registered = lambda: sorted(http("GET", f"{b.web_url}/admin/v2/brokers/pulsard-cluster")[1])  # noqa: E731
            deadline = time.monotonic() + 30
            while registered() != sorted(f"127.0.0.1:{x.web_port}" for x in group.brokers):
                assert time.monotonic() < deadline, f"A never registered again: {registered()}"
                time.sleep(0.5)
            assert a.is_running()
            errors = problems_logged(a, offset)
            assert len(errors) <= MAX_ERROR_LINES, "\n".join(errors[-40:])
            only_a = pulsar.Client(a.service_url)
            try:
                serves_again(only_a, "persistent://public/cut-zk/after")
            finally:
                only_a.close()
        finally:
            if load is not None:
                load.close()


def test_acks_made_before_the_session_loss_are_not_redelivered(cluster, tmp_path):
    """Acknowledged while A is cut off from ZooKeeper (but not from the bookies), before it
    takes its session as lost: stored in the cursor's ledger, so B, taking the topic over,
    redelivers only what was not acknowledged."""
    with zookeeper_through_a_proxy(cluster, tmp_path) as (proxy, group, client):
        a, b = group.brokers
        create_namespace(a, "public/cut-acks", **POLICIES)
        topic = "persistent://public/cut-acks/acks"
        owned_by(a, topic)
        consumer = client.subscribe(topic, "acks", consumer_type=pulsar.ConsumerType.Failover)
        producer = client.create_producer(topic, batching_enabled=False)
        sent = [f"m-{i:03d}".encode() for i in range(100)]
        for value in sent:
            producer.send(value)
        received = [consumer.receive(timeout_millis=30000) for _ in sent]
        proxy.blackhole()
        for message in received[:60]:
            consumer.acknowledge(message)
        redelivered = []
        while len(set(redelivered)) < 40:   # from B, once A let the topic go
            redelivered.append(consumer.receive(timeout_millis=60000).data())
        assert owner_of(b, topic) == b.service_url
        assert min(redelivered) == sent[60] and set(redelivered) == set(sent[60:]), redelivered[:5]


def test_broker_cut_off_from_the_bookies_but_not_zookeeper(cluster, tmp_path):
    namespace = NetworkNamespace()
    group = BrokerGroup(cluster, tmp_path, 2, brokerDeleteInactiveTopicsEnabled=False,
                        bookkeeperClientTimeoutInSeconds=BOOKIE_TIMEOUT_S)
    a, b = group.brokers
    a.command_prefix = namespace.command([])
    # A's loopback is its own: its peers are reached through proxies on the same ports
    to_bookies = [TcpProxy(bookie.port, bookie.port, listen_ns=namespace) for bookie in cluster.bookie_list]
    proxies = [*to_bookies, *(TcpProxy(port, port, listen_ns=namespace)
                               for port in (cluster.zk_port, b.broker_port, b.web_port)),
               *(TcpProxy(port, port, target_ns=namespace) for port in (a.broker_port, a.web_port))]
    client = None
    load = None
    try:
        group.start()
        client = client_of(group)
        create_namespace(a, "public/cut-bookies", **POLICIES)
        topic = "persistent://public/cut-bookies/load"
        before = set(bookkeeper_ledgers(cluster))
        owned_by(a, topic)
        load = Load(client, topic).start()
        load.wait_receipts(100)
        offset = a.log_path.stat().st_size
        for proxy in to_bookies:
            proxy.blackhole()
        cut_at = time.monotonic()
        time.sleep(CUT_S)
        healed_at = time.monotonic()
        for proxy in to_bookies:   # the connections held meanwhile are reset, as a firewall
            proxy.reset()          # that forgot them would: the broker connects anew
            proxy.heal()
        load.wait_receipts(100, timeout=90)
        resumed_s = load.receipts[-100][1] - healed_at
        pauses = load.finish()
        during = [value for value, at, _ in load.receipts if cut_at + RECEIPT_LAG_S < at < healed_at]
        assert not during, f"{len(during)} receipted while no bookie could be reached"
        print(f"cut from the bookies {CUT_S} s: writes receipted again {resumed_s:.1f} s after the "
              f"heal; {len(load.receipts)} receipted, {load.redelivered()} redelivered; {pauses}")
        no_stray_entries(cluster, a, topic, before)
        assert a.is_running() and owner_of(b, topic) == a.service_url
        errors = problems_logged(a, offset)
        assert len(errors) <= MAX_ERROR_LINES, "\n".join(errors[-40:])
        serves_again(client, topic)
    finally:
        for proxy in to_bookies:
            proxy.heal()
        if load is not None:
            load.close()
        if client is not None:
            client.close()
        group.stop()
        for proxy in proxies:
            proxy.stop()
        namespace.delete()
