"""Subprocess for test_crash: appends entries forever while a durable cursor consumes them.

Usage: python -m managed_ledger.tests.crash_writer DATA_DIR FIRST_INDEX

Prints "READY", then per acknowledged add "ADD <ledger> <entry> <index>", and whenever the
cursor's persisted mark-delete moves "PERSISTED <ledger> <entry>"; every line is flushed at
once, so whatever the parent read was true before the kill.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from bookkeeper.config import BookieConfig
from managed_ledger.config import StorageConfig
from managed_ledger.factory import open_factory
from managed_ledger.position import InitialPosition

TOPIC = "persistent://public/default/crash"
CURSOR = "consumer"
#: Checkpoints, garbage collection and compaction run every few milliseconds, so the kills land
#: during them as well as during adds.
CONFIG = dict(max_entries_per_ledger=50, cursor_flush_interval_ms=5, mark_delete_rate_limit=0.0,
              bookie=BookieConfig(journal_max_file_size=50_000, max_group_wait_ms=0.5,
                                  entry_log_size_limit=8192, flush_interval_ms=15,
                                  write_cache_max_size=20_000, gc_wait_time_ms=25,
                                  minor_compaction_interval_s=0, minor_compaction_threshold=0.5,
                                  major_compaction_threshold=0))
IN_FLIGHT = 16


def payload(index: int) -> bytes:
    return b"entry-%d-" % index + bytes([index % 251]) * (index % 300)


def emit(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


async def main(data_dir: Path, first_index: int) -> None:
    factory = await open_factory(StorageConfig(data_dir, **CONFIG))
    ledger = await factory.open_ledger(TOPIC)
    cursor = await ledger.open_cursor(CURSOR, InitialPosition.EARLIEST)
    emit("READY")
    next_index = first_index

    async def produce() -> None:
        nonlocal next_index
        while True:
            index = next_index
            next_index += 1
            position = await ledger.add_entry(payload(index))
            emit(f"ADD {position.ledger_id} {position.entry_id} {index}")

    async def consume() -> None:
        reported = cursor.persisted_mark_delete
        while True:
            entries = await cursor.read_entries_or_wait(20)
            # lag behind the producers, so a kill finds unconsumed entries too
            cursor.mark_delete(entries[len(entries) // 2].position)
            await asyncio.sleep(0.002)
            if cursor.persisted_mark_delete != reported:
                reported = cursor.persisted_mark_delete
                emit(f"PERSISTED {reported.ledger_id} {reported.entry_id}")

    await asyncio.gather(consume(), *[produce() for _ in range(IN_FLIGHT)])


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), int(sys.argv[2])))
