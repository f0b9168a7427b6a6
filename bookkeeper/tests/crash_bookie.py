"""Subprocess for test_crash_points: kills itself with SIGKILL at one named step of a flush,
a checkpoint or a compaction.

Usage: python -m bookkeeper.tests.crash_bookie ROOT POINT

Writes entries to a kept and a doomed ledger (interleaved, so entry logs mix them), checkpoints
once, writes more, then arms POINT and runs the step it names (for "recovery-*": writes
everything without a checkpoint, stops as a kill would, arms POINT and starts again). Prints "ACK <ledger> <entry>"
per acknowledged add and "KEPT <ledger>" / "DOOMED <ledger>" first; every line is flushed.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

from bookkeeper import bookie, checkpoint
from bookkeeper.garbage_collector import GarbageCollector
from bookkeeper.ledger_index import LedgerIndex
from bookkeeper.tests.conftest import open_bookkeeper

SETTINGS = dict(entry_log_size_limit=4096, flush_interval_ms=10**8, gc_wait_time_ms=10**8)


def payload(ledger_id: int, entry_id: int) -> bytes:
    return b"%d:%d:" % (ledger_id, entry_id) + bytes([entry_id % 251]) * (entry_id * 7 % 200)


def emit(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def die(*_args, **_kwargs) -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def switch_index_then_die(collector: GarbageCollector, moves: list) -> None:
    ORIGINAL_SWITCH_INDEX(collector, moves)
    die()


ORIGINAL_SWITCH_INDEX = GarbageCollector._switch_index
#: Crash point -> (owner, attribute) replaced by a SIGKILL (or by a wrapper that dies after).
TARGETS = {
    "flush-before-index": (LedgerIndex, "persist", die),
    "checkpoint-before-mark": (checkpoint, "write_mark", die),
    "checkpoint-before-trim": (checkpoint, "trim_journal", die),
    "recovery-before-mark": (bookie, "write_mark", die),
    "compaction-before-index": (GarbageCollector, "_switch_index", die),
    "compaction-before-index-sync": (LedgerIndex, "sync", die),
    "compaction-before-remove": (GarbageCollector, "_switch_index", switch_index_then_die),
}


def arm(point: str) -> None:
    """Replace the function that runs right at POINT by a SIGKILL."""
    if point not in TARGETS:
        raise SystemExit(f"unknown crash point {point}")
    owner, attribute, replacement = TARGETS[point]
    setattr(owner, attribute, replacement)


async def write_round(kept, doomed, count: int) -> None:
    for _ in range(count):
        for handle in (kept, doomed):
            entry_id = await handle.add_entry(payload(handle.ledger_id, handle._next_entry_id))
            emit(f"ACK {handle.ledger_id} {entry_id}")


async def crash_with_unflushed_entries(root: Path) -> None:
    """Leave entries in the journal only (no checkpoint ever ran), as a kill would."""
    async with open_bookkeeper(root, crash_on_exit=True, **SETTINGS) as bk:
        kept, doomed = await bk.create_ledger(), await bk.create_ledger()
        emit(f"KEPT {kept.ledger_id}")
        emit(f"DOOMED {doomed.ledger_id}")
        await write_round(kept, doomed, 100)


async def main(root: Path, point: str) -> None:
    if point.startswith("recovery"):
        await crash_with_unflushed_entries(root)
        arm(point)
        async with open_bookkeeper(root, **SETTINGS):
            emit("SURVIVED")
        return
    async with open_bookkeeper(root, **SETTINGS) as bk:
        kept, doomed = await bk.create_ledger(), await bk.create_ledger()
        emit(f"KEPT {kept.ledger_id}")
        emit(f"DOOMED {doomed.ledger_id}")
        await write_round(kept, doomed, 60)
        await bk.bookie.checkpointer.checkpoint()
        await write_round(kept, doomed, 40)
        if point.startswith("compaction"):
            await bk.bookie.checkpointer.checkpoint()
            await bk.delete_ledger(doomed.ledger_id)
            emit("DELETED")
            arm(point)
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(None, bk.bookie.collector.compact, 0.99)
        else:
            arm(point)
            await bk.bookie.checkpointer.checkpoint()
        emit("SURVIVED")


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), sys.argv[2]))
