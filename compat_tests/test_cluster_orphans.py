"""Orphan ledgers on real bookies (issue 28): a broker killed with SIGKILL right after creating
a topic's first ledger, or the next ledger of a rollover, before its managed ledger records
it, leaves that ledger in ZooKeeper and on the bookies for good; the orphan cleaner of the
restarted broker deletes it, and no ledger a managed ledger lists, nor any of another cluster
on the same bookies, with every receipted message still read by the official client."""

from __future__ import annotations

import sys
import time
from urllib.parse import quote

import pulsar
import pytest
from kazoo.client import KazooClient

from bookkeeper.bk.ledger_metadata import LedgerMetadata, ledger_path
from compat_tests.cluster_brokers import BrokerGroup
from managed_ledger.metadata import ManagedLedgerMetadata

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(240)]

TOPIC = "persistent://public/default/orphans"


def tagged_ledgers(zk: KazooClient, name: str, chroot: str) -> tuple[set[int], set[int]]:
    """Ledger ids whose custom metadata names the managed ledger (Pulsar's tag): those made by
    the brokers of that chroot, and those of others."""
    ours = zk.get(f"/{chroot}/pulsard/storage-id")[0]
    found: tuple[set[int], set[int]] = (set(), set())
    for top in zk.get_children("/ledgers"):
        if not top.isdigit():
            continue
        for middle in zk.get_children(f"/ledgers/{top}"):
            for leaf in zk.get_children(f"/ledgers/{top}/{middle}"):
                ledger_id = int(top + middle + leaf[1:])
                custom = dict(LedgerMetadata.decode(zk.get(ledger_path("/ledgers", ledger_id))[0]).custom)
                if custom.get("pulsar/managed-ledger") == name.encode():
                    found[custom["pulsard/storage-id"] != ours].add(ledger_id)
    return found


def listed_ledgers(zk: KazooClient, chroot: str, name: str) -> set[int]:
    raw, _ = zk.get(f"/{chroot}/managed-ledgers/{quote(name, safe='')}")
    return ManagedLedgerMetadata.decode(raw).ledger_ids()


def receive_all(client: pulsar.Client, count: int) -> list[str]:
    consumer = client.subscribe(TOPIC, "keeps-everything")
    values = [consumer.receive(timeout_millis=30000).data().decode() for _ in range(count)]
    consumer.close()
    return values


@pytest.mark.parametrize("nth", [1, 2], ids=["first-ledger-of-a-new-topic", "rollover"])
def test_a_ledger_orphaned_by_a_kill_is_deleted_and_no_live_one(cluster, tmp_path, monkeypatch, nth):
    group = BrokerGroup(cluster, tmp_path, 1, managedLedgerMaxEntriesPerLedger=5,
                        managedLedgerMinLedgerRolloverTimeMinutes=0,
                        pulsardOrphanLedgerCheckIntervalMinutes=0.03,   # a pass every 1.8 s
                        pulsardOrphanLedgerMinAgeMinutes=0.01)
    broker = group.brokers[0]
    zk = KazooClient(hosts=cluster.zk_address)
    zk.start(timeout=30)
    try:
        # the topic's first ledger is made when it loads, the second by the first rollover
        monkeypatch.setenv("PULSARD_COMMAND", f"{sys.executable} -m compat_tests.crash_broker {TOPIC} {nth}")
        group.start()
        client = pulsar.Client(broker.service_url, operation_timeout_seconds=10)
        sent: list[str] = []
        if nth == 1:
            with pytest.raises(pulsar.PulsarException):
                client.subscribe(TOPIC, "keeps-everything")
        else:
            client.subscribe(TOPIC, "keeps-everything").close()   # its backlog keeps every ledger
            producer = client.create_producer(TOPIC, batching_enabled=False, send_timeout_millis=0)
            sent = [f"before-{i}" for i in range(5)]
            for value in sent:
                producer.send(value.encode())
        broker.proc.wait(timeout=60)          # killed right after making the ledger
        assert "CRASH after creating ledger" in broker.log_tail()
        client.close()
        ours, others = tagged_ledgers(zk, TOPIC, group.chroot)   # others': the same topic's, of other clusters
        (orphan,) = ours - listed_ledgers(zk, group.chroot, TOPIC)

        monkeypatch.delenv("PULSARD_COMMAND")
        broker.start(timeout=60)
        client = pulsar.Client(broker.service_url, operation_timeout_seconds=60)
        client.subscribe(TOPIC, "keeps-everything").close()
        producer = client.create_producer(TOPIC, batching_enabled=False, send_timeout_millis=0)
        deadline = time.monotonic() + 90
        i = 0
        while zk.exists(ledger_path("/ledgers", orphan)) is not None:   # rollovers go on meanwhile
            assert time.monotonic() < deadline, "the orphan ledger was never deleted"
            value = f"after-{i}"
            producer.send(value.encode())
            sent.append(value)
            i += 1
            time.sleep(0.05)
        time.sleep(4)   # two more passes of the cleaner over the live ledgers
        listed = listed_ledgers(zk, group.chroot, TOPIC)
        assert orphan not in listed and len(listed) >= 2
        assert all(zk.exists(ledger_path("/ledgers", ledger_id)) for ledger_id in listed | others)
        assert receive_all(client, len(sent)) == sent
        client.close()
    finally:
        zk.stop()
        zk.close()
        group.stop()
