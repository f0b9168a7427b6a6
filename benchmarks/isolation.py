"""Tenant isolation under rate limits: a tenant that floods does not slow another's publishing.

    python benchmarks/isolation.py [--seconds 10] [--rounds 3] [--a-publish-rate 5000]
                                   [--a-dispatch-rate 3000] [--b-rate 1000] [--size 100]
                                   [--a-ack individual|cumulative] [--imprecise] [--reference]

Starts pulsard (and with --reference also Apache Pulsar 3.0.7 standalone through
compat_tests/reference/pulsar_shim.py, one after the other) with
preciseTopicPublishRateLimiterEnable=true (--imprecise: Pulsar's default, false). Tenant A's
namespace gets a publish rate and a dispatch rate; tenant B's has no limit. B's producer
publishes --b-rate msg/s (unbatched, send_async at fixed instants) for --seconds, first alone,
then while A's producer floods A's topic as fast as its client allows (batched, 1000 pending)
and A's consumer drains a backlog of A's topic (acknowledging each message, or cumulatively);
--rounds times. Each client runs in a process
of its own, with the official Python client.

Prints B's publish throughput and latency p50/p99 (send_async to receipt) alone and beside A
per round (with the broker's CPU over B's window, 100 % = one core) and their medians (the
goal: within 1.5x of alone), and A's publish and dispatch rates over the --seconds window
against its limits (the goal: within 10 %).
"""

from __future__ import annotations

import argparse
import multiprocessing
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from compat_tests import broker as _broker  # noqa: E402
from compat_tests.admin_http import AdminHttp  # noqa: E402
from compare import REFERENCE_READY_S, SHIM, Reference, cpu_seconds  # noqa: E402

#: Seconds between starting the clients and the start of the measured window.
LEAD_S = 2.0


# -- the clients, one process each ------------------------------------------------------------------

def publish_fixed_rate(url: str, topic: str, rate: float, seconds: float, size: int, start_at: float, out) -> None:
    """Send at `rate` msg/s from start_at for `seconds`; (receipted, latencies in ms, seconds)."""
    import pulsar
    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    producer = client.create_producer(topic, batching_enabled=False, max_pending_messages=10_000,
                                      block_if_queue_full=True)
    payload, total = b"b" * size, int(rate * seconds)
    latencies: list[float] = []

    def receipt_for(sent: float):
        def receipt(result, _msg_id) -> None:
            if result == pulsar.Result.Ok:
                latencies.append((time.time() - sent) * 1000)
        return receipt

    time.sleep(max(0.0, start_at - time.time()))
    for n in range(total):
        wait = start_at + n / rate - time.time()
        if wait > 0:
            time.sleep(wait)
        producer.send_async(payload, receipt_for(time.time()))
    producer.flush()
    elapsed = time.time() - start_at
    client.close()
    out.put(("b", len(latencies), sorted(latencies), elapsed))


def flood(url: str, topic: str, seconds: float, size: int, start_at: float, out) -> None:
    """Publish as fast as the client allows from start_at - LEAD_S; messages receipted in the window."""
    import pulsar
    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=100,
                                      batching_max_publish_delay_ms=1, max_pending_messages=1000,
                                      block_if_queue_full=True)
    payload, end = b"a" * size, start_at + seconds
    in_window = [0]

    def receipt(result, _msg_id) -> None:
        if result == pulsar.Result.Ok and start_at <= time.time() < end:
            in_window[0] += 1

    time.sleep(max(0.0, start_at - LEAD_S - time.time()))
    while time.time() < end:
        producer.send_async(payload, receipt)
    producer.flush()
    client.close()
    out.put(("a_publish", in_window[0]))


def drain(url: str, topic: str, seconds: float, start_at: float, cumulative: bool, out) -> None:
    """Receive from A's backlog, acknowledging each message (or cumulatively); messages
    received in the window."""
    import pulsar
    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    consumer = client.subscribe(topic, "drain", initial_position=pulsar.InitialPosition.Earliest)
    acknowledge = consumer.acknowledge_cumulative if cumulative else consumer.acknowledge
    end, in_window = start_at + seconds, 0
    time.sleep(max(0.0, start_at - LEAD_S - time.time()))
    while time.time() < end:
        try:
            message = consumer.receive(timeout_millis=100)
        except pulsar.Timeout:
            continue
        if time.time() >= start_at:
            in_window += 1
        acknowledge(message)
    client.close()
    out.put(("a_dispatch", in_window))


# -- the runs -----------------------------------------------------------------------------------

def prepare(broker: _broker.Broker, args) -> tuple[str, str]:
    """Tenants a and b with a namespace each; A's topic holds a backlog of twice what A may
    dispatch in the window, then A's limits are set."""
    import pulsar
    http = AdminHttp(broker.web_url)
    cluster = http.get("/admin/v2/clusters").json()[0]
    run = uuid.uuid4().hex[:6]
    for tenant in ("a", "b"):
        http.put(f"/admin/v2/tenants/{tenant}", json={"adminRoles": [], "allowedClusters": [cluster]})
        assert http.put(f"/admin/v2/namespaces/{tenant}/ns-{run}").status_code == 204
    a_topic, b_topic = f"persistent://a/ns-{run}/flood", f"persistent://b/ns-{run}/steady"
    client = pulsar.Client(broker.service_url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    client.subscribe(a_topic, "drain").close()
    producer = client.create_producer(a_topic, batching_max_messages=1000, block_if_queue_full=True)
    for _ in range(int(2 * args.a_dispatch_rate * args.seconds)):
        producer.send_async(b"a" * args.size, None)
    producer.flush()
    client.close()
    ns = f"/admin/v2/namespaces/a/ns-{run}"
    assert http.post(ns + "/publishRate", json={"publishThrottlingRateInMsg": args.a_publish_rate,
                                                "publishThrottlingRateInByte": -1}).status_code == 204
    assert http.post(ns + "/dispatchRate", json={"dispatchThrottlingRateInMsg": args.a_dispatch_rate,
                                                 "dispatchThrottlingRateInByte": -1, "ratePeriodInSecond": 1,
                                                 "relativeToPublishRate": False}).status_code == 204
    time.sleep(2.0)   # the policies reach the loaded topic (Pulsar applies them asynchronously)
    return a_topic, b_topic


def run_phase(broker: _broker.Broker, args, a_topic: str, b_topic: str, with_a: bool) -> dict:
    context = multiprocessing.get_context("spawn")
    out = context.Queue()
    start_at = time.time() + LEAD_S + 3.0   # the spawned interpreters import the client first
    workers = [context.Process(target=publish_fixed_rate, args=(broker.service_url, b_topic, args.b_rate,
                                                                args.seconds, args.size, start_at, out))]
    if with_a:
        workers += [context.Process(target=flood, args=(broker.service_url, a_topic, args.seconds, args.size,
                                                        start_at, out)),
                    context.Process(target=drain, args=(broker.service_url, a_topic, args.seconds, start_at,
                                                        args.a_ack == "cumulative", out))]
    for worker in workers:
        worker.start()
    time.sleep(max(0.0, start_at - time.time()))
    cpu_before = sum(cpu_seconds(broker.pid))
    results = {}
    for _ in workers:
        item = out.get(timeout=args.seconds + 120)
        results[item[0]] = item[1:]
        if item[0] == "b":   # B's window is over: the broker's CPU over it
            results["broker_cpu"] = (sum(cpu_seconds(broker.pid)) - cpu_before) / (time.time() - start_at)
    for worker in workers:
        worker.join()
    return results


def percentile(sorted_values: list[float], p: float) -> float:
    return sorted_values[int(p * (len(sorted_values) - 1))] if sorted_values else float("nan")


def b_figures(result: dict) -> tuple[float, float, float]:
    """B's (msg/s, p50 ms, p99 ms) in one phase."""
    count, latencies, elapsed = result["b"]
    return count / elapsed, percentile(latencies, 0.5), percentile(latencies, 0.99)


def measure(name: str, broker: _broker.Broker, args) -> None:
    """--rounds rounds of B alone then B beside A (the disk's fsync times drift within
    minutes, so the two cases alternate); per-round lines, then medians."""
    a_topic, b_topic = prepare(broker, args)
    cases: dict[str, list[tuple[float, float, float]]] = {"B alone": [], "B beside A's flood": []}
    a_rates: dict[str, list[float]] = {"a_publish": [], "a_dispatch": []}
    for round_no in range(args.rounds):
        for case, with_a in (("B alone", False), ("B beside A's flood", True)):
            result = run_phase(broker, args, a_topic, b_topic, with_a)
            figures = b_figures(result)
            cases[case].append(figures)
            extra = ""
            if with_a:
                for key in a_rates:
                    a_rates[key].append(result[key][0] / args.seconds)
                extra = f"  A publish {a_rates['a_publish'][-1]:,.0f}, dispatch {a_rates['a_dispatch'][-1]:,.0f} msg/s"
            print(f"{name:8} round {round_no + 1} {case:20} {figures[0]:9,.0f} {figures[1]:9.2f} {figures[2]:9.2f}"
                  f"  broker CPU {100 * result['broker_cpu']:3.0f} %" + extra, flush=True)
    medians = {case: [statistics.median(column) for column in zip(*rows)] for case, rows in cases.items()}
    for case, (rate, p50, p99) in medians.items():
        print(f"{name:8} median  {case:20} {rate:9,.0f} {p50:9.2f} {p99:9.2f}")
    alone, beside = medians["B alone"], medians["B beside A's flood"]
    print(f"{name:8} {'with A / alone':28} {beside[0] / alone[0]:8.2f}x {beside[1] / alone[1]:8.2f}x "
          f"{beside[2] / alone[2]:8.2f}x")
    for label, key, limit in (("A publish", "a_publish", args.a_publish_rate),
                              ("A dispatch", "a_dispatch", args.a_dispatch_rate)):
        rate = statistics.median(a_rates[key])
        print(f"{name:8} {label:28} {rate:9,.0f} msg/s, limit {limit:,} ({(rate / limit - 1) * 100:+.1f} %)")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each measured window")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of B alone then B beside A")
    parser.add_argument("--a-publish-rate", type=int, default=5000, help="tenant A's publish limit, msg/s")
    parser.add_argument("--a-dispatch-rate", type=int, default=3000, help="tenant A's dispatch limit, msg/s")
    parser.add_argument("--b-rate", type=float, default=1000, help="tenant B's fixed publish rate, msg/s")
    parser.add_argument("--size", type=int, default=100, help="message size in bytes")
    parser.add_argument("--a-ack", choices=("individual", "cumulative"), default="individual",
                        help="how A's consumer acknowledges (its grouped individual acks cost the broker "
                             "some 10 us per message)")
    parser.add_argument("--imprecise", action="store_true",
                        help="preciseTopicPublishRateLimiterEnable=false (Pulsar's default)")
    parser.add_argument("--reference", action="store_true", help="also measure Apache Pulsar 3.0.7 standalone")
    args = parser.parse_args(argv)
    print(f"$ {' '.join([sys.executable, *sys.argv])}")
    config = {"preciseTopicPublishRateLimiterEnable": str(not args.imprecise).lower()}
    print(f"{'broker':8} {'':7} {'case':20} {'B msg/s':>9} {'p50 ms':>9} {'p99 ms':>9}")
    with tempfile.TemporaryDirectory(prefix="pulsard-isolation-") as tmp:
        for name in ("pulsard", "pulsar"):
            (Path(tmp) / name).mkdir()
        brokers = [("pulsard", _broker.Broker(Path(tmp) / "pulsard", config), _broker.READY_TIMEOUT_S)]
        if args.reference:
            if (SHIM.parent / "lib").is_dir() and shutil.which("java"):
                brokers.append(("pulsar", Reference(Path(tmp) / "pulsar", config), REFERENCE_READY_S))
            else:
                print("reference Pulsar: not started (compat_tests/reference/lib or java missing)")
        for name, broker, ready_s in brokers:
            broker.spawn()
            try:
                broker.wait_ready(ready_s)
                measure(name, broker, args)
            finally:
                broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
