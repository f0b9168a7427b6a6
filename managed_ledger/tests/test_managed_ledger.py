"""ManagedLedger: adds, reads across ledgers, rollover, reopen, empty ledgers, search, trim."""

from __future__ import annotations

import asyncio
import errno
import os
from pathlib import Path

import pytest

from bookkeeper.config import BookieConfig
from bookkeeper.entry_log import list_entry_logs
from managed_ledger.config import StorageConfig
from managed_ledger.errors import (DataDirInUseError, ManagedLedgerClosedError, ManagedLedgerFencedError,
                                   ManagedLedgerStorageError)
from managed_ledger.factory import open_factory
from managed_ledger.metadata import managed_ledger_path
from managed_ledger.position import Entry, InitialPosition, Position

from .conftest import TOPIC, open_storage

KEEP_ALL = {"retention_time_minutes": -1, "retention_size_mb": -1}


async def test_add_and_read_back(tmp_path: Path) -> None:
    async with open_storage(tmp_path) as factory:
        ledger = await factory.open_ledger(TOPIC)
        assert await factory.open_ledger(TOPIC) is ledger
        (ledger_id, _, _), = ledger.ledgers_info()
        assert ledger.last_confirmed_entry == Position(ledger_id, -1)
        assert ledger.first_position() == Position(ledger_id, 0)
        positions = [await ledger.add_entry(b"m%d" % i) for i in range(5)]
        assert positions == [Position(ledger_id, i) for i in range(5)]
        assert ledger.last_confirmed_entry == positions[-1]
        assert (ledger.number_of_entries, ledger.total_size) == (5, 10)
        assert await ledger.read_entry(positions[2]) == Entry(positions[2], b"m2")
        assert await ledger.read_entry(Position(ledger_id, 5)) is None
        assert [e.data for e in await ledger.read_entries(positions[1], 3)] == [b"m1", b"m2", b"m3"]
        assert await ledger.read_entries(ledger.next_position(positions[-1]), 10) == []


async def test_concurrent_adds_keep_arrival_order_across_rollovers(tmp_path: Path) -> None:
    async with open_storage(tmp_path, max_entries_per_ledger=7, **KEEP_ALL) as factory:
        ledger = await factory.open_ledger(TOPIC)
        positions = await asyncio.gather(*[ledger.add_entry(b"%d" % i) for i in range(50)])
        assert positions == sorted(positions) and len(set(positions)) == 50
        infos = ledger.ledgers_info()
        assert [entries for _, entries, _ in infos] == [7] * 7 + [1]
        entries = await ledger.read_entries(ledger.first_position(), 100)
        assert [e.data for e in entries] == [b"%d" % i for i in range(50)]
        assert [e.position for e in entries] == positions


async def test_runs_land_whole_in_one_ledger_in_order_across_rollovers(tmp_path: Path) -> None:
    """append_run: each run goes whole to one ledger (a rollover may wait for the run that
    crosses the threshold), completes once with its first position, and runs queued while a
    ledger is being rolled over keep their order."""
    async with open_storage(tmp_path, max_entries_per_ledger=5, **KEEP_ALL) as factory:
        ledger = await factory.open_ledger(TOPIC)
        runs = [[b"%d-%d" % (run, i) for i in range(size)] for run, size in enumerate([3, 4, 1, 6, 2, 2])]
        done = [asyncio.get_running_loop().create_future() for _ in runs]
        for run, future in zip(runs, done):
            ledger.append_run(run, lambda first, error, future=future: future.set_result((first, error)))
        answers = await asyncio.gather(*done)
        assert all(error is None for _, error in answers)
        firsts = [first for first, _ in answers]
        assert [entries for _, entries, _ in ledger.ledgers_info()] == [7, 7, 4]
        assert [(p.ledger_id, p.entry_id) for p in firsts] == [
            (firsts[0].ledger_id, 0), (firsts[0].ledger_id, 3),
            (firsts[2].ledger_id, 0), (firsts[2].ledger_id, 1),
            (firsts[4].ledger_id, 0), (firsts[4].ledger_id, 2)]
        entries = await ledger.read_entries(ledger.first_position(), 100)
        assert [e.data for e in entries] == [data for run in runs for data in run]
        for first, run in zip(firsts, runs):
            assert await ledger.read_entry(first) == Entry(first, run[0])


async def test_a_failed_run_fails_whole_and_the_runs_queued_behind_it(tmp_path: Path, monkeypatch) -> None:
    from bookkeeper import journal as journal_module

    async with open_storage(tmp_path, **KEEP_ALL) as factory:
        ledger = await factory.open_ledger(TOPIC)
        await ledger.add_entry(b"before")
        answers: list[tuple[Position | None, BaseException | None]] = []

        def disk_full(fd: int, data, offset: int) -> None:
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(journal_module, "pwrite_all", disk_full)
        ledger.append_run([b"a", b"b", b"c"], lambda first, error: answers.append((first, error)))
        while not answers:
            await asyncio.sleep(0.01)
        ledger.append_run([b"d", b"e"], lambda first, error: answers.append((first, error)))   # rolls over
        while len(answers) < 2:
            await asyncio.sleep(0.01)
        assert [(first, type(error)) for first, error in answers] == [(None, ManagedLedgerStorageError)] * 2
        monkeypatch.undo()
        after = await ledger.add_entry(b"after")
        entries = await ledger.read_entries(ledger.first_position(), 10)
        assert [bytes(e.data) for e in entries] == [b"before", b"after"]
        assert entries[-1].position == after


async def test_rollover_by_size(tmp_path: Path) -> None:
    async with open_storage(tmp_path, max_size_per_ledger_mb=1, **KEEP_ALL) as factory:
        ledger = await factory.open_ledger(TOPIC)
        for _ in range(5):
            await ledger.add_entry(bytes(400 * 1024))
        assert [entries for _, entries, _ in ledger.ledgers_info()] == [3, 2]


async def test_reopen_recovers_and_skips_empty_ledgers(tmp_path: Path) -> None:
    async with open_storage(tmp_path) as factory:
        ledger = await factory.open_ledger(TOPIC)
        written = [await ledger.add_entry(b"before-%d" % i) for i in range(3)]
    for _ in range(3):  # restarts without writes leave nothing behind
        async with open_storage(tmp_path) as factory:
            ledger = await factory.open_ledger(TOPIC)
            assert ledger.last_confirmed_entry == written[-1]
    async with open_storage(tmp_path) as factory:
        ledger = await factory.open_ledger(TOPIC)
        assert len(ledger.ledgers_info()) == 2
        assert len(await factory.bookkeeper.list_ledgers()) == 2
        assert ledger.next_position(written[-1]) == Position(ledger.ledgers_info()[-1][0], 0)
        later = await ledger.add_entry(b"after")
        entries = await ledger.read_entries(written[0], 10)
        assert [e.position for e in entries] == written + [later]


async def test_open_ledger_left_open_by_a_dead_process(tmp_path: Path) -> None:
    factory = await open_factory(StorageConfig(tmp_path))
    ledger = await factory.open_ledger(TOPIC)
    written = [await ledger.add_entry(b"x%d" % i) for i in range(4)]
    # simulate a crash: stop the storage threads without closing the managed ledger
    await factory.bookkeeper.close()
    await factory.metadata_store.close()
    factory._lock.release()   # as the kernel does for a dead process
    async with open_storage(tmp_path) as factory:
        ledger = await factory.open_ledger(TOPIC)
        assert ledger.last_confirmed_entry == written[-1]
        assert [e.data for e in await ledger.read_entries(written[0], 10)] == \
            [b"x0", b"x1", b"x2", b"x3"]


async def test_reads_after_cache_eviction_come_from_disk(tmp_path: Path) -> None:
    async with open_storage(tmp_path, cache_size_mb=1) as factory:
        ledger = await factory.open_ledger(TOPIC)
        (await ledger.open_cursor("sub", InitialPosition.LATEST)).set_active()
        positions = [await ledger.add_entry(bytes([i]) * 100_000) for i in range(30)]
        assert 0 < factory.entry_cache.size <= 1024 * 1024
        entries = await ledger.read_entries(positions[0], 30)
        assert [e.data[0] for e in entries] == list(range(30))
        assert factory.entry_cache.misses > 0


async def test_find_newest_matching_binary_search(tmp_path: Path) -> None:
    async with open_storage(tmp_path, max_entries_per_ledger=10, **KEEP_ALL) as factory:
        ledger = await factory.open_ledger(TOPIC)
        positions = [await ledger.add_entry(b"%05d" % i) for i in range(45)]
        probes = 0

        def below(limit: int):
            def condition(entry: Entry) -> bool:
                nonlocal probes
                probes += 1
                return int(entry.data) < limit
            return condition

        assert await ledger.find_newest_matching(below(23)) == positions[22]
        assert probes <= 8
        assert await ledger.find_newest_matching(below(1000)) == positions[-1]
        assert await ledger.find_newest_matching(below(0)) is None


async def test_list_and_delete_ledgers(tmp_path: Path) -> None:
    async with open_storage(tmp_path) as factory:
        first = await factory.open_ledger(TOPIC)
        await first.add_entry(b"x")
        await first.open_cursor("sub", InitialPosition.EARLIEST)
        await factory.open_ledger("persistent://public/default/other")
        await factory.open_ledger("persistent://public/elsewhere/t")
        assert await factory.list_ledgers("persistent://public/default/") == sorted(
            [TOPIC, "persistent://public/default/other"])
        assert await factory.list_ledgers("persistent://public/else") == ["persistent://public/elsewhere/t"]
        await factory.delete_ledger("persistent://public/elsewhere/t")
        await factory.delete_ledger(TOPIC)
        assert await factory.list_ledgers() == ["persistent://public/default/other"]
        with pytest.raises(ManagedLedgerClosedError):
            await first.add_entry(b"gone")
        assert len(await factory.bookkeeper.list_ledgers()) == 1
        reborn = await factory.open_ledger(TOPIC)
        assert reborn.number_of_entries == 0 and not reborn.cursors


async def test_trimming_deletes_consumed_ledgers_and_reclaims_files(tmp_path: Path) -> None:
    settings = dict(max_entries_per_ledger=20, bookie=BookieConfig(entry_log_size_limit=2000))
    async with open_storage(tmp_path, **settings) as factory:
        ledger = await factory.open_ledger(TOPIC)
        cursor = await ledger.open_cursor("sub", InitialPosition.EARLIEST)
        positions = [await ledger.add_entry(b"%0100d" % i) for i in range(95)]
        ledger_dir = tmp_path / "bookie" / "ledgers"
        await factory.bookkeeper.bookie.checkpointer.checkpoint()
        logs_before = len(list_entry_logs(ledger_dir))
        assert [entries for _, entries, _ in ledger.ledgers_info()] == [20, 20, 20, 20, 15]

        cursor.mark_delete(positions[59])
        await cursor.flush()
        await ledger._trimming.wait()

        assert [ledger_id for ledger_id, _, _ in ledger.ledgers_info()] == \
            [positions[60].ledger_id, positions[80].ledger_id]
        assert len(list_entry_logs(ledger_dir)) < logs_before
        assert ledger.first_position() == positions[60]
        assert cursor.backlog() == 35
        entries = await cursor.read_entries_or_wait(100)
        assert [e.position for e in entries] == positions[60:]
    async with open_storage(tmp_path, **settings) as factory:
        ledger = await factory.open_ledger(TOPIC)
        assert ledger.number_of_entries == 35
        assert ledger.cursors["sub"].backlog() == 35


async def test_without_cursors_retention_alone_decides(tmp_path: Path) -> None:
    """No subscription keeps data: sealed ledgers go under the default 0/0 retention, while a
    non-durable cursor (a reader) holds nothing back, as in Pulsar."""
    async with open_storage(tmp_path, max_entries_per_ledger=5) as factory:
        ledger = await factory.open_ledger(TOPIC)
        ledger.new_non_durable_cursor("reader", ledger.first_position())
        for i in range(22):
            await ledger.add_entry(b"%d" % i)
        await ledger.trim()
        assert [entries for _, entries, _ in ledger.ledgers_info()] == [2]


async def test_infinite_retention_keeps_everything_without_cursors(tmp_path: Path) -> None:
    async with open_storage(tmp_path, max_entries_per_ledger=5, **KEEP_ALL) as factory:
        ledger = await factory.open_ledger(TOPIC)
        for i in range(20):
            await ledger.add_entry(b"%d" % i)
        await ledger.trim()
        assert ledger.number_of_entries == 20


async def test_orphan_and_vanished_ledgers_are_reconciled_at_open(tmp_path: Path) -> None:
    async with open_storage(tmp_path, max_entries_per_ledger=2, **KEEP_ALL) as factory:
        ledger = await factory.open_ledger(TOPIC)
        p = [await ledger.add_entry(b"%d" % i) for i in range(6)]
        orphan = await factory.bookkeeper.create_ledger()  # as if a rollover died half-way
        await orphan.add_entry(b"never listed")
    async with open_storage(tmp_path) as factory:
        assert orphan.ledger_id not in await factory.bookkeeper.list_ledgers()
        await factory.bookkeeper.delete_ledger(p[2].ledger_id)  # as if a delete died half-way
        ledger = await factory.open_ledger(TOPIC)
        assert [e.position for e in await ledger.read_entries(ledger.first_position(), 10)] == \
            [p[0], p[1], p[4], p[5]]


async def test_failed_storage_surfaces_as_managed_ledger_error(tmp_path: Path, monkeypatch) -> None:
    async with open_storage(tmp_path) as factory:
        ledger = await factory.open_ledger(TOPIC)
        await ledger.add_entry(b"ok")

        def broken_disk(fd: int) -> None:
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(os, "fdatasync", broken_disk)
        with pytest.raises(ManagedLedgerStorageError):
            await ledger.add_entry(b"lost")
        with pytest.raises(ManagedLedgerStorageError):
            await ledger.add_entry(b"still failing")
        monkeypatch.undo()


async def test_disk_full_fails_adds_then_writing_resumes_in_a_new_ledger(tmp_path: Path, monkeypatch) -> None:
    from bookkeeper import journal as journal_module

    async with open_storage(tmp_path, **KEEP_ALL) as factory:
        ledger = await factory.open_ledger(TOPIC)
        before = await ledger.add_entry(b"before")

        def disk_full(fd: int, data, offset: int) -> None:
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(journal_module, "pwrite_all", disk_full)
        with pytest.raises(ManagedLedgerStorageError):
            await ledger.add_entry(b"lost")
        with pytest.raises(ManagedLedgerStorageError):   # still full: the rollover's adds fail
            await ledger.add_entry(b"lost too")
        monkeypatch.undo()
        after = await ledger.add_entry(b"after")
        assert after.ledger_id > before.ledger_id
    async with open_storage(tmp_path, **KEEP_ALL) as factory:
        ledger = await factory.open_ledger(TOPIC)
        entries = await ledger.read_entries(ledger.first_position(), 10)
        assert [bytes(e.data) for e in entries] == [b"before", b"after"]


async def test_open_while_closing_waits_and_opens_a_new_instance(tmp_path: Path) -> None:
    async with open_storage(tmp_path) as factory:
        ledger = await factory.open_ledger(TOPIC)
        await ledger.add_entry(b"m0")
        closing = asyncio.get_running_loop().create_task(ledger.close())
        await asyncio.sleep(0)
        assert ledger.closing
        with pytest.raises(ManagedLedgerClosedError):
            await ledger.append(b"refused, as a failed future")
        reopened = await factory.open_ledger(TOPIC)
        await closing
        assert reopened is not ledger and reopened.number_of_entries == 1
        assert (await reopened.add_entry(b"m1")).entry_id == 0


async def test_a_data_dir_is_opened_by_one_factory_at_a_time(tmp_path: Path) -> None:
    async with open_storage(tmp_path):
        with pytest.raises(DataDirInUseError, match=f"pid {os.getpid()}"):
            await open_factory(StorageConfig(tmp_path))
    async with open_storage(tmp_path):   # free again once closed
        pass


def test_rollover_rule_asks_again_only_once_a_full_ledger_is_old_enough():
    from managed_ledger.rollover import RolloverRule

    rule = RolloverRule(StorageConfig(data_dir=Path("."), max_entries_per_ledger=10, min_ledger_rollover_minutes=1))
    rule.start(now=100.0)
    assert not rule.due(0, 0, now=1000.0)          # a ledger without entries is never rolled over
    assert not rule.due(10, 0, now=110.0)          # full, but younger than the minimum
    assert rule.ask_at == (float("inf"), float("inf"), 160.0)
    assert rule.due(11, 0, now=160.0)


async def test_metadata_written_by_another_broker_fences_the_managed_ledger(tmp_path: Path) -> None:
    """A BadVersion on the metadata (another owner's write) fails the add that needed it and
    every later one at once, with ManagedLedgerFencedError: nothing more is written here."""
    async with open_storage(tmp_path, max_entries_per_ledger=1) as factory:
        ledger = await factory.open_ledger(TOPIC)
        first = await ledger.add_entry(b"one")
        path = managed_ledger_path(TOPIC)
        raw, version = await factory.metadata_store.get(path)
        await factory.metadata_store.put(path, raw, version)   # the other writer
        with pytest.raises(ManagedLedgerFencedError):
            await ledger.add_entry(b"two")   # the full ledger rolls over: its write is refused
        with pytest.raises(ManagedLedgerFencedError):
            await ledger.add_entry(b"three")
        assert ledger.last_confirmed_entry == first
