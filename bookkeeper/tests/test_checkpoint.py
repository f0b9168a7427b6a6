"""Write cache, checkpoints and recovery from the LastLogMark."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from bookkeeper import bookie as bookie_module
from bookkeeper import checkpoint as checkpoint_module
from bookkeeper import give_way as give_way_module
from bookkeeper.entry_log import list_entry_logs
from bookkeeper.journal import journal_file_name, list_journal_files
from bookkeeper.last_log_mark import LastLogMark, read_mark

from .conftest import open_bookkeeper


def entries(count: int, start: int = 0) -> list[bytes]:
    return [b"entry-%04d-" % i + b"." * (i % 50) for i in range(start, start + count)]


async def checkpoint_then_crash(root: Path, before: int, after: int) -> int:
    """A ledger with ``before`` entries checkpointed and ``after`` more only in the journal
    when the bookie dies; returns its id."""
    async with open_bookkeeper(root, crash_on_exit=True) as bk:
        ledger = await bk.create_ledger()
        for data in entries(before):
            await ledger.add_entry(data)
        await bk.bookie.checkpointer.checkpoint()
        for data in entries(after, start=before):
            await ledger.add_entry(data)
        return ledger.ledger_id


async def test_reads_before_a_flush_come_from_the_write_cache(tmp_path: Path) -> None:
    async with open_bookkeeper(tmp_path) as bk:
        ledger = await bk.create_ledger()
        await asyncio.gather(*[ledger.add_entry(data) for data in entries(50)])
        assert list_entry_logs(tmp_path / "ledgers") == {}
        assert await ledger.read_entries(0, 49) == entries(50)

        await bk.bookie.checkpointer.checkpoint()

        assert bk.bookie.checkpointer.checkpoints == 1
        assert sum(list_entry_logs(tmp_path / "ledgers").values()) > 0
        assert await ledger.read_entries(10, 49) == entries(50)[10:]
        assert (ledger.last_add_confirmed, ledger.length) == (49, sum(map(len, entries(50))))


async def test_checkpoint_records_the_mark_and_trims_the_journal(tmp_path: Path) -> None:
    async with open_bookkeeper(tmp_path, journal_max_file_size=2000,
                               journal_preallocation_size=0) as bk:
        ledger = await bk.create_ledger()
        for data in entries(100):
            await ledger.add_entry(data)
        journal = list_journal_files(tmp_path / "journal")
        assert len(journal) > 3

        await bk.bookie.checkpointer.checkpoint()

        mark = read_mark(tmp_path / "ledgers")
        assert mark.file_id == journal[-1]
        size = (tmp_path / "journal" / journal_file_name(mark.file_id)).stat().st_size
        assert mark.offset == size
        assert list_journal_files(tmp_path / "journal") == [mark.file_id]
        assert await ledger.read_entries(0, 99) == entries(100)


async def test_restart_replays_only_the_journal_after_the_mark(tmp_path: Path,
                                                               monkeypatch) -> None:
    ledger_id = await checkpoint_then_crash(tmp_path, before=30, after=20)
    replayed: list[int] = []
    recover_journal = bookie_module.recover_journal

    def counting(journal_dir, on_record, *mark):
        def count(ledger_id, entry_id, data):
            replayed.append(entry_id)
            on_record(ledger_id, entry_id, data)
        return recover_journal(journal_dir, count, *mark)

    monkeypatch.setattr(bookie_module, "recover_journal", counting)
    async with open_bookkeeper(tmp_path) as bk:
        handle = await bk.open_ledger(ledger_id)
        assert replayed == list(range(30, 50))
        assert await handle.read_entries(0, 49) == entries(50)
    replayed.clear()
    async with open_bookkeeper(tmp_path) as bk:  # clean shutdown: nothing left to replay
        assert replayed == []
        assert await (await bk.open_ledger(ledger_id)).read_entries(0, 49) == entries(50)


async def test_torn_journal_tail_after_the_mark_is_cut(tmp_path: Path) -> None:
    ledger_id = await checkpoint_then_crash(tmp_path, before=10, after=5)
    mark = read_mark(tmp_path / "ledgers")
    path = tmp_path / "journal" / journal_file_name(mark.file_id)
    with open(path, "r+b") as f:
        f.truncate(path.stat().st_size - 4)

    async with open_bookkeeper(tmp_path) as bk:
        handle = await bk.open_ledger(ledger_id)
        assert handle.last_add_confirmed == 13
        assert await handle.read_entries(0, 13) == entries(14)


async def test_start_up_never_reads_entry_logs(tmp_path: Path, monkeypatch) -> None:
    async with open_bookkeeper(tmp_path, entry_log_size_limit=1000) as bk:
        ledger = await bk.create_ledger()
        for data in entries(200):
            await ledger.add_entry(data)
    assert len(list_entry_logs(tmp_path / "ledgers")) > 5

    def no_reading(*_args):
        raise AssertionError("start-up read an entry log")

    monkeypatch.setattr("bookkeeper.ledger_storage.open_log", no_reading)
    async with open_bookkeeper(tmp_path) as bk:
        handle = await bk.open_ledger(ledger.ledger_id, recovery=False)
        assert (handle.last_add_confirmed, handle.length) == (199, sum(map(len, entries(200))))
        monkeypatch.undo()
        assert await handle.read_entries(0, 199) == entries(200)


async def test_write_cache_past_its_size_starts_a_checkpoint(tmp_path: Path) -> None:
    async with open_bookkeeper(tmp_path, write_cache_max_size=2000) as bk:
        ledger = await bk.create_ledger()
        for data in entries(100):
            await ledger.add_entry(data)
        for _ in range(100):
            if bk.bookie.checkpointer.checkpoints:
                break
            await asyncio.sleep(0.01)
        assert bk.bookie.checkpointer.checkpoints >= 1
        assert read_mark(tmp_path / "ledgers") > LastLogMark(0, 0)
        assert await ledger.read_entries(0, 99) == entries(100)


async def test_periodic_checkpoint(tmp_path: Path) -> None:
    async with open_bookkeeper(tmp_path, flush_interval_ms=20) as bk:
        ledger = await bk.create_ledger()
        await ledger.add_entry(b"tick")
        for _ in range(200):
            if bk.bookie.checkpointer.checkpoints:
                break
            await asyncio.sleep(0.01)
        assert list_entry_logs(tmp_path / "ledgers")
        assert await ledger.read_entries(0, 0) == [b"tick"]


async def test_a_checkpoint_gives_way_between_chunks_but_not_at_shutdown(tmp_path: Path,
                                                                           monkeypatch) -> None:
    pauses: list[int] = []

    class CountingGiveWay(give_way_module.GiveWay):
        def __call__(self) -> None:
            pauses.append(1)

    monkeypatch.setattr(checkpoint_module, "GiveWay", CountingGiveWay)
    big = [bytes([i]) * 100_000 for i in range(30)]   # about three write chunks
    async with open_bookkeeper(tmp_path) as bk:
        ledger = await bk.create_ledger()
        await asyncio.gather(*[ledger.add_entry(data) for data in big])
        await bk.bookie.checkpointer.checkpoint()
        assert len(pauses) >= 2
        assert await ledger.read_entries(0, 29) == big
        given_way = len(pauses)
        await asyncio.gather(*[ledger.add_entry(data) for data in big])
        ledger_id = ledger.ledger_id
    assert len(pauses) == given_way   # the final checkpoint runs flat out
    async with open_bookkeeper(tmp_path) as bk:
        reopened = await bk.open_ledger(ledger_id)
        assert await reopened.read_entries(0, 59) == big + big


async def test_a_checkpoint_of_many_small_entries_gives_way_within_its_passes(tmp_path: Path, monkeypatch,
                                                                             packing: str) -> None:
    """Small entries fit one write chunk, but freeing them is a pass over every entry, and so,
    on the Python path, are sizing their records and encoding their index words: each gives
    way a slice at a time (the native packer does the last two with the interpreter released)."""
    pauses: list[int] = []

    class CountingGiveWay(give_way_module.GiveWay):
        def __call__(self) -> None:
            pauses.append(1)

    monkeypatch.setattr(checkpoint_module, "GiveWay", CountingGiveWay)
    small = [b"%010d" % i for i in range(20_000)]   # 0.7 MB of records: one write chunk
    async with open_bookkeeper(tmp_path) as bk:
        ledger = await bk.create_ledger()
        await asyncio.gather(*[ledger.add_entry(data) for data in small])
        await bk.bookie.checkpointer.checkpoint()
        passes = 3 if packing == "python" else 1
        assert len(pauses) >= passes * 3   # each in slices of at most 8192 entries
        assert await ledger.read_entries(0, len(small) - 1) == small


def test_giving_way_pays_back_python_work_but_not_writes(tmp_path: Path, monkeypatch) -> None:
    """A write releases the interpreter, so a step's writes are not slept off; its Python
    work is, four times, however the kernel's clock ticks split the thread's time."""
    slept: list[float] = []
    monkeypatch.setattr(give_way_module.time, "sleep", slept.append)
    give_way = give_way_module.GiveWay(sleep_per_cpu=4.0)
    fd = os.open(tmp_path / "copy", os.O_WRONLY | os.O_CREAT)
    chunk = bytes(1024 * 1024)

    def write() -> None:
        for offset in range(0, 64 * 1024 * 1024, len(chunk)):
            os.pwrite(fd, chunk, offset)

    try:
        before = time.thread_time()
        give_way.released(write)
        writing = time.thread_time() - before
        give_way()
    finally:
        os.close(fd)
    assert writing > 0.005 and sum(slept) < writing   # only the step's few calls were slept off

    slept.clear()
    give_way = give_way_module.GiveWay(sleep_per_cpu=4.0)
    before = time.thread_time()
    sum(i * i for i in range(300_000))   # a step of Python work only
    working = time.thread_time() - before
    give_way()
    assert 4.0 * working <= sum(slept) <= 4.0 * working + 0.004
