"""`pulsard perf produce|consume`: a quick look at rates and latency percentiles, printed every
few seconds, on the official Python client (as pulsar-perf's two commands).

A convenience: the Python client's own cost shows in these figures. benchmarks/ holds the tools
that measure the broker and compare it (throughput.py, startup.py, storage.py).
"""

from __future__ import annotations

import argparse
import os
import threading
import time
from dataclasses import dataclass, field

from server.tools.client_cli import POSITIONS, SUBSCRIPTION_TYPES, consumer_options
from server.tools.connection import add_connection_flags, open_client

PERCENTILES = (50, 95, 99, 99.9)
NOTE = "A convenience on the Python client; benchmarks/ has the tools that measure and compare the broker."


def add_perf_parser(commands: argparse._SubParsersAction) -> None:
    perf = commands.add_parser("perf", help="rates and latency percentiles (as pulsar-perf)", description=NOTE)
    _connection_flags(perf, default=None)
    actions = perf.add_subparsers(dest="action", required=True)
    produce = actions.add_parser("produce", help="publish at a rate, print send latency", description=NOTE)
    produce.add_argument("topic")
    produce.add_argument("-r", "--rate", type=float, default=100, help="messages per second (0: unlimited)")
    produce.add_argument("-s", "--size", type=int, default=1024, help="message size in bytes")
    produce.add_argument("--disable-batching", action="store_true")
    _limits(produce)
    _connection_flags(produce)
    produce.set_defaults(run=perf_produce)
    consume = actions.add_parser("consume", help="receive, print end-to-end latency", description=NOTE)
    consume.add_argument("topic")
    consume.add_argument("-ss", "--subscription", default="perf-sub")
    consume.add_argument("-st", "--subscription-type", choices=sorted(SUBSCRIPTION_TYPES), default="Exclusive")
    consume.add_argument("-p", "--subscription-position", choices=sorted(POSITIONS), default="Latest")
    _limits(consume)
    _connection_flags(consume)
    consume.set_defaults(run=perf_consume)


def _connection_flags(parser: argparse.ArgumentParser, default: object = argparse.SUPPRESS) -> None:
    """pulsar-perf's names beside pulsar-client's; accepted before the sub-command and after it
    (where pulsar-perf takes them)."""
    add_connection_flags(parser, url_aliases=("-u", "--service-url"), trust_aliases=("--trust-cert-file",),
                         default=default)


def _limits(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-n", "--num-messages", type=int, default=0, help="stop after this many (0: no limit)")
    parser.add_argument("--time", type=float, default=0, help="stop after this many seconds (0: no limit)")
    parser.add_argument("-i", "--stats-interval", type=float, default=5, help="seconds between reports")


@dataclass
class Window:
    """Messages, bytes and latencies (ms) since the last report, and over the whole run."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    messages: int = 0
    bytes: int = 0
    latencies: list[float] = field(default_factory=list)
    all_latencies: list[float] = field(default_factory=list)
    total: int = 0

    def record(self, size: int, latency_ms: float) -> None:
        with self.lock:
            self.messages += 1
            self.bytes += size
            self.latencies.append(latency_ms)

    def report(self, label: str, seconds: float) -> str:
        with self.lock:
            messages, size, latencies = self.messages, self.bytes, sorted(self.latencies)
            self.messages, self.bytes, self.latencies = 0, 0, []
        self.total += messages
        self.all_latencies.extend(latencies)
        return (f"{label}: {messages / seconds:.1f} msg/s, {size * 8 / seconds / 1e6:.2f} Mbit/s, "
                f"latency ms {percentiles(latencies)}")


def percentiles(sorted_values: list[float]) -> str:
    if not sorted_values:
        return "-"
    picks = [sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * p / 100))] for p in PERCENTILES]
    shown = " ".join(f"p{p:g}={value:.2f}" for p, value in zip(PERCENTILES, picks))
    return f"{shown} max={sorted_values[-1]:.2f}"


class Clock:
    """When to stop (-n, --time) and when to report (-i)."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.started = self.last_report = time.monotonic()
        self.args = args

    def done(self, count: int) -> bool:
        args = self.args
        return ((args.num_messages > 0 and count >= args.num_messages)
                or (args.time > 0 and time.monotonic() - self.started >= args.time))

    def report_due(self) -> float:
        """Seconds since the last report when one is due, else 0."""
        now = time.monotonic()
        if now - self.last_report < self.args.stats_interval:
            return 0.0
        elapsed, self.last_report = now - self.last_report, now
        return elapsed


def _summary(label: str, window: Window, clock: Clock) -> None:
    elapsed = time.monotonic() - clock.started
    print(f"{label} total: {window.total} messages in {elapsed:.1f} s ({window.total / elapsed:.1f} msg/s), "
          f"latency ms {percentiles(sorted(window.all_latencies))}", flush=True)


def perf_produce(args: argparse.Namespace) -> int:
    import pulsar
    client = open_client(args)
    window, clock, payload = Window(), Clock(args), os.urandom(args.size)
    try:
        producer = client.create_producer(args.topic, batching_enabled=not args.disable_batching,
                                          block_if_queue_full=True)
        sent = 0
        while not clock.done(sent):
            if args.rate > 0:
                time.sleep(max(0.0, clock.started + sent / args.rate - time.monotonic()))
            started = time.monotonic()
            producer.send_async(payload, lambda result, _id, t=started: window.record(
                args.size, (time.monotonic() - t) * 1000) if result == pulsar.Result.Ok else None)
            sent += 1
            if elapsed := clock.report_due():
                print(window.report("produce", elapsed), flush=True)
        producer.flush()
        window.report("produce", max(time.monotonic() - clock.last_report, 1e-3))
        _summary("produce", window, clock)
    except KeyboardInterrupt:
        _summary("produce", window, clock)
    finally:
        client.close()
    return 0


def perf_consume(args: argparse.Namespace) -> int:
    import pulsar
    client = open_client(args)
    window, clock = Window(), Clock(args)
    try:
        consumer = client.subscribe(args.topic, args.subscription, **consumer_options(args))
        received = 0
        while not clock.done(received):
            try:
                message = consumer.receive(timeout_millis=200)
            except pulsar.Timeout:
                message = None
            if message is not None:
                consumer.acknowledge(message)
                received += 1
                window.record(len(message.data()), max(0.0, time.time() * 1000 - message.publish_timestamp()))
            if elapsed := clock.report_due():
                print(window.report("consume", elapsed), flush=True)
        window.report("consume", max(time.monotonic() - clock.last_report, 1e-3))
        _summary("consume", window, clock)
    except KeyboardInterrupt:
        _summary("consume", window, clock)
    finally:
        client.close()
    return 0
