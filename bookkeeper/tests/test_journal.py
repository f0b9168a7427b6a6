"""Journal: group commit, fsync counting, torn-tail recovery, rotation."""

from __future__ import annotations

import asyncio
import errno
import os
import random
from pathlib import Path

import pytest

from bookkeeper import journal as journal_module
from bookkeeper.errors import BookieIOError
from bookkeeper.journal import COMPANY_WORTH_WAITING, HEADER_SIZE, journal_file_name, list_journal_files

from .conftest import open_bookkeeper


def journal_files(root: Path) -> list[Path]:
    return [root / "journal" / journal_file_name(i) for i in list_journal_files(root / "journal")]


async def test_group_commit_one_fsync_and_one_loop_wakeup_per_group(tmp_path: Path) -> None:
    async with open_bookkeeper(tmp_path, max_group_wait_ms=20) as bk:
        loop = asyncio.get_running_loop()
        wakeups = 0
        original = loop.call_soon_threadsafe

        def counting(callback, *args, **kwargs):
            nonlocal wakeups
            wakeups += 1
            return original(callback, *args, **kwargs)

        journal = bk.bookie.journal
        ledger = await bk.create_ledger()
        syncs_before, groups_before = journal.syncs, journal.groups
        loop.call_soon_threadsafe = counting
        ids = await asyncio.gather(*[ledger.add_entry(b"entry-%d" % i) for i in range(500)])
        loop.call_soon_threadsafe = original

        assert ids == list(range(500))
        syncs = journal.syncs - syncs_before
        groups = journal.groups - groups_before
        assert syncs == groups
        assert 1 <= syncs <= 5
        assert wakeups == groups
        assert await ledger.read_entries(0, 499) == [b"entry-%d" % i for i in range(500)]


async def test_buffered_writes_threshold_commits_early(tmp_path: Path) -> None:
    async with open_bookkeeper(tmp_path, max_group_wait_ms=10_000,
                               buffered_writes_threshold=1000) as bk:
        ledger = await bk.create_ledger()
        # a 10 s group wait would time the test out unless the byte threshold cuts it short
        await asyncio.wait_for(asyncio.gather(*[ledger.add_entry(b"x" * 100) for i in range(20)]),
                               timeout=5)


async def test_a_lone_writer_does_not_wait_for_company(tmp_path: Path) -> None:
    async with open_bookkeeper(tmp_path, max_group_wait_ms=10_000) as bk:
        ledger = await bk.create_ledger()
        # one add at a time, each awaited: a 10 s wait for company would time the test out
        for i in range(5):
            assert await asyncio.wait_for(ledger.add_entry(b"alone-%d" % i), timeout=5) == i
        assert bk.bookie.journal.groups >= 5


async def test_a_few_writers_do_not_wait_for_company(tmp_path: Path) -> None:
    async with open_bookkeeper(tmp_path, max_group_wait_ms=10_000) as bk:
        ledger = await bk.create_ledger()
        # a few adds at a time (a producer with a few batches in flight), each few awaited
        for _ in range(5):
            adds = [ledger.add_entry(b"few-%d" % i) for i in range(COMPANY_WORTH_WAITING - 1)]
            await asyncio.wait_for(asyncio.gather(*adds), timeout=5)
        assert bk.bookie.journal.groups >= 5


async def test_unsynced_journal_still_stores(tmp_path: Path) -> None:
    async with open_bookkeeper(tmp_path, sync_data=False) as bk:
        ledger = await bk.create_ledger()
        await asyncio.gather(*[ledger.add_entry(b"e%d" % i) for i in range(10)])
        assert bk.bookie.journal.syncs == 0
        assert await ledger.read_entries(9, 9) == [b"e9"]


async def _write_entries(root: Path, count: int) -> int:
    async with open_bookkeeper(root, crash_on_exit=True) as bk:
        ledger = await bk.create_ledger()
        for i in range(count):
            await ledger.add_entry(b"payload-%03d" % i)
        return ledger.ledger_id


async def _recovered_entries(root: Path, ledger_id: int) -> list[bytes]:
    async with open_bookkeeper(root) as bk:
        handle = await bk.open_ledger(ledger_id)
        if handle.last_add_confirmed < 0:
            return []
        return await handle.read_entries(0, handle.last_add_confirmed)


async def test_torn_tail_is_cut_on_recovery(tmp_path: Path) -> None:
    ledger_id = await _write_entries(tmp_path, 10)
    (last_file,) = [p for p in journal_files(tmp_path) if p.stat().st_size]
    size = last_file.stat().st_size
    os.truncate(last_file, size - 3)

    entries = await _recovered_entries(tmp_path, ledger_id)

    assert entries == [b"payload-%03d" % i for i in range(9)]
    # the start-up checkpoint moved the replayed entries to the entry logs, the journal went
    assert not last_file.exists()
    assert await _recovered_entries(tmp_path, ledger_id) == entries


async def test_corrupt_last_record_is_cut(tmp_path: Path) -> None:
    ledger_id = await _write_entries(tmp_path, 5)
    (last_file,) = [p for p in journal_files(tmp_path) if p.stat().st_size]
    with open(last_file, "r+b") as f:
        f.seek(-1, os.SEEK_END)
        f.write(b"\xff")

    assert await _recovered_entries(tmp_path, ledger_id) == [b"payload-%03d" % i for i in range(4)]


async def test_zero_filled_tail_is_cut(tmp_path: Path) -> None:
    ledger_id = await _write_entries(tmp_path, 3)
    (last_file,) = [p for p in journal_files(tmp_path) if p.stat().st_size]
    with open(last_file, "ab") as f:
        f.write(bytes(4096))

    assert len(await _recovered_entries(tmp_path, ledger_id)) == 3


async def test_rotation_and_reads_across_files_after_reopen(tmp_path: Path) -> None:
    async with open_bookkeeper(tmp_path, crash_on_exit=True, journal_max_file_size=1000) as bk:
        ledger = await bk.create_ledger()
        for i in range(100):
            await ledger.add_entry(b"%050d" % i)
        await ledger.close()
    assert len(journal_files(tmp_path)) > 5  # no checkpoint yet: all replayed at start
    async with open_bookkeeper(tmp_path) as bk:
        handle = await bk.open_ledger(ledger.ledger_id)
        assert handle.last_add_confirmed == 99
        assert await handle.read_entries(0, 99) == [b"%050d" % i for i in range(100)]


async def test_failed_write_fails_that_ledger_and_writing_resumes_elsewhere(tmp_path: Path, monkeypatch) -> None:
    """Disk full: the group's adds fail, the ledger refuses later adds (its entries stay a
    contiguous prefix), and a new ledger is written once space returns; all of it survives
    a crash and recovery."""
    async with open_bookkeeper(tmp_path, crash_on_exit=True) as bk:
        ledger = await bk.create_ledger()
        await ledger.add_entry(b"fine")

        def disk_full(fd: int, data, offset: int) -> None:
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(journal_module, "pwrite_all", disk_full)
        with pytest.raises(BookieIOError):
            await ledger.add_entry(b"lost")
        monkeypatch.undo()
        with pytest.raises(BookieIOError):
            await ledger.add_entry(b"refused")          # space is back, but this ledger lost one
        later = await bk.create_ledger()
        await later.add_entry(b"after")
        ids = ledger.ledger_id, later.ledger_id
    async with open_bookkeeper(tmp_path) as bk:
        first, second = [await bk.open_ledger(i) for i in ids]
        assert await first.read_entries(0, first.last_add_confirmed) == [b"fine"]
        assert await second.read_entries(0, second.last_add_confirmed) == [b"after"]


async def test_a_journal_file_that_cannot_be_created_fails_its_group_and_keeps_its_id(tmp_path: Path) -> None:
    """The journal directory moved away under a running bookie (an operator's mistake): the
    groups that need a new file fail, and once it is back the next file takes the next id,
    not one past every failed attempt."""
    async with open_bookkeeper(tmp_path, crash_on_exit=True, journal_max_file_size=300) as bk:
        ledger = await bk.create_ledger()
        await ledger.add_entry(b"x" * 200)
        before = list_journal_files(tmp_path / "journal")
        (tmp_path / "journal").rename(tmp_path / "moved")
        for _ in range(3):
            with pytest.raises(BookieIOError):
                await (await bk.create_ledger()).add_entry(b"y" * 200)
        (tmp_path / "moved").rename(tmp_path / "journal")
        later = await bk.create_ledger()
        await later.add_entry(b"after")
        assert list_journal_files(tmp_path / "journal") == [*before, before[-1] + 1]
        ids = ledger.ledger_id, later.ledger_id
    async with open_bookkeeper(tmp_path) as bk:
        first, second = [await bk.open_ledger(i) for i in ids]
        assert await first.read_entries(0, 0) == [b"x" * 200]
        assert await second.read_entries(0, 0) == [b"after"]


async def test_failed_fsync_fails_the_group(tmp_path: Path, monkeypatch) -> None:
    async with open_bookkeeper(tmp_path) as bk:
        ledger = await bk.create_ledger()
        await ledger.add_entry(b"fine")

        def broken_disk(fd: int) -> None:
            raise OSError(5, "Input/output error")

        monkeypatch.setattr(os, "fdatasync", broken_disk)
        with pytest.raises(BookieIOError):
            await ledger.add_entry(b"lost")
        monkeypatch.undo()
        assert await ledger.read_entries(0, 0) == [b"fine"]


async def test_corruption_inside_an_older_file_stops_that_ledger_at_the_gap(tmp_path: Path) -> None:
    async with open_bookkeeper(tmp_path, crash_on_exit=True, journal_max_file_size=300) as bk:
        ledger = await bk.create_ledger()
        for i in range(20):
            await ledger.add_entry(b"%040d" % i)
        ledger_id = ledger.ledger_id
    first = journal_files(tmp_path)[0]
    with open(first, "r+b") as f:  # flip a data byte of the second record of the oldest file
        f.seek(HEADER_SIZE + 40 + HEADER_SIZE + 5)
        f.write(b"#")

    async with open_bookkeeper(tmp_path) as bk:
        handle = await bk.open_ledger(ledger_id)
        assert handle.last_add_confirmed == 0
        assert await handle.read_entries(0, 0) == [b"%040d" % 0]


async def test_preallocated_space_is_not_mistaken_for_data(tmp_path: Path) -> None:
    async with open_bookkeeper(tmp_path, crash_on_exit=True,
                               journal_preallocation_size=64 * 1024) as bk:
        ledger = await bk.create_ledger()
        for i in range(10):
            await ledger.add_entry(b"e%d" % i)
        (current,) = journal_files(tmp_path)
        assert current.stat().st_size == (HEADER_SIZE + 2) + 64 * 1024  # first write + chunk
        # a kill -9 now would leave the zero-filled tail behind: copy the file as it is
        snapshot = current.read_bytes()
    current.write_bytes(snapshot)
    assert await _recovered_entries(tmp_path, ledger.ledger_id) == [b"e%d" % i for i in range(10)]


async def test_synced_journal_pages_leave_the_page_cache(tmp_path: Path, monkeypatch) -> None:
    dropped: list[tuple[int, int]] = []
    real_fadvise = os.posix_fadvise

    def recording(fd: int, offset: int, length: int, advice: int) -> None:
        if advice == os.POSIX_FADV_DONTNEED:
            dropped.append((offset, length))
        real_fadvise(fd, offset, length, advice)

    monkeypatch.setattr(journal_module.os, "posix_fadvise", recording)
    async with open_bookkeeper(tmp_path) as bk:
        ledger = await bk.create_ledger()
        data = [bytes([i]) * 300_000 for i in range(10)]   # about 3 MB, one add at a time
        for entry in data:
            await ledger.add_entry(entry)
        written = journal_files(tmp_path)[-1]
        assert dropped, "no synced journal pages were dropped"
        ends = [offset + length for offset, length in dropped]
        assert [offset for offset, _ in dropped] == [0, *ends[:-1]]   # contiguous, in order
        assert all(end % 4096 == 0 for end in ends)
        assert ends[-1] <= sum(HEADER_SIZE + len(entry) for entry in data)   # only written pages
        assert await ledger.read_entries(0, 9) == data
    assert written.exists()


async def test_journal_pages_stay_cached_when_configured(tmp_path: Path, monkeypatch) -> None:
    calls: list[int] = []
    monkeypatch.setattr(journal_module.os, "posix_fadvise", lambda *args: calls.append(1))
    async with open_bookkeeper(tmp_path, journal_remove_from_page_cache=False) as bk:
        ledger = await bk.create_ledger()
        for i in range(10):
            await ledger.add_entry(bytes([i]) * 300_000)
    assert calls == []


def test_gathered_writes_survive_short_writes_and_more_buffers_than_one_call_takes(tmp_path: Path,
                                                                                  monkeypatch) -> None:
    """pwrite_all hands its buffers to pwritev without joining them: IOV_MAX at a time, and
    after a short write it carries on from the byte where the write ended."""
    parts = [bytes([i % 251]) * (1 + i % 7) for i in range(2 * journal_module.IOV_MAX + 5)]
    real_pwritev = os.pwritev
    calls: list[int] = []

    def short_pwritev(fd: int, buffers, offset: int) -> int:   # at most 1000 bytes a call
        calls.append(len(buffers))
        kept, room = [], 1000
        for buffer in buffers:
            kept.append(memoryview(buffer)[:room])
            room -= len(kept[-1])
            if not room:
                break
        return real_pwritev(fd, kept, offset)

    monkeypatch.setattr(journal_module.os, "pwritev", short_pwritev)
    fd = os.open(tmp_path / "gathered", os.O_RDWR | os.O_CREAT)
    try:
        journal_module.pwrite_all(fd, parts, 10)
        assert os.pread(fd, 10 + sum(map(len, parts)), 0) == bytes(10) + b"".join(parts)
    finally:
        os.close(fd)
    assert max(calls) <= journal_module.IOV_MAX and len(calls) > sum(map(len, parts)) // 1000


def test_native_and_python_framing_give_the_same_records() -> None:
    """bookkeeper._records.frame_run against the Python framer: runs of entries of every
    length around the CRC's 8-byte steps, ids up to 2**63."""
    if journal_module._frame_run is None:
        pytest.skip("bookkeeper._records is not built here (or the CPU lacks SSE4.2)")
    rng = random.Random(5)
    for _ in range(300):
        entries = [rng.randbytes(rng.choice([0, 1, 7, 8, 9, 15, 16, 17, 100, 4096, 70_000]))
                   for _ in range(rng.randint(1, 40))]
        ledger_id, first_entry_id = rng.randint(0, 2**63 - 1), rng.randint(0, 2**40)
        native, python = [b"before"], [b"before"]
        assert journal_module._frame_run(ledger_id, first_entry_id, entries, native) == \
            journal_module.frame_run(ledger_id, first_entry_id, entries, python)
        assert native == python


@pytest.mark.usefixtures("packing")
async def test_records_of_either_framer_are_recovered(tmp_path: Path) -> None:
    async with open_bookkeeper(tmp_path, crash_on_exit=True) as bk:
        ledger = await bk.create_ledger()
        await asyncio.gather(*[ledger.add_entry(b"%d" % i * i) for i in range(50)])
    async with open_bookkeeper(tmp_path) as bk:
        ledger = await bk.open_ledger(ledger.ledger_id)
        assert await ledger.read_entries(0, 49) == [b"%d" % i * i for i in range(50)]
