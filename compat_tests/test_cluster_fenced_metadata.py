"""A managed ledger whose metadata another broker wrote (a BadVersion on the broker's next
metadata write) is fenced, as in Pulsar: nothing more is written to it, the topic is unloaded so
its clients reconnect, and the topic's next load opens the log afresh, ledgers of both writers
included. The other writer is simulated by rewriting the metadata node in ZooKeeper behind the
broker's back (same content, a new version), the way a second owner's rollover would."""

from __future__ import annotations

import pulsar
import pytest
from kazoo.client import KazooClient

from compat_tests.cluster_brokers import BrokerGroup
from compat_tests.test_cluster import create_namespace
from managed_ledger.metadata import managed_ledger_path

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]

TOPIC = "persistent://public/fenced-metadata/orders"


def test_a_managed_ledger_written_by_another_broker_is_fenced_and_reopened(cluster, tmp_path):
    group = BrokerGroup(cluster, tmp_path, 1, managedLedgerMaxEntriesPerLedger=20,
                        managedLedgerMinLedgerRolloverTimeMinutes=0).start()
    broker = group.brokers[0]
    client = pulsar.Client(broker.service_url, operation_timeout_seconds=30)
    zk = KazooClient(hosts=cluster.zk_address)
    zk.start(timeout=30)
    try:
        create_namespace(broker, "public/fenced-metadata")
        consumer = client.subscribe(TOPIC, "all")
        producer = client.create_producer(TOPIC, batching_enabled=False, send_timeout_millis=60_000)
        sent = [f"m-{i:03d}".encode() for i in range(10)]
        for value in sent:
            producer.send(value)

        node = f"/{group.chroot}{managed_ledger_path(TOPIC)}"
        raw, _ = zk.get(node)
        zk.set(node, raw)   # another writer's version

        more = [f"n-{i:03d}".encode() for i in range(30)]   # crosses a rollover: its write fails
        for value in more:
            producer.send(value)   # each receipted, after the client reconnected if it must
        received = []
        for _ in sent + more:
            message = consumer.receive(timeout_millis=60_000)
            received.append(message.data())
            consumer.acknowledge(message)
        assert received == sent + more
        log = broker.log_path.read_text(errors="replace")
        assert "written by another broker; unloading" in log
        assert "Traceback" not in log
    finally:
        zk.stop()
        zk.close()
        client.close()
        group.stop()
