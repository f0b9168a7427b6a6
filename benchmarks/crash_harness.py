"""Crash harness: producers (deduplication on) and a consumer run while the broker is killed
with SIGKILL at random instants and restarted.

After every cycle it checks, with a reader from the earliest position:
- every message the broker receipted is there exactly once, and each producer's messages are
  in the order it sent them (no duplicate, even for sends the client retried after the crash);
- messages the consumer acknowledged are not delivered again, except those acknowledged from
  ACK_BOUND_S before a kill until ACK_BOUND_S after the broker is ready again (the documented
  crash bound: the client groups acks for up to 100 ms, the broker persists a cursor
  managedLedgerCursorFlushIntervalMs = 200 ms after an ack, and at most
  managedLedgerDefaultMarkDeleteRateLimit = 1 time a second; and an ack the application makes
  while its client is disconnected, on a message from the client's receive queue, is lost by
  the client).

    python benchmarks/crash_harness.py [--cycles 20] [--producers 3] [--seed N]

prints one line per cycle and the totals; exits 1 on the first violation. compat_tests/
test_crash_harness.py runs a few cycles in CI.
"""

from __future__ import annotations

import argparse
import random
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pulsar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks import crash_cycles  # noqa: E402
from benchmarks.crash_cycles import Outage, kill_cycles  # noqa: E402
from compat_tests.broker import Broker  # noqa: E402

CONFIG = {
    "brokerDeduplicationEnabled": "true",
    "defaultRetentionTimeInMinutes": -1,      # keep everything, so the check can read it all
    "defaultRetentionSizeInMB": -1,
}
ACK_BOUND_S = 1.5
TOPIC = "persistent://public/default/crash-harness"
SUBSCRIPTION = "harness"


@dataclass
class Ledger:
    """What the clients saw: receipts per producer, and acknowledgement times per message."""

    receipted: dict[str, set[int]] = field(default_factory=dict)
    acked_at: dict[bytes, float] = field(default_factory=dict)
    redelivered_acked: list[bytes] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class Producing(threading.Thread):
    """One producer sending `name:n` for n = 0, 1, ... until stopped; records receipts."""

    def __init__(self, client: pulsar.Client, name: str, seen: Ledger, start_at: int) -> None:
        super().__init__(daemon=True)
        self.producer = client.create_producer(TOPIC, producer_name=name, batching_enabled=False,
                                               send_timeout_millis=0, block_if_queue_full=True,
                                               max_pending_messages=200)
        self.name, self.seen, self.next = name, seen, start_at
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            n = self.next
            self.next += 1
            self.producer.send_async(f"{self.name}:{n}".encode(), self._receipted(n))
            time.sleep(0.002)

    def _receipted(self, n: int):
        def callback(result, _msg_id) -> None:
            if result == pulsar.Result.Ok:
                with self.seen.lock:
                    self.seen.receipted.setdefault(self.name, set()).add(n)
        return callback


class Consuming(threading.Thread):
    """Receives and acknowledges; notes a message delivered again after it was acknowledged."""

    def __init__(self, client: pulsar.Client, seen: Ledger) -> None:
        super().__init__(daemon=True)
        self.consumer = client.subscribe(TOPIC, SUBSCRIPTION, initial_position=pulsar.InitialPosition.Earliest)
        self.seen = seen
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                msg = self.consumer.receive(200)
            except pulsar.Timeout:
                continue
            except pulsar.PulsarException:
                time.sleep(0.1)
                continue
            with self.seen.lock:
                if msg.data() in self.seen.acked_at:
                    self.seen.redelivered_acked.append(msg.data())
            try:
                self.consumer.acknowledge(msg)
            except pulsar.PulsarException:
                continue
            with self.seen.lock:
                self.seen.acked_at.setdefault(msg.data(), time.monotonic())


def check_log(client: pulsar.Client, seen: Ledger) -> int:
    """Every receipted message exactly once, each producer's in order. Returns the count."""
    reader = client.create_reader(TOPIC, pulsar.MessageId.earliest)
    stored: dict[str, list[int]] = {}
    try:
        while True:
            name, _, n = reader.read_next(2000).data().decode().partition(":")
            stored.setdefault(name, []).append(int(n))
    except pulsar.Timeout:
        pass
    finally:
        reader.close()
    for name, receipted in seen.receipted.items():
        numbers = stored.get(name, [])
        if numbers != sorted(set(numbers)):
            raise AssertionError(f"{name}: duplicated or out of order: {_first_disorder(numbers)}")
        missing = receipted - set(numbers)
        if missing:
            raise AssertionError(f"{name}: {len(missing)} receipted messages lost, e.g. {sorted(missing)[:5]}")
    return sum(len(v) for v in stored.values())


def _first_disorder(numbers: list[int]) -> str:
    for i in range(1, len(numbers)):
        if numbers[i] <= numbers[i - 1]:
            return f"... {numbers[max(0, i - 3):i + 3]} at {i}"
    return "?"


def check_acks(seen: Ledger, outages: list[Outage]) -> None:
    """A message acknowledged, then delivered again, must have been acknowledged in an outage
    (kill, broker ready again) widened by ACK_BOUND_S on both sides."""
    for data in seen.redelivered_acked:
        acked = seen.acked_at[data]
        if not any(killed - ACK_BOUND_S <= acked <= ready + ACK_BOUND_S for killed, ready in outages):
            raise AssertionError(f"{data!r} acknowledged {acked:.3f}, redelivered; outages {outages}")


def _status(seen: Ledger) -> str:
    with seen.lock:
        receipts = sum(len(v) for v in seen.receipted.values())
        return (f"{receipts} receipted, {len(seen.acked_at)} acked, "
                f"{len(seen.redelivered_acked)} redelivered after ack")


def run(cycles: int, producers: int, seed: int, work_dir: Path, log=print) -> dict[str, float]:
    rng = random.Random(seed)
    seen = Ledger()
    broker = Broker(work_dir, CONFIG).start()
    client = pulsar.Client(broker.service_url, operation_timeout_seconds=30,
                           logger=pulsar.FileLogger(pulsar.LoggerLevel.Warn, str(work_dir / "client.log")))
    started = time.monotonic()
    try:
        consumer = Consuming(client, seen)
        producing = [Producing(client, f"p{i}", seen, 0) for i in range(producers)]
        for thread in (consumer, *producing):
            thread.start()
        outages = kill_cycles(broker, cycles, rng, lambda: _status(seen), log)
        for thread in producing:
            thread.stop.set()
        for thread in producing:
            thread.join()
            thread.producer.flush()
        time.sleep(1.0)
        consumer.stop.set()
        consumer.join()
        stored = check_log(client, seen)
        check_acks(seen, outages)
        return {"cycles": cycles, "seconds": time.monotonic() - started, "stored": stored,
                "receipted": sum(len(v) for v in seen.receipted.values()), "acked": len(seen.acked_at),
                "redelivered_after_ack": len(seen.redelivered_acked)}
    finally:
        client.close()
        broker.stop()


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cycles", type=int, default=20)
    parser.add_argument("--producers", type=int, default=3)


def main() -> int:
    return crash_cycles.main(__doc__, "crash-harness-", _arguments,
                             lambda args, work_dir: run(args.cycles, args.producers, args.seed, work_dir))


if __name__ == "__main__":
    sys.exit(main())
