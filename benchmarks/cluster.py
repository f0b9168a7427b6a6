"""Publish throughput and broker CPU per message of a partitioned topic on 1, 2 and 3 pulsard
brokers over the same bookies (the cluster kit: ZooKeeper + 3 bookies, journal fsync on,
E=3 Qw=2 Qa=2).

For each broker count, a new group of brokers (its own ZooKeeper chroot) is started, a topic of
``--partitions`` partitions is created, and ``--messages`` messages of ``--size`` bytes are
published (batched) through the first broker's service URL: lookups spread the partitions'
bundles over the brokers. The load comes from the Go load tool (benchmarks/loadgen on the
official Go client, one producer per partition) or, with ``--tool python``, the official Python
client's partitioned producer. Prints msg/s, MB/s, the brokers' CPU per message (utime+stime
of every broker process over the run, /proc/PID/stat) and where the partitions went, then each
count's rate against one broker's. On a machine with fewer cores than processes the rate is
bounded by the shared cores; CPU per message is not. Every process is killed and every temp
dir removed.

    python benchmarks/cluster.py [--messages 200000] [--size 100] [--partitions 16] [--tool go|python] [--brokers 1,2,3]
"""

from __future__ import annotations

import argparse
import logging
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pulsar  # noqa: E402

from benchmarks.compare import build_loadgen, cpu_seconds  # noqa: E402
from bookkeeper.cluster_kit import LocalCluster  # noqa: E402
from compat_tests.cluster_brokers import BrokerGroup, http  # noqa: E402


def publish(service_url: str, topic: str, messages: int, size: int) -> float:
    """Seconds to have every message receipted."""
    quiet = logging.getLogger("pulsar-client")
    quiet.setLevel(logging.WARNING)
    client = pulsar.Client(service_url, operation_timeout_seconds=60, logger=quiet)
    try:
        producer = client.create_producer(
            topic, batching_enabled=True, batching_max_messages=1000, batching_max_publish_delay_ms=5,
            max_pending_messages=20000, block_if_queue_full=True, send_timeout_millis=0,
            message_routing_mode=pulsar.PartitionsRoutingMode.RoundRobinDistribution)
        payload = bytes(size)
        failures: list[pulsar.Result] = []
        done = threading.Semaphore(0)

        def receipt(result: pulsar.Result, _message_id: object) -> None:
            if result != pulsar.Result.Ok:
                failures.append(result)
            done.release()

        producer.send(payload)   # (every partition producer connected in create_producer) warm-up
        began = time.perf_counter()
        for _ in range(messages):
            producer.send_async(payload, receipt)
        producer.flush()
        for _ in range(messages):
            done.acquire()
        elapsed = time.perf_counter() - began
        if failures:
            raise RuntimeError(f"{len(failures)} sends failed: {failures[:3]}")
        return elapsed
    finally:
        client.close()


def publish_with_go(loadgen: Path, service_url: str, partitions: int, messages: int, size: int) -> float:
    """Seconds the Go load tool took, one producer per partition of persistent://public/default/bench."""
    done = subprocess.run([str(loadgen), "produce", "-url", service_url, "-prefix", "bench-partition",
                           "-topics", str(partitions), "-batched", "-messages", str(messages),
                           "-size", str(size), "-pending", "5000"],
                          capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"loadgen failed: {done.stderr.strip()[-2000:]}")
    result = dict(kv.split("=") for kv in done.stdout.strip().splitlines()[-1].split())
    if int(result.get("failed", "0")):
        raise RuntimeError(f"{result['failed']} sends failed")
    return float(result["seconds"])


def run(cluster: LocalCluster, work: Path, brokers: int, args: argparse.Namespace,
        loadgen: Path | None) -> float:
    group = BrokerGroup(cluster, work / f"brokers-{brokers}", brokers).start()
    try:
        first = group.brokers[0]
        status, body = http("PUT", f"{first.web_url}/admin/v2/persistent/public/default/bench/partitions",
                            args.partitions)
        assert status == 204, body
        topic = "persistent://public/default/bench"
        cpu_before = [sum(cpu_seconds(b.pid)) for b in group.brokers]
        if loadgen is not None:
            elapsed = publish_with_go(loadgen, first.service_url, args.partitions, args.messages, args.size)
        else:
            elapsed = publish(first.service_url, topic, args.messages, args.size)
        cpu = [sum(cpu_seconds(b.pid)) - before for b, before in zip(group.brokers, cpu_before)]
        owners: dict[str, int] = {}
        for i in range(args.partitions):
            _, found = http("GET", f"{first.web_url}/lookup/v2/topic/persistent/public/default/bench-partition-{i}")
            owners[found["brokerUrl"]] = owners.get(found["brokerUrl"], 0) + 1
        rate = args.messages / elapsed
        print(f"{brokers} broker(s): {args.messages} x {args.size} B in {elapsed:.2f} s = {rate:,.0f} msg/s, "
              f"{rate * args.size / 1e6:.2f} MB/s; broker CPU {sum(cpu) * 1e6 / args.messages:.2f} µs/msg "
              f"(per broker: {', '.join(f'{c:.2f}' for c in cpu)} s); "
              f"partitions per broker: {sorted(owners.values())}", flush=True)
        return rate
    finally:
        group.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=16)
    parser.add_argument("--tool", choices=("go", "python"), default="go")
    parser.add_argument("--brokers", default="1,2,3", help="broker counts to run, in order")
    args = parser.parse_args()
    counts = [int(n) for n in args.brokers.split(",")]
    work = Path(tempfile.mkdtemp(prefix="pulsard-cluster-bench-"))
    cluster = LocalCluster(bookies=3, progress=lambda m: print(f"[cluster kit] {m}", flush=True))
    try:
        loadgen = build_loadgen(work) if args.tool == "go" else None
        cluster.start()
        rates = {count: run(cluster, work, count, args, loadgen) for count in counts}
        for count in counts[1:]:
            print(f"{count} brokers / {counts[0]}: {rates[count] / rates[counts[0]]:.2f}x")
    finally:
        cluster.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
