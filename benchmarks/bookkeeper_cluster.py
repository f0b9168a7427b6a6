"""Adds and reads through pulsard's BookKeeper client on real bookies (no broker).

Starts the cluster kit (ZooKeeper + 3 bookies, journal fsync on) unless
``--metadata-service-uri`` names a running cluster, then per quorum case writes ``--entries``
entries of ``--size`` bytes with at most ``--in-flight`` adds outstanding, reads them back,
and prints adds/s, MB/s, add latency percentiles and reads/s. ``--in-flight 1`` gives the
sequential (one add at a time) figure.

    python benchmarks/bookkeeper_cluster.py [--entries 5000] [--size 1024] [--in-flight 500]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bookkeeper.bk.client import BookKeeperClient  # noqa: E402
from bookkeeper.cluster_kit import LocalCluster  # noqa: E402

CASES = [(3, 3, 2), (3, 2, 2), (2, 2, 2)]


async def run_case(uri: str, quorums: tuple[int, int, int], entries: int, size: int,
                   in_flight: int) -> dict[str, float]:
    client = await BookKeeperClient.open(uri, *quorums)
    try:
        writer = await client.create_ledger()
        payload = bytes(size)
        window = asyncio.Semaphore(in_flight)
        latencies: list[float] = []
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        remaining = entries

        def on_done(entry_id: int, error: BaseException | None, started: float) -> None:
            nonlocal remaining
            if error is not None and not done.done():
                done.set_exception(error)
            latencies.append(time.perf_counter() - started)
            window.release()
            remaining -= 1
            if remaining == 0 and not done.done():
                done.set_result(None)

        began = time.perf_counter()
        for _ in range(entries):
            await window.acquire()
            started = time.perf_counter()
            writer.add_entries_with_callback([payload], lambda e, err, s=started: on_done(e, err, s))
        await done
        elapsed = time.perf_counter() - began
        await writer.close()
        reader = await client.open_ledger(writer.ledger_id)
        read_began = time.perf_counter()
        for first in range(0, entries, 500):
            await reader.read_entries(first, min(entries, first + 500) - 1)
        read_elapsed = time.perf_counter() - read_began
        await client.delete_ledger(writer.ledger_id)
        latencies.sort()
        return {"adds/s": entries / elapsed, "MB/s": entries * size / elapsed / 1e6,
                "p50 ms": latencies[len(latencies) // 2] * 1000,
                "p99 ms": latencies[int(len(latencies) * 0.99)] * 1000,
                "reads/s": entries / read_elapsed}
    finally:
        await client.close()


async def main_async(uri: str, args: argparse.Namespace) -> None:
    print(f"{'E/Qw/Qa':8} {'entries':>8} {'bytes':>6} {'in-flight':>9} {'adds/s':>9} "
          f"{'MB/s':>6} {'p50 ms':>7} {'p99 ms':>7} {'reads/s':>9}")
    for quorums in CASES:
        result = await run_case(uri, quorums, args.entries, args.size, args.in_flight)
        print(f"{'/'.join(map(str, quorums)):8} {args.entries:>8} {args.size:>6} "
              f"{args.in_flight:>9} {result['adds/s']:>9,.0f} {result['MB/s']:>6.2f} "
              f"{result['p50 ms']:>7.1f} {result['p99 ms']:>7.1f} {result['reads/s']:>9,.0f}",
              flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--entries", type=int, default=5000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--in-flight", type=int, default=500)
    parser.add_argument("--metadata-service-uri", default="")
    args = parser.parse_args()
    if args.metadata_service_uri:
        asyncio.run(main_async(args.metadata_service_uri, args))
        return
    with LocalCluster(bookies=3, progress=lambda m: print(f"# {m}", file=sys.stderr)) as cluster:
        asyncio.run(main_async(cluster.metadata_service_uri, args))


if __name__ == "__main__":
    main()
