"""A cluster that heals itself: BookKeeper's own AutoRecovery (the auditor and replication
worker running in each bookie, as the cluster kit starts them) re-replicates pulsard's ledgers
after a bookie is lost, so a second loss later loses nothing receipted.

Four real bookies, E=3 Qw=2 Qa=2. Messages are receipted over several ledgers (closed ones, and
the open one the topic writes), one bookie of the open ledger's ensemble is killed, and the
proof is BookKeeper's: ``BookieShell listunderreplicated`` empties and no ledger's metadata
names the lost bookie; ``decommissionbookie`` then confirms it and drops its cookie. Then a
second original bookie is killed, and every receipted message is still read back, once and in
order; and once a third bookie is back, the topic takes new messages again."""

from __future__ import annotations

import re
import time

import pulsar
import pytest

from bookkeeper.bk.ledger_metadata import LedgerMetadata, ledger_path
from bookkeeper.cluster_kit import LocalCluster
from bookkeeper.tests.cluster_fixture import dedicated_cluster
from compat_tests.cluster_brokers import BrokerGroup, http, ledger_ensemble

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(600)]

MESSAGES = 1500
RECOVERY_BOUND_S = 180
SETTINGS = {"managedLedgerDefaultEnsembleSize": 3, "managedLedgerDefaultWriteQuorum": 2,
            "managedLedgerDefaultAckQuorum": 2, "managedLedgerMaxEntriesPerLedger": 400,
            "managedLedgerMinLedgerRolloverTimeMinutes": 0, "managedLedgerCacheSizeMB": 0,
            "brokerDeduplicationEnabled": "true"}


@pytest.fixture(scope="module")
def four_bookies(request, tmp_path_factory):
    with dedicated_cluster(request, tmp_path_factory, bookies=4) as own:
        yield own


def under_replicated(cluster: LocalCluster) -> int:
    """The count BookKeeper's own ``listunderreplicated`` prints."""
    output = cluster.bookie_shell("listunderreplicated").stdout
    found = re.search(r"Under replicated ledger count: (\d+)", output)
    assert found, output[-2000:]
    return int(found.group(1))


def topic_ledgers(broker, topic: str) -> list[int]:
    name = topic.removeprefix("persistent://")
    status, stats = http("GET", f"{broker.web_url}/admin/v2/persistent/{name}/internalStats")
    assert status == 200, stats
    return [ledger["ledgerId"] for ledger in stats["ledgers"]]


def bookies_named(cluster: LocalCluster, ledger_ids: list[int]) -> set[str]:
    """Every bookie any segment of these ledgers' BookKeeper metadata names."""
    from kazoo.client import KazooClient
    zk = KazooClient(hosts=cluster.zk_address)
    zk.start(timeout=30)
    try:
        named: set[str] = set()
        for ledger_id in ledger_ids:
            raw, _ = zk.get(ledger_path("/ledgers", ledger_id))
            for segment in LedgerMetadata.decode(raw).segments:
                named.update(segment.ensemble)
        return named
    finally:
        zk.stop()
        zk.close()


def wait_recovered(cluster: LocalCluster, lost: str, ledger_ids: list[int]) -> float:
    """Seconds until nothing is under-replicated and no ledger names the lost bookie."""
    started = time.monotonic()
    while True:
        remaining = under_replicated(cluster)
        naming = lost in bookies_named(cluster, ledger_ids)
        if not remaining and not naming:
            return time.monotonic() - started
        assert time.monotonic() - started < RECOVERY_BOUND_S, \
            f"after {RECOVERY_BOUND_S} s: {remaining} ledgers under-replicated, lost bookie named: {naming}"
        time.sleep(2)


def test_lost_bookie_is_re_replicated_and_a_second_loss_loses_nothing(four_bookies, tmp_path):
    cluster = four_bookies
    group = BrokerGroup(cluster, tmp_path, 1, **SETTINGS).start()
    broker = group.brokers[0]
    topic = "persistent://public/default/healed"
    client = pulsar.Client(broker.service_url, operation_timeout_seconds=60)
    try:
        consumer = client.subscribe(topic, "keeps-the-backlog")   # and the ledgers with it
        producer = client.create_producer(topic, batching_enabled=False, producer_name="healer",
                                          block_if_queue_full=True)
        stored = [f"m-{i:05d}".encode() for i in range(MESSAGES)]
        for value in stored:
            producer.send_async(value, None)
        producer.flush()
        ledgers = topic_ledgers(broker, topic)
        assert len(ledgers) >= 3   # closed ledgers and the open one all need healing

        ensemble = ledger_ensemble(cluster, broker, topic)
        first = next(b for b in cluster.bookie_list if b.bookie_id == ensemble[0])
        cluster.kill_bookie(first.index)
        took = wait_recovered(cluster, first.bookie_id, ledgers)
        print(f"\nre-replicated {len(ledgers)} ledgers off {first.bookie_id} in {took:.1f} s")
        # the operator's last step for a bookie that will not come back
        decommissioned = cluster.bookie_shell("decommissionbookie", "-bookieid", first.bookie_id).stdout
        assert "are properly replicated" in decommissioned, decommissioned[-3000:]
        assert "is deleted successfully" in decommissioned, decommissioned[-3000:]

        # the open ledger was fenced by the replication worker: the topic rolls over and goes on
        more = [f"n-{i:05d}".encode() for i in range(100)]
        for value in more:
            producer.send(value)

        second = next(b for b in cluster.bookie_list
                      if b.bookie_id in ensemble and b is not first)
        cluster.kill_bookie(second.index)
        values = []
        for _ in range(MESSAGES + len(more)):
            message = consumer.receive(timeout_millis=60_000)
            values.append(message.data())
            consumer.acknowledge(message)
        assert values == stored + more
        with pytest.raises(pulsar.Timeout):
            consumer.receive(timeout_millis=2000)
        # two of four bookies left are too few for E=3: writes wait for a third to come back
        cluster.restart_bookie(second.index)
        producer.send(b"after both losses")
        assert consumer.receive(timeout_millis=60_000).data() == b"after both losses"
        log = broker.log_path.read_text(errors="replace")
        assert "Traceback" not in log
    finally:
        client.close()
        group.stop()
