"""Subprocess for test_crash: appends entries forever, printing each acknowledged one.

Usage: python -m managed_ledger.tests.crash_writer DATA_DIR FIRST_INDEX
Prints "READY" and then "<ledger> <entry> <index>" per acknowledged add, flushed at once.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from managed_ledger.config import StorageConfig
from managed_ledger.factory import open_factory

TOPIC = "persistent://public/default/crash"
CONFIG = dict(max_entries_per_ledger=50, journal_max_size_mb=0.05, journal_max_group_wait_ms=0.5)
IN_FLIGHT = 16


def payload(index: int) -> bytes:
    return b"entry-%d-" % index + bytes([index % 251]) * (index % 300)


async def main(data_dir: Path, first_index: int) -> None:
    factory = await open_factory(StorageConfig(data_dir, **CONFIG))
    ledger = await factory.open_ledger(TOPIC)
    print("READY", flush=True)
    next_index = first_index

    async def writer() -> None:
        nonlocal next_index
        while True:
            index = next_index
            next_index += 1
            position = await ledger.add_entry(payload(index))
            sys.stdout.write(f"{position.ledger_id} {position.entry_id} {index}\n")
            sys.stdout.flush()

    await asyncio.gather(*[writer() for _ in range(IN_FLIGHT)])


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), int(sys.argv[2])))
