"""Subprocess for test_crash_points: kills itself with SIGKILL at one named step of a flush,
a checkpoint, a compaction, a start-up replay or a journal rotation.

Usage: python -m bookkeeper.tests.crash_bookie ROOT POINT

Writes entries to a kept and a doomed ledger (interleaved, so entry logs mix them), checkpoints
once, writes more, then arms POINT and runs the step it names (for "recovery-*": writes
everything without a checkpoint, stops as a kill would, arms POINT and starts again; for
"rotation-*": arms POINT and writes on into small journal files until one rotates; for
"diskfull-*": the disk is full at POINT for one checkpoint, adds go on, space returns, a
checkpoint succeeds, more adds, then the kill). Prints "ACK <ledger> <entry>"
per acknowledged add and "KEPT <ledger>" / "DOOMED <ledger>" first; every line is flushed.
"""

from __future__ import annotations

import asyncio
import errno
import os
import signal
import sys
from pathlib import Path

from bookkeeper import bookie, checkpoint, entry_log, give_way, journal, ledger_index
from bookkeeper.garbage_collector import GarbageCollector
from bookkeeper.ledger_index import LedgerIndex
from bookkeeper.tests.conftest import open_bookkeeper

SETTINGS = dict(entry_log_size_limit=4096, flush_interval_ms=10**8, gc_wait_time_ms=10**8)
#: Journal files this small rotate every few groups.
ROTATING = dict(SETTINGS, journal_max_file_size=16384, journal_preallocation_size=4096)


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


def disk_full(*_args, **_kwargs) -> None:
    raise OSError(errno.ENOSPC, "No space left on device (injected)")


def half_written_then_disk_full(fd: int, buffers, offset: int) -> None:
    data = b"".join(buffers)
    ORIGINAL_PWRITE_ALL(fd, [data[: len(data) // 2]], offset)
    disk_full()


def give_way_dying_once_records_are_written():
    """A GiveWay whose first pause after records reached an entry log kills: part of the cache
    is in the logs and no index points at it yet (earlier pauses, while the flush sizes the
    records, have written nothing)."""
    written: list[int] = []

    def pwrite_and_note(fd: int, buffers, offset: int) -> None:
        ORIGINAL_PWRITE_ALL(fd, buffers, offset)
        written.append(sum(map(len, buffers)))

    class DyingGiveWay(give_way.GiveWay):
        def __call__(self) -> None:
            if written:
                die()

    entry_log.pwrite_all = pwrite_and_note
    return DyingGiveWay()


def close_file_then_die(writer: journal.JournalWriter) -> None:
    ORIGINAL_CLOSE_FILE(writer)
    die()


def open_next_file_then_die_on_write(writer: journal.JournalWriter) -> None:
    ORIGINAL_OPEN_NEXT_FILE(writer)
    journal.pwrite_all = die


ORIGINAL_SWITCH_INDEX = GarbageCollector._switch_index
ORIGINAL_CLOSE_FILE = journal.JournalWriter._close_file
ORIGINAL_OPEN_NEXT_FILE = journal.JournalWriter._open_next_file
ORIGINAL_PWRITE_ALL = entry_log.pwrite_all
#: Crash point -> (owner, attribute) replaced by a SIGKILL (or by a wrapper that dies after).
TARGETS = {
    "flush-before-index": (LedgerIndex, "persist", die),
    "flush-between-chunks": (checkpoint, "GiveWay", give_way_dying_once_records_are_written),
    "checkpoint-before-mark": (checkpoint, "write_mark", die),
    # with the open-file budget at 1, the index files of both ledgers are synced by one syncfs
    "checkpoint-before-syncfs": (ledger_index, "sync_filesystem", die),
    "checkpoint-before-trim": (checkpoint, "trim_journal", die),
    "recovery-before-mark": (bookie, "write_mark", die),
    "compaction-before-index": (GarbageCollector, "_switch_index", die),
    "compaction-before-index-sync": (LedgerIndex, "sync", die),
    "compaction-before-remove": (GarbageCollector, "_switch_index", switch_index_then_die),
    "rotation-before-close": (journal.JournalWriter, "_open_next_file", die),
    "rotation-after-close": (journal.JournalWriter, "_close_file", close_file_then_die),
    "rotation-before-dir-sync": (journal, "fsync_directory", die),
    "rotation-first-write": (journal.JournalWriter, "_open_next_file", open_next_file_then_die_on_write),
    "diskfull-entry-log": (entry_log, "pwrite_all", half_written_then_disk_full),
    "diskfull-index": (LedgerIndex, "persist", disk_full),
    "diskfull-mark": (checkpoint, "write_mark", disk_full),
}


def arm(point: str):
    """Replace the function that runs right at POINT by a SIGKILL (or a failure); returns
    what puts the original back."""
    if point not in TARGETS:
        raise SystemExit(f"unknown crash point {point}")
    owner, attribute, replacement = TARGETS[point]
    original = getattr(owner, attribute)
    setattr(owner, attribute, replacement)
    return lambda: setattr(owner, attribute, original)


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
    rotation = point.startswith("rotation")
    if point.endswith("syncfs"):
        ledger_index.MAX_OPEN_FILES = 1
    async with open_bookkeeper(root, **(ROTATING if rotation else SETTINGS)) as bk:
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
        elif rotation:
            arm(point)
            await write_round(kept, doomed, 100)
        elif point.startswith("diskfull"):
            space_returns = arm(point)
            await bk.bookie.checkpointer.checkpoint()
            assert bk.bookie.checkpointer.checkpoints == 1, "the checkpoint should have failed"
            await write_round(kept, doomed, 40)
            space_returns()
            await bk.bookie.checkpointer.checkpoint()
            assert bk.bookie.checkpointer.checkpoints == 2, "the retried checkpoint failed"
            await write_round(kept, doomed, 20)
            die()
        else:
            arm(point)
            await bk.bookie.checkpointer.checkpoint()
        emit("SURVIVED")


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), sys.argv[2]))
