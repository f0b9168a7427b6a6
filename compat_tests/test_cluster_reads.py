"""Reads that degrade, not stall (issue 28): E=3, Qw=2, Qa=2 over 4 real bookies, entries
written, then bookies killed with kill -9 while nothing re-replicates. Each entry is read from
whichever bookie of its write set answers; an entry left with no copy is skipped only with
autoSkipNonRecoverableData=true, and otherwise holds the subscription there (as Apache Pulsar),
after everything before it was delivered, with one log line per interval and no traceback;
/metrics counts the lost entries found and skipped, internalStats shows where a cursor is held."""

from __future__ import annotations

import time

import pulsar
import pytest

from bookkeeper.bk.placement import write_set
from bookkeeper.tests.cluster_fixture import dedicated_cluster
from compat_tests.cluster_brokers import BrokerGroup, http, ledger_ensemble
from compat_tests.helpers import metric
from server.topics.topic_name import TopicName

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(420)]

MESSAGES = 300
QUORUMS = {"managedLedgerDefaultEnsembleSize": 3, "managedLedgerDefaultWriteQuorum": 2,
           "managedLedgerDefaultAckQuorum": 2, "managedLedgerCacheSizeMB": 0}


@pytest.fixture(scope="module")
def four_bookies(request, tmp_path_factory):
    with dedicated_cluster(request, tmp_path_factory, bookies=4, auto_recovery=False) as own:
        yield own


def produce(client: pulsar.Client, topic: str) -> dict[int, bytes]:
    """entry id -> value of MESSAGES receipted messages, one per entry."""
    producer = client.create_producer(topic, batching_enabled=False)
    stored = {}
    for i in range(MESSAGES):
        value = f"m-{i:04d}".encode()
        stored[producer.send(value).entry_id()] = value
    producer.close()
    return stored


def read_all(client: pulsar.Client, topic: str, count: int, quiet_s: float = 5.0) -> list[bytes]:
    """The first count values a reader from the earliest gets, then checks nothing else comes."""
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    try:
        values = [reader.read_next(timeout_millis=60_000).data() for _ in range(count)]
        with pytest.raises(pulsar.Timeout):
            extra = reader.read_next(timeout_millis=int(quiet_s * 1000))
            values.append(extra.data())
        return values
    finally:
        reader.close()


def lost_entries(ensemble: list[str], killed: set[str], entries: int) -> set[int]:
    return {e for e in range(entries)
            if {ensemble[i] for i in write_set(e, len(ensemble), 2)} <= killed}


def assert_lost_metrics(broker, topic: str, found: int, skipped: int) -> None:
    assert metric(broker, "pulsard_lost_entries_found_total", topic) == found
    assert metric(broker, "pulsard_lost_entries_skipped_total", topic) == skipped


def held_at(broker, topic: str, subscription: str) -> str:
    """The subscription's heldAtLostEntry in internalStats, once it is held (within 30 s)."""
    name = TopicName.parse(topic)
    url = f"{broker.web_url}/admin/v2/persistent/{name.namespace}/{name.local_name}/internalStats"
    deadline = time.monotonic() + 30
    while True:
        status, stats = http("GET", url)
        assert status == 200, stats
        cursor = stats["cursors"][subscription]
        if cursor["heldAtLostEntry"]:
            assert cursor["lostEntriesSkipped"] == 0
            return cursor["heldAtLostEntry"]
        assert time.monotonic() < deadline, cursor
        time.sleep(0.2)


def test_reads_go_on_past_dead_bookies(four_bookies, tmp_path):
    """One broker skips what is lost (autoSkipNonRecoverableData=true), one does not (default)."""
    cluster = four_bookies
    skipping = BrokerGroup(cluster, tmp_path / "skip", 1, autoSkipNonRecoverableData="true", **QUORUMS).start()
    # retried every 1-2 s (not Pulsar's 15 s first wait): the log still has one line per 10 s
    holding = BrokerGroup(cluster, tmp_path / "hold", 1, dispatcherReadFailureBackoffInitialTimeInMs=1000,
                          dispatcherReadFailureBackoffMaxTimeInMs=2000, **QUORUMS).start()
    clients = {name: pulsar.Client(group.brokers[0].service_url, operation_timeout_seconds=30)
               for name, group in (("skip", skipping), ("hold", holding))}
    topic = "persistent://public/default/degraded-reads"
    killed: list[int] = []
    try:
        stored = {name: produce(client, topic) for name, client in clients.items()}
        ensembles = {name: ledger_ensemble(cluster, group.brokers[0], topic)
                     for name, group in (("skip", skipping), ("hold", holding))}
        # two bookies in both ensembles: each topic loses the entries whose two copies were there
        victims = [b for b in cluster.bookie_list
                   if b.bookie_id in ensembles["skip"] and b.bookie_id in ensembles["hold"]][:2]

        cluster.kill_bookie(cluster.bookie_list.index(victims[0]))
        killed.append(cluster.bookie_list.index(victims[0]))
        for name, client in clients.items():   # one bookie down: every entry has a copy left
            assert read_all(client, topic, MESSAGES, quiet_s=2) == [stored[name][e] for e in sorted(stored[name])]

        cluster.kill_bookie(cluster.bookie_list.index(victims[1]))
        killed.append(cluster.bookie_list.index(victims[1]))
        dead = {b.bookie_id for b in victims}

        lost = lost_entries(ensembles["skip"], dead, MESSAGES)
        assert 0 < len(lost) < MESSAGES
        kept = [stored["skip"][e] for e in sorted(stored["skip"]) if e not in lost]
        assert read_all(clients["skip"], topic, len(kept)) == kept

        first_lost = min(lost_entries(ensembles["hold"], dead, MESSAGES))
        before = [stored["hold"][e] for e in sorted(stored["hold"]) if e < first_lost]
        started = time.monotonic()
        assert read_all(clients["hold"], topic, len(before), quiet_s=8) == before
        waited = time.monotonic() - started
        log = holding.brokers[0].log_path.read_text(errors="replace")
        assert "Traceback" not in log
        failures = [line for line in log.splitlines() if "retrying in" in line]
        assert 1 <= len(failures) <= 2 + waited / 10, failures   # one line per 10 s interval
        skipped = skipping.brokers[0].log_path.read_text(errors="replace")
        assert "Traceback" not in skipped
        assert "autoSkipNonRecoverableData" in skipped

        # reported, not only logged: /metrics, and the held cursor in internalStats
        assert_lost_metrics(skipping.brokers[0], topic, found=len(lost), skipped=len(lost))
        consumer = clients["hold"].subscribe(topic, "held", initial_position=pulsar.InitialPosition.Earliest)
        assert [consumer.receive(timeout_millis=60_000).data() for _ in before] == before
        assert held_at(holding.brokers[0], topic, "held").endswith(f":{first_lost}")
        consumer.close()
        assert_lost_metrics(holding.brokers[0], topic, found=2, skipped=0)   # the reader's hold, the subscription's
    finally:
        for client in clients.values():
            client.close()
        skipping.stop()
        holding.stop()
        for index in killed:
            cluster.restart_bookie(index)
