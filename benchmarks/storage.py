"""Bookie storage figures: write rate with fsync, catch-up reads, start-up, space reclaimed.

    python benchmarks/storage.py [--gb 1.0] [--entry-size 65536] [--ledgers 4] [--in-flight 64]

- write: --gb of entries through the ledger API (journal fsync per group, checkpoints into entry
  logs running meanwhile), MB/s; next to it the disk's own figure: plain os.write + fdatasync of
  the same total in chunks of the bookie's average group size, in the same directory;
- start-up: BookKeeper.open over that data after a clean close (index load, no replay), and
  after a close without the final checkpoint (replays the journal since the last mark);
- catch-up read: every entry of one ledger, 100 at a time, with the entry logs evicted from the
  page cache first (posix_fadvise DONTNEED), entries/s and MB/s;
- space: entry-log bytes before deleting all ledgers but one, right after (empty logs go at
  once) and after one compaction pass at majorCompactionThreshold.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import shlex
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bookkeeper.config import BookieConfig  # noqa: E402
from bookkeeper.entry_log import entry_log_name, list_entry_logs  # noqa: E402
from bookkeeper.ledger import BookKeeper  # noqa: E402
from bookkeeper.metadata_store import SqliteMetadataStore  # noqa: E402

MB = 1024 * 1024


async def open_bookkeeper(root: Path, **settings) -> BookKeeper:
    store = await SqliteMetadataStore.open(root / "metadata.db")
    return await BookKeeper.open(root, BookieConfig(**settings), store)


async def close_bookkeeper(bk: BookKeeper, checkpoint: bool = True) -> None:
    await bk.bookie.close(final_checkpoint=checkpoint)
    await bk.store.close()


async def write_phase(root: Path, total: int, entry_size: int, ledger_count: int,
                      in_flight: int) -> tuple[float, int, list[int], int]:
    """(seconds, bytes per fsync, ledger ids, entries per ledger)."""
    bk = await open_bookkeeper(root)
    ledgers = [await bk.create_ledger() for _ in range(ledger_count)]
    payload = os.urandom(entry_size)
    count = total // entry_size
    window = asyncio.Semaphore(in_flight)
    journal = bk.bookie.journal
    syncs_before = journal.syncs

    def release(_entry_id: int, error: BaseException | None) -> None:
        if error is not None:
            raise error
        window.release()

    started = time.perf_counter()
    for index in range(count):
        await window.acquire()
        ledgers[index % ledger_count].add_entries_with_callback([payload], release)
    for _ in range(in_flight):
        await window.acquire()
    elapsed = time.perf_counter() - started
    per_sync = total // max(1, journal.syncs - syncs_before)
    for ledger in ledgers:
        await ledger.close()
    await close_bookkeeper(bk)
    return elapsed, per_sync, [ledger.ledger_id for ledger in ledgers], count // ledger_count


def disk_baseline(directory: Path, total: int, chunk: int) -> float:
    """Seconds to append ``total`` bytes in ``chunk``-byte writes, each followed by fdatasync."""
    path = directory / "baseline.bin"
    data = os.urandom(chunk)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    started = time.perf_counter()
    try:
        for _ in range(total // chunk):
            os.write(fd, data)
            os.fdatasync(fd)
    finally:
        os.close(fd)
    elapsed = time.perf_counter() - started
    path.unlink()
    return elapsed


async def timed_open(root: Path) -> tuple[float, BookKeeper]:
    started = time.perf_counter()
    bk = await open_bookkeeper(root)
    return time.perf_counter() - started, bk


def evict_entry_logs(ledger_dir: Path) -> None:
    for log_id in list_entry_logs(ledger_dir):
        fd = os.open(ledger_dir / entry_log_name(log_id), os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


async def catch_up_read(bk: BookKeeper, ledger_id: int, entries: int) -> float:
    handle = await bk.open_ledger(ledger_id)
    started = time.perf_counter()
    for first in range(0, entries, 100):
        await handle.read_entries(first, min(first + 99, entries - 1))
    return time.perf_counter() - started


def log_bytes(ledger_dir: Path) -> int:
    return sum(list_entry_logs(ledger_dir).values())


async def space_phase(bk: BookKeeper, ledger_ids: list[int], ledger_dir: Path) -> list[int]:
    before = log_bytes(ledger_dir)
    for ledger_id in ledger_ids[1:]:
        await bk.delete_ledger(ledger_id)
    at_once = log_bytes(ledger_dir)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, bk.bookie.collector.compact,
                               BookieConfig().major_compaction_threshold)
    return [before, at_once, log_bytes(ledger_dir)]


async def run(args: argparse.Namespace, root: Path) -> None:
    total = int(args.gb * 1024 * MB)
    seconds, per_sync, ledger_ids, per_ledger = await write_phase(
        root, total, args.entry_size, args.ledgers, args.in_flight)
    baseline = disk_baseline(root, total, per_sync)
    print(f"write through the bookie: {total / MB / seconds:8.1f} MB/s "
          f"({total // args.entry_size} entries of {args.entry_size} B, {per_sync // 1024} KiB "
          f"per fsync on average)")
    print(f"disk, write+fdatasync:    {total / MB / baseline:8.1f} MB/s (same total, "
          f"{per_sync // 1024} KiB chunks)")

    clean_start, bk = await timed_open(root)
    print(f"start-up after clean close, {args.gb:g} GB stored: {clean_start * 1000:8.1f} ms")
    evict_entry_logs(root / "ledgers")
    read_seconds = await catch_up_read(bk, ledger_ids[0], per_ledger)
    print(f"catch-up read (cold cache): {per_ledger / read_seconds:10.0f} entries/s, "
          f"{per_ledger * args.entry_size / MB / read_seconds:8.1f} MB/s ({per_ledger} entries)")
    before, at_once, compacted = await space_phase(bk, ledger_ids, root / "ledgers")
    print(f"space: entry logs {before / MB:.0f} MB; after deleting {len(ledger_ids) - 1} of "
          f"{len(ledger_ids)} ledgers {at_once / MB:.0f} MB at once, {compacted / MB:.0f} MB "
          f"after compaction ({(before - compacted) / MB:.0f} MB reclaimed)")
    await close_bookkeeper(bk)

    replay = min(total, 256 * MB)
    # no checkpoint while writing, none at close: the journal holds it all, as after a kill
    bk = await open_bookkeeper(root, write_cache_max_size=2 * replay)
    ledger = await bk.create_ledger()
    payload = os.urandom(args.entry_size)
    await asyncio.gather(*[ledger.add_entry(payload) for _ in range(replay // args.entry_size)])
    await close_bookkeeper(bk, checkpoint=False)
    crash_start, bk = await timed_open(root)
    print(f"start-up after a crash with {replay // MB} MB written since the last checkpoint: "
          f"{crash_start * 1000:8.1f} ms")
    await close_bookkeeper(bk)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gb", type=float, default=1.0, help="data written")
    parser.add_argument("--entry-size", type=int, default=64 * 1024, help="bytes per entry")
    parser.add_argument("--ledgers", type=int, default=4, help="ledgers written in turn")
    parser.add_argument("--in-flight", type=int, default=64, help="adds awaiting their fsync")
    parser.add_argument("--dir", help="directory for the data (default: a temporary one)")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    print(f"$ {shlex.join([sys.executable, *sys.argv])}")
    print(f"Python {platform.python_version()}, {os.cpu_count()} CPUs, {platform.machine()}")
    with tempfile.TemporaryDirectory(prefix="pulsard-storage-", dir=args.dir) as tmp:
        asyncio.run(run(args, Path(tmp)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
