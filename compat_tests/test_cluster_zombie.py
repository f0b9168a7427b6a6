"""A broker paused past its ZooKeeper session (a zombie), resumed, then given its topic back.

Broker A serves a deduplicated topic; SIGSTOP holds it past metadataStoreSessionTimeoutMillis
while a producer keeps sending, so B takes the topic over (fencing A's ledger). Resumed, A must
drop the topic and all its state; handed the topic back later, it must open it afresh from what
B stored: sends receipted again, every receipted message read once and in order from the ledgers
of both brokers, at the position its receipt named, and no ledger written by A after B took over
other than those in the topic's ledger list."""

from __future__ import annotations

import os
import re
import signal
import threading
import time

import pulsar
import pytest
from kazoo.client import KazooClient

from bookkeeper.bk.ledger_metadata import LedgerMetadata, LedgerState
from compat_tests.cluster_brokers import BrokerGroup, http
from compat_tests.test_cluster import BUNDLES, create_namespace, owner_of
from server.topics.topic_name import TopicName

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]

TOPIC = "persistent://public/zombie/orders"
PAUSE_S = 8                 # twice metadataStoreSessionTimeoutMillis (4 s, cluster_brokers.py)
SEND_WAIT_S = 30
MAX_ERROR_LINES = 10
ERROR = re.compile(r" (ERROR|CRITICAL) ")


class Receipts:
    """What the producer sent, and the (ledger, entry) each receipt named."""

    def __init__(self) -> None:
        self.sent: list[bytes] = []
        self.at: dict[bytes, tuple[int, int]] = {}
        self.failed: list[bytes] = []
        self._lock = threading.Lock()

    def send(self, producer: pulsar.Producer, value: bytes) -> None:
        self.sent.append(value)
        producer.send_async(value, lambda result, msg_id: self._done(value, result, msg_id))

    def _done(self, value: bytes, result: pulsar.Result, msg_id: pulsar.MessageId) -> None:
        with self._lock:
            if result == pulsar.Result.Ok:
                self.at[value] = (msg_id.ledger_id(), msg_id.entry_id())
            else:
                self.failed.append(value)

    def wait_for(self, values: list[bytes], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(v in self.at or v in self.failed for v in values):
                return True
            time.sleep(0.05)
        return False


def test_a_broker_resumed_after_its_session_expired_serves_its_topic_afresh(cluster, tmp_path):
    group = BrokerGroup(cluster, tmp_path, 2, brokerDeleteInactiveTopicsEnabled=False).start()
    a, b = group.brokers
    ledgers_before = bookkeeper_ledgers(cluster)
    create_namespace(a, "public/zombie", deduplication=True)
    name = TopicName.parse(TOPIC)
    status, body = http("GET", f"{a.web_url}/lookup/v2/topic/persistent/public/zombie/orders?authoritative=true")
    assert status == 200 and body["brokerUrl"] == a.service_url, body
    client = pulsar.Client(b.service_url, operation_timeout_seconds=10,   # lookups through B
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    receipts = Receipts()
    stopped = False
    try:
        producer = client.create_producer(TOPIC, producer_name="zombie-test", batching_enabled=False,
                                          send_timeout_millis=0)
        for i in range(20):
            receipts.send(producer, f"m-{i:04d}".encode())
        assert receipts.wait_for(receipts.sent, SEND_WAIT_S) and len(receipts.at) == 20
        a_log_offset = a.log_path.stat().st_size
        os.kill(a.pid, signal.SIGSTOP)
        stopped = True
        paused_at = time.monotonic()
        i = 20
        while time.monotonic() - paused_at < PAUSE_S:   # queued at A, then resent to B
            receipts.send(producer, f"m-{i:04d}".encode())
            i += 1
            time.sleep(0.05)
        assert owner_of(b, TOPIC) == b.service_url, "B took the topic over"
        os.kill(a.pid, signal.SIGCONT)
        stopped = False
        assert receipts.wait_for(receipts.sent, SEND_WAIT_S), "sends during the pause receipted by B"
        failover_s = max(0.0, time.monotonic() - paused_at - PAUSE_S)
        print(f"failover: all sends of the pause receipted {failover_s:.1f} s after SIGCONT")

        move_back_to(a, b, name)
        tail = [f"m-{j:04d}".encode() for j in range(i, i + 20)]
        for value in tail:
            receipts.send(producer, value)
        assert receipts.wait_for(tail, SEND_WAIT_S), (
            f"A answered {sum(v in receipts.at for v in tail)} of 20 sends in {SEND_WAIT_S} s")
        assert owner_of(b, TOPIC) == a.service_url
        assert not receipts.failed, receipts.failed

        stored = read_positions(client)
        values = [value for value, _ in stored]
        assert len(values) == len(set(values)), "nothing stored twice"
        assert values == sorted(values), "stored in the order sent"
        positions = dict(stored)
        for value, at in receipts.at.items():   # within what the new owner sealed, where receipted
            assert positions.get(value) == at, (value, at, positions.get(value))

        final_ledgers = topic_ledgers(a, name)
        for ledger_id, meta in bookkeeper_ledgers(cluster).items():
            if ledger_id not in ledgers_before and ledger_id not in final_ledgers:
                assert meta.state is LedgerState.CLOSED and meta.last_entry_id < 0, (
                    f"ledger {ledger_id} outside the topic's list holds entries: {meta}")

        log = a.log_path.read_bytes()[a_log_offset:].decode(errors="replace")
        errors = [line for line in log.splitlines() if ERROR.search(line)]
        assert "Traceback" not in log, log[-6000:]
        assert len(errors) <= MAX_ERROR_LINES, f"{len(errors)} ERROR lines:\n" + "\n".join(errors[-40:])
    finally:
        if stopped:
            os.kill(a.pid, signal.SIGCONT)
        client.close()
        group.stop()


def move_back_to(a, b, name: TopicName) -> None:
    """Unload the topic's bundle at B, and have A take it (authoritative lookup), until A has it."""
    bundle = BUNDLES.bundle_of(name).range
    lookup = f"{a.web_url}/lookup/v2/topic/persistent/{name.namespace}/{name.local_name}?authoritative=true"
    for _ in range(20):
        status, body = http("PUT", f"{b.web_url}/admin/v2/namespaces/{name.namespace}/{bundle}/unload")
        assert status in (204, 404, 412), body
        status, body = http("GET", lookup)
        if status == 200 and body["brokerUrl"] == a.service_url:
            return
        time.sleep(0.5)
    raise AssertionError("the topic never went back to A")


def read_positions(client: pulsar.Client) -> list[tuple[bytes, tuple[int, int]]]:
    reader = client.create_reader(TOPIC, pulsar.MessageId.earliest)
    stored = []
    while reader.has_message_available():
        message = reader.read_next(timeout_millis=20000)
        stored.append((message.data(), (message.message_id().ledger_id(), message.message_id().entry_id())))
    reader.close()
    return stored


def topic_ledgers(broker, name: TopicName) -> set[int]:
    """The ledgers of the topic's managed ledger, and its cursors' ledgers."""
    status, stats = http("GET", f"{broker.web_url}/admin/v2/persistent/{name.namespace}/{name.local_name}/internalStats")
    assert status == 200, stats
    return ({ledger["ledgerId"] for ledger in stats["ledgers"]}
            | {cursor["cursorLedger"] for cursor in stats["cursors"].values()})


def bookkeeper_ledgers(cluster) -> dict[int, LedgerMetadata]:
    """Every ledger of the test cluster, by id, from BookKeeper's metadata in ZooKeeper."""
    zk = KazooClient(hosts=cluster.zk_address)
    zk.start(timeout=30)
    found: dict[int, LedgerMetadata] = {}
    try:
        def walk(path: str) -> None:
            for child in zk.get_children(path):
                if child.startswith("L") and child[1:].isdigit():
                    ledger_id = int(path.replace("/ledgers", "").replace("/", "") + child[1:])
                    found[ledger_id] = LedgerMetadata.decode(zk.get(f"{path}/{child}")[0])
                elif child.isdigit():
                    walk(f"{path}/{child}")
        walk("/ledgers")
    finally:
        zk.stop()
        zk.close()
    return found
