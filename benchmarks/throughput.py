"""Produce and consume throughput of pulsard, measured with the official Python client.

    python benchmarks/throughput.py [--batched 200000] [--unbatched 20000] [--size 100]
                                    [--service-url pulsar://host:6650]

Starts a real pulsard on free loopback ports with a temporary data dir (unless --service-url
points at a running broker), then for each case:
  produce: send_async() N messages of --size bytes (block_if_queue_full), flush, wait for every
           receipt; consume: a subscription made before producing drains the N-message backlog,
           acknowledging each message.
Prints a table and stops the broker.
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pulsar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from compat_tests.broker import Broker  # noqa: E402

RECEIVE_TIMEOUT_MS = 30_000


@dataclass
class Result:
    case: str
    messages: int
    size: int
    produce_s: float
    consume_s: float

    @property
    def produce_rate(self) -> float:
        return self.messages / self.produce_s

    @property
    def consume_rate(self) -> float:
        return self.messages / self.consume_s

    def mb_per_s(self, rate: float) -> float:
        return rate * self.size / 1e6


class Receipts:
    """Counts send_async callbacks; wait() until all arrived."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.count = 0
        self.failures = 0
        self._cond = threading.Condition()

    def callback(self, result, _msg_id) -> None:
        with self._cond:
            self.count += 1
            if result != pulsar.Result.Ok:
                self.failures += 1
            if self.count == self.expected:
                self._cond.notify_all()

    def wait(self, timeout_s: float = 600) -> None:
        with self._cond:
            if not self._cond.wait_for(lambda: self.count >= self.expected, timeout_s):
                raise RuntimeError(f"only {self.count} of {self.expected} receipts")
        if self.failures:
            raise RuntimeError(f"{self.failures} sends failed")


def produce(producer: pulsar.Producer, n: int, payload: bytes) -> float:
    receipts = Receipts(n)
    started = time.perf_counter()
    for _ in range(n):
        producer.send_async(payload, receipts.callback)
    producer.flush()
    receipts.wait()
    return time.perf_counter() - started


def consume(consumer: pulsar.Consumer, n: int) -> float:
    started = time.perf_counter()
    for _ in range(n):
        consumer.acknowledge(consumer.receive(RECEIVE_TIMEOUT_MS))
    return time.perf_counter() - started


def run_case(client: pulsar.Client, case: str, n: int, size: int, batching: bool,
             max_pending: int = 5000) -> Result:
    topic = f"bench-{case}-{uuid.uuid4().hex[:8]}"
    consumer = client.subscribe(topic, "bench", initial_position=pulsar.InitialPosition.Earliest,
                                receiver_queue_size=5000)
    producer = client.create_producer(
        topic, batching_enabled=batching, batching_max_messages=1000,
        batching_max_publish_delay_ms=10, block_if_queue_full=True, max_pending_messages=max_pending)
    try:
        produce_s = produce(producer, n, os.urandom(size))
        consume_s = consume(consumer, n)
    finally:
        producer.close()
        consumer.close()
    return Result(case, n, size, produce_s, consume_s)


def run_all(service_url: str, cases: list[tuple[str, int, bool]], size: int,
            max_pending: int = 5000) -> list[Result]:
    client = pulsar.Client(service_url, operation_timeout_seconds=30,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        return [run_case(client, name, n, size, batching, max_pending)
                for name, n, batching in cases if n > 0]
    finally:
        client.close()


def format_table(results: list[Result]) -> str:
    header = (f"{'case':<10} {'messages':>9} {'bytes':>6} {'produce msg/s':>14} {'MB/s':>7} "
              f"{'consume msg/s':>14} {'MB/s':>7}")
    rows = [header, "-" * len(header)]
    for r in results:
        rows.append(f"{r.case:<10} {r.messages:>9} {r.size:>6} {r.produce_rate:>14,.0f} "
                    f"{r.mb_per_s(r.produce_rate):>7.2f} {r.consume_rate:>14,.0f} "
                    f"{r.mb_per_s(r.consume_rate):>7.2f}")
    return "\n".join(rows)


def environment_line() -> str:
    return (f"pulsar-client {getattr(pulsar, '__version__', '?')}, "
            f"Python {platform.python_version()}, {os.cpu_count()} CPUs, {platform.machine()}")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batched", type=int, default=200_000, help="messages, batching on")
    parser.add_argument("--unbatched", type=int, default=20_000, help="messages, batching off")
    parser.add_argument("--size", type=int, default=100, help="payload bytes per message")
    parser.add_argument("--max-pending", type=int, default=5000,
                        help="producer max_pending_messages (messages in flight)")
    parser.add_argument("--service-url", help="use this running broker instead of starting one")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    cases = [("batched", args.batched, True), ("unbatched", args.unbatched, False)]
    print(f"$ {shlex.join([sys.executable, *sys.argv])}")
    print(environment_line())
    if args.service_url:
        print(f"broker: {args.service_url} (external)")
        results = run_all(args.service_url, cases, args.size, args.max_pending)
    else:
        with tempfile.TemporaryDirectory(prefix="pulsard-bench-") as tmp, Broker(Path(tmp)) as broker:
            print(f"broker: $ {shlex.join(broker.command())}")
            results = run_all(broker.service_url, cases, args.size, args.max_pending)
    print(format_table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
