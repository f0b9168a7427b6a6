"""Continuous produce and consume on one topic, on threads, for the cluster fault tests: a fault
is injected while it runs, then ``finish()`` drains it and checks what a Pulsar user relies on
with deduplication on: every receipted message is read back, first delivered in the order sent,
and stored once. It also measures the longest pause each side saw (printed, never asserted:
the machine is shared)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import pulsar

#: the namespace policies of a load's topic: deduplication, and retention so that the messages
#: consumed can be read back from the start (acknowledged ledgers are deleted otherwise)
POLICIES = {"deduplication": True,
            "retention": {"retentionTimeInMinutes": 60, "retentionSizeInMB": 1024}}
SEND_INTERVAL_S = 0.01
MAX_OUTSTANDING = 200


@dataclass
class Pauses:
    receipts_s: float
    deliveries_s: float

    def __str__(self) -> str:
        return (f"longest gap between receipts {self.receipts_s:.2f} s, "
                f"between received messages {self.deliveries_s:.2f} s")


@dataclass
class Load:
    client: pulsar.Client
    topic: str
    subscription: str = "load"
    receipts: list[tuple[bytes, float, tuple[int, int]]] = field(default_factory=list)
    failed: list[tuple[bytes, str]] = field(default_factory=list)   # with the client's result
    received: list[tuple[bytes, float]] = field(default_factory=list)
    sent: int = 0

    def __post_init__(self) -> None:
        self._stop_producing = threading.Event()
        self._stop_consuming = threading.Event()
        self._threads: list[threading.Thread] = []
        self.consumer = self.client.subscribe(self.topic, self.subscription,
                                              consumer_type=pulsar.ConsumerType.Failover)
        self.producer = self.client.create_producer(
            self.topic, producer_name=f"load-{self.subscription}", batching_enabled=False,
            send_timeout_millis=0)   # never given up: the client resends through reconnections

    def start(self) -> Load:
        for target in (self._produce, self._consume):
            thread = threading.Thread(target=target, daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def wait_receipts(self, more: int, timeout: float = 60.0) -> None:
        """Until `more` receipts beyond those there now (the load flows)."""
        target = len(self.receipts) + more
        deadline = time.monotonic() + timeout
        while len(self.receipts) < target:
            assert time.monotonic() < deadline, f"{len(self.receipts)} receipts of {target} in {timeout} s"
            time.sleep(0.05)

    def finish(self, timeout: float = 120.0) -> Pauses:
        """Stop sending, wait for every receipt and delivery, check; the pauses seen."""
        self._stop_producing.set()
        self._threads[0].join()
        deadline = time.monotonic() + timeout
        while len(self.receipts) + len(self.failed) < self.sent:
            assert time.monotonic() < deadline, (
                f"{self.sent - len(self.receipts) - len(self.failed)} sends never answered")
            time.sleep(0.05)
        receipted = [value for value, _, _ in self.receipts]
        wanted = set(receipted)
        while not wanted <= {value for value, _ in self.received}:
            assert time.monotonic() < deadline, (
                f"{len(wanted - {v for v, _ in self.received})} receipted messages never received")
            time.sleep(0.1)
        self._stop_consuming.set()
        self._threads[1].join()
        assert not self.failed, f"{len(self.failed)} sends failed: {self.failed[:3]}..{self.failed[-3:]}"
        firsts = list(dict.fromkeys(value for value, _ in self.received))
        assert [v for v in firsts if v in wanted] == receipted, "first deliveries in receipt order"
        assert receipted == sorted(receipted), "receipted in the order sent"
        stored = read_back(self.client, self.topic)
        assert len(stored) == len(set(stored)), f"stored twice: {len(stored) - len(set(stored))}"
        assert stored == sorted(stored), "stored in the order sent"
        missing = sorted(wanted - set(stored))
        assert not missing, f"{len(missing)} receipted not read back: {missing[:3]}..{missing[-3:]} " \
                            f"of {len(stored)} stored, {stored[:1]}..{stored[-1:]}"
        return self.pauses()

    def pauses(self, since: float = 0.0, until: float = float("inf")) -> Pauses:
        """The longest gaps between receipts, and between first deliveries, in a time window."""
        def within(times: list[float]) -> list[float]:
            return [t for t in times if since <= t <= until]
        return Pauses(longest_gap(within([t for _, t, _ in self.receipts])),
                      longest_gap(within([t for _, t in self._first_deliveries()])))

    def redelivered(self) -> int:
        """Deliveries beyond the first, of messages the consumer had acknowledged."""
        return len(self.received) - len({value for value, _ in self.received})

    def close(self) -> None:
        self._stop_producing.set()
        self._stop_consuming.set()
        for thread in self._threads:
            thread.join(timeout=30)

    # ---- threads -----------------------------------------------------------------------

    def _produce(self) -> None:
        while not self._stop_producing.is_set():
            if self.sent - len(self.receipts) - len(self.failed) >= MAX_OUTSTANDING:
                time.sleep(SEND_INTERVAL_S)
                continue
            value = f"m-{self.sent:07d}".encode()
            self.sent += 1
            self.producer.send_async(value, lambda result, msg_id, value=value: self._receipt(value, result, msg_id))
            time.sleep(SEND_INTERVAL_S)

    def _receipt(self, value: bytes, result: pulsar.Result, msg_id: pulsar.MessageId) -> None:
        if result == pulsar.Result.Ok:
            self.receipts.append((value, time.monotonic(), (msg_id.ledger_id(), msg_id.entry_id())))
        else:
            self.failed.append((value, str(result)))

    def _consume(self) -> None:
        while not self._stop_consuming.is_set():
            try:
                message = self.consumer.receive(timeout_millis=200)
            except pulsar.Timeout:
                continue
            self.received.append((message.data(), time.monotonic()))
            self.consumer.acknowledge(message)

    def _first_deliveries(self) -> list[tuple[bytes, float]]:
        seen: dict[bytes, float] = {}
        for value, at in self.received:
            seen.setdefault(value, at)
        return list(seen.items())


def client_of(group) -> pulsar.Client:
    """A client given every broker of a BrokerGroup (lookups go to any of them)."""
    hosts = ",".join(f"127.0.0.1:{broker.broker_port}" for broker in group.brokers)
    return pulsar.Client(f"pulsar://{hosts}", operation_timeout_seconds=30,
                         logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))


def longest_gap(times: list[float]) -> float:
    return max((b - a for a, b in zip(times, times[1:])), default=0.0)


def read_back(client: pulsar.Client, topic: str) -> list[bytes]:
    """Every value stored in the topic, from the earliest."""
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    try:
        values = []
        while reader.has_message_available():
            values.append(reader.read_next(timeout_millis=30000).data())
        return values
    finally:
        reader.close()


def serves_again(client: pulsar.Client, topic: str) -> None:
    """A new producer and reader on the topic work (the brokers serve after the fault)."""
    producer = client.create_producer(topic, batching_enabled=False)
    message_id = producer.send(b"after the fault")
    producer.close()
    reader = client.create_reader(topic, message_id, start_message_id_inclusive=True)
    try:
        assert reader.read_next(timeout_millis=30000).data() == b"after the fault"
    finally:
        reader.close()


def problems_logged(broker, since: int) -> list[str]:
    """ERROR / CRITICAL lines the broker logged after byte offset `since`; none may be a
    traceback (an expected condition is one line)."""
    log = broker.log_path.read_bytes()[since:].decode(errors="replace")
    assert "Traceback" not in log, log[-6000:]
    return [line for line in log.splitlines() if " ERROR " in line or " CRITICAL " in line]
