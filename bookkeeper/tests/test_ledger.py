"""Ledger API: contiguous ids, close, open with recovery (fencing), delete reclaims logs."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bookkeeper.errors import (LedgerClosedError, LedgerFencedError, NoSuchEntryError,
                               NoSuchLedgerError)
from bookkeeper.entry_log import list_entry_logs
from bookkeeper.journal import list_journal_files
from bookkeeper.ledger import LEDGER_ID_BLOCK, LEDGER_ID_COUNTER_PATH, LedgerState

from .conftest import open_bookkeeper


async def test_add_read_close(tmp_path: Path) -> None:
    async with open_bookkeeper(tmp_path) as bk:
        ledger = await bk.create_ledger()
        assert ledger.last_add_confirmed == -1
        assert [await ledger.add_entry(b"a"), await ledger.add_entry(b"bb")] == [0, 1]
        assert ledger.last_add_confirmed == 1 and ledger.length == 3
        assert await ledger.read_entries(0, 1) == [b"a", b"bb"]
        with pytest.raises(NoSuchEntryError):
            await ledger.read_entries(0, 2)
        await ledger.close()
        assert ledger.is_closed
        with pytest.raises(LedgerClosedError):
            ledger.add_entry(b"late")
        reopened = await bk.open_ledger(ledger.ledger_id)
        assert (reopened.last_add_confirmed, reopened.length) == (1, 3)


async def test_a_raising_add_callback_does_not_keep_the_others_of_its_group_waiting(tmp_path: Path) -> None:
    async with open_bookkeeper(tmp_path) as bk:
        ledger = await bk.create_ledger()
        called: list[int] = []
        done = asyncio.get_running_loop().create_future()

        def on_done(last_entry_id: int, error: BaseException | None) -> None:
            called.append(last_entry_id)
            if last_entry_id in (1, 4):
                raise RuntimeError("a caller's bug")
            if last_entry_id == 6:
                done.set_result(None)

        runs = [[b"a"], [b"b"], [b"c", b"d", b"e"], [b"f", b"g"]]
        for run in runs:   # queued in one loop iteration: one group
            ledger.add_entries_with_callback(run, on_done)
        await asyncio.wait_for(done, 10)
        assert called == [0, 1, 4, 6]   # once per run, with its last entry id
        assert await ledger.read_entries(0, 6) == [b"a", b"b", b"c", b"d", b"e", b"f", b"g"]


async def test_ledger_ids_grow_across_restarts(tmp_path: Path) -> None:
    async with open_bookkeeper(tmp_path) as bk:
        first = (await bk.create_ledger()).ledger_id
        second = (await bk.create_ledger()).ledger_id
    async with open_bookkeeper(tmp_path) as bk:
        third = (await bk.create_ledger()).ledger_id
        assert first < second < third
        assert await bk.list_ledgers() == [first, second, third]


async def test_concurrent_creations_share_one_reservation_of_ids(tmp_path: Path) -> None:
    async with open_bookkeeper(tmp_path) as bk:
        commits = bk.store.commits
        ledgers = await asyncio.gather(*[bk.create_ledger() for _ in range(50)])
        ids = [ledger.ledger_id for ledger in ledgers]
        assert len(set(ids)) == 50
        found = await bk.store.get(LEDGER_ID_COUNTER_PATH)
        assert found is not None and (int(found[0]), found[1]) == (LEDGER_ID_BLOCK, 0)   # one reservation
        assert bk.store.commits - commits < 50   # the 50 ledgers' metadata shared commits too
    async with open_bookkeeper(tmp_path) as bk:   # the rest of the block is never used
        assert (await bk.create_ledger()).ledger_id == LEDGER_ID_BLOCK


async def test_recovery_open_fences_the_writer(tmp_path: Path) -> None:
    async with open_bookkeeper(tmp_path) as bk:
        writer = await bk.create_ledger()
        in_flight = [writer.add_entry(b"e%d" % i) for i in range(5)]
        recovered = await bk.open_ledger(writer.ledger_id, recovery=True)
        assert await asyncio.gather(*in_flight) == [0, 1, 2, 3, 4]
        assert recovered.is_closed and recovered.last_add_confirmed == 4
        with pytest.raises(LedgerFencedError):
            writer.add_entry(b"refused")
        with pytest.raises(LedgerFencedError):
            await writer.close()
        found = await bk.store.get(f"/ledgers/{writer.ledger_id}")
        assert b'"CLOSED"' in found[0] and b'"last_entry_id": 4' in found[0]


async def test_recovery_after_restart_finds_last_entry(tmp_path: Path) -> None:
    async with open_bookkeeper(tmp_path) as bk:
        writer = await bk.create_ledger()
        for i in range(7):
            await writer.add_entry(b"%d" % i)
        # no close: the process "dies" with the ledger open
    async with open_bookkeeper(tmp_path) as bk:
        peek = await bk.open_ledger(writer.ledger_id, recovery=False)
        assert not peek.is_closed and peek.last_add_confirmed == 6
        recovered = await bk.open_ledger(writer.ledger_id)
        assert recovered.is_closed and recovered.last_add_confirmed == 6
        assert await recovered.read_entries(3, 6) == [b"3", b"4", b"5", b"6"]
        assert LedgerState.CLOSED.value == "CLOSED"


async def test_delete_reclaims_entry_logs(tmp_path: Path) -> None:
    async with open_bookkeeper(tmp_path, entry_log_size_limit=2000) as bk:
        kept = await bk.create_ledger()
        doomed = await bk.create_ledger()
        await kept.add_entry(b"keep me")
        for i in range(100):
            await doomed.add_entry(b"%060d" % i)
        await kept.add_entry(b"keep me too")
        await bk.bookie.checkpointer.checkpoint()
        logs_before = list_entry_logs(tmp_path / "ledgers")
        await bk.delete_ledger(doomed.ledger_id)
        logs_after = list_entry_logs(tmp_path / "ledgers")
        assert len(logs_after) <= 2 < len(logs_before)
        assert await kept.read_entries(0, 1) == [b"keep me", b"keep me too"]
        with pytest.raises(NoSuchLedgerError):
            await bk.open_ledger(doomed.ledger_id)
        with pytest.raises(NoSuchLedgerError):
            await bk.delete_ledger(doomed.ledger_id)
    async with open_bookkeeper(tmp_path) as bk:
        reopened = await bk.open_ledger(kept.ledger_id)
        assert await reopened.read_entries(0, 1) == [b"keep me", b"keep me too"]


async def test_entries_of_ledgers_deleted_before_a_crash_are_dropped_at_start(tmp_path: Path) -> None:
    async with open_bookkeeper(tmp_path, journal_max_file_size=500) as bk:
        doomed = await bk.create_ledger()
        for i in range(30):
            await doomed.add_entry(b"%040d" % i)
        # the metadata goes first; pretend we died before the bookie dropped the entries
        await bk.store.delete(f"/ledgers/{doomed.ledger_id}")
    async with open_bookkeeper(tmp_path) as bk:
        assert bk.bookie.last_entry_id(doomed.ledger_id) == -1
        assert len(list_journal_files(tmp_path / "journal")) == 1  # only the new, live file
