"""Persistence policies on real bookies: a topic's ledgers are created with the ensemble and
quorums in force (topic > namespace > managedLedgerDefault*), and a change applies from the
topic's next ledger (rollover or reload), as Pulsar applies its ManagedLedgerConfig. One broker
on the session's ZooKeeper + 3 bookies; every message is read back by the official client."""

from __future__ import annotations

import time

import pulsar
import pytest

from compat_tests.cluster_brokers import BrokerGroup, http, ledger_metadata

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(180)]

ENTRIES_PER_LEDGER = 3


def persistence(ensemble: int, write: int, ack: int) -> dict:
    return {"bookkeeperEnsemble": ensemble, "bookkeeperWriteQuorum": write, "bookkeeperAckQuorum": ack,
            "managedLedgerMaxMarkDeleteRate": 1.0}


def replication(cluster, broker, topic: str, index: int = -1) -> tuple[int, int, int]:
    metadata = ledger_metadata(cluster, broker, topic, index)
    assert len(metadata.last_ensemble) == metadata.ensemble_size
    return metadata.ensemble_size, metadata.write_quorum, metadata.ack_quorum


def ledgers_of(broker, topic: str) -> int:
    local = topic.rsplit("/", 1)[1]
    namespace = topic.removeprefix("persistent://").rsplit("/", 1)[0]
    status, stats = http("GET", f"{broker.web_url}/admin/v2/persistent/{namespace}/{local}/internalStats")
    assert status == 200, stats
    return len(stats["ledgers"])


def test_ledgers_are_replicated_as_the_policy_in_force_says(cluster, tmp_path):
    group = BrokerGroup(cluster, tmp_path, 1, managedLedgerMaxEntriesPerLedger=ENTRIES_PER_LEDGER,
                        managedLedgerMinLedgerRolloverTimeMinutes=0)
    try:
        (broker,) = group.start().brokers
        web = broker.web_url
        assert http("PUT", f"{web}/admin/v2/namespaces/public/durable", {})[0] == 204
        assert http("POST", f"{web}/admin/v2/namespaces/public/durable/persistence", persistence(2, 2, 1))[0] == 204
        topic, plain = "persistent://public/durable/replicated", "persistent://public/default/plain"
        for name in (topic, plain):
            local = name.removeprefix("persistent://")
            assert http("PUT", f"{web}/admin/v2/persistent/{local}")[0] == 204
        assert replication(cluster, broker, plain) == (3, 2, 2)     # the broker's defaults
        assert replication(cluster, broker, topic) == (2, 2, 1)     # the namespace's

        own = f"{web}/admin/v2/persistent/public/durable/replicated/persistence"
        assert http("POST", own, persistence(3, 3, 3))[0] == 204
        deadline = time.monotonic() + 10
        while http("GET", own)[1] != persistence(3, 3, 3):
            assert time.monotonic() < deadline
            time.sleep(0.1)
        client = pulsar.Client(broker.service_url, operation_timeout_seconds=30)
        try:
            consumer = client.subscribe(topic, "keeps-the-ledgers")   # unacknowledged: nothing trimmed
            producer = client.create_producer(topic, batching_enabled=False)
            sent = [f"m-{i}".encode() for i in range(ENTRIES_PER_LEDGER + 1)]
            for body in sent:
                producer.send(body)
            assert [consumer.receive(timeout_millis=20000).data() for _ in sent] == sent
        finally:
            client.close()
        assert ledgers_of(broker, topic) == 2
        assert replication(cluster, broker, topic, 0) == (2, 2, 1)    # written before the change
        assert replication(cluster, broker, topic) == (3, 3, 3)       # the next ledger: the topic's
    finally:
        group.stop()
