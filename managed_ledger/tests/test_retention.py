"""Retention (the -1 / 0 / >0 table) and time-based rollover of a managed ledger."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from managed_ledger.position import InitialPosition
from managed_ledger.retention import InvalidRetentionError, RetentionPolicy

from .conftest import TOPIC, open_storage

_MB = 1024 * 1024


def test_table_of_limits() -> None:
    now = 10 * 60_000
    assert RetentionPolicy(-1, -1).infinite
    assert not RetentionPolicy(-1, -1).may_delete(0, now, 10 * _MB, _MB)
    assert RetentionPolicy(0, 0).may_delete(now - 1, now, 0, 0)
    assert RetentionPolicy(-1, 2).may_delete(0, now, 4 * _MB, 2 * _MB)
    assert not RetentionPolicy(-1, 2).may_delete(0, now, 3 * _MB, 2 * _MB)
    assert RetentionPolicy(5, -1).may_delete(now - 5 * 60_000 - 1, now, 0, 0)
    assert not RetentionPolicy(5, -1).may_delete(now - 5 * 60_000, now, 100 * _MB, _MB)
    # both limits: either one passed is enough
    assert RetentionPolicy(5, 1).may_delete(now, now, 3 * _MB, _MB)
    assert RetentionPolicy(5, 1).may_delete(0, now, 0, 0)
    for time, size in ((0, 5), (5, 0), (-2, -1), (-1, -3)):
        with pytest.raises(InvalidRetentionError):
            RetentionPolicy(time, size)


async def _filled(factory, ledgers: int, per_ledger: int = 4):
    ledger = await factory.open_ledger(TOPIC)
    cursor = await ledger.open_cursor("sub", InitialPosition.EARLIEST)
    for i in range(ledgers * per_ledger):
        await ledger.add_entry(b"x" * 1000)
    await asyncio.sleep(0.1)                            # the last rollover completes
    return ledger, cursor


async def test_consumed_ledgers_stay_within_time_retention(tmp_path: Path) -> None:
    async with open_storage(tmp_path, max_entries_per_ledger=4, retention_time_minutes=10,
                            retention_size_mb=-1) as factory:
        ledger, cursor = await _filled(factory, 3)
        cursor.mark_delete(ledger.last_confirmed_entry)
        await cursor.flush()
        await ledger.trim()
        assert len(ledger.ledgers_info()) == 4          # consumed, but younger than 10 minutes
        oldest = next(iter(ledger.ledger_list))
        oldest.closed_at_ms -= 11 * 60_000              # as if closed 11 minutes ago
        await ledger.trim()
        assert [entries for _, entries, _ in ledger.ledgers_info()] == [4, 4, 0]


async def test_size_retention_keeps_the_newest_consumed_data(tmp_path: Path) -> None:
    async with open_storage(tmp_path, max_entries_per_ledger=400, retention_time_minutes=-1,
                            retention_size_mb=1) as factory:
        ledger, cursor = await _filled(factory, 4, per_ledger=400)   # 4 x ~400 kB + 1 empty
        cursor.mark_delete(ledger.last_confirmed_entry)
        await cursor.flush()
        await ledger.trim()
        kept = ledger.total_size
        assert _MB <= kept < _MB + 500_000
        assert [entries for _, entries, _ in ledger.ledgers_info()] == [400, 400, 400, 0]


async def test_unconsumed_ledgers_are_never_deleted(tmp_path: Path) -> None:
    async with open_storage(tmp_path, max_entries_per_ledger=4) as factory:
        ledger, cursor = await _filled(factory, 3)
        cursor.mark_delete(ledger.ledger_list.position_at(5))   # inside the second ledger
        await cursor.flush()
        await ledger.trim()
        assert [entries for _, entries, _ in ledger.ledgers_info()] == [4, 4, 0]


async def test_idle_ledger_rolls_over_after_the_maximum_time(tmp_path: Path) -> None:
    async with open_storage(tmp_path, max_ledger_rollover_minutes=0.01) as factory:
        ledger = await factory.open_ledger(TOPIC)
        first = await ledger.add_entry(b"only")
        await asyncio.sleep(1.5)
        infos = ledger.ledgers_info()
        assert infos[-1][0] != first.ledger_id          # sealed, and (no cursor, 0/0) deleted
        assert ledger.number_of_entries == 0


async def test_minimum_rollover_time_holds_a_full_ledger(tmp_path: Path) -> None:
    async with open_storage(tmp_path, max_entries_per_ledger=2, min_ledger_rollover_minutes=10,
                            retention_time_minutes=-1, retention_size_mb=-1) as factory:
        ledger = await factory.open_ledger(TOPIC)
        for i in range(6):
            await ledger.add_entry(b"%d" % i)
        assert [entries for _, entries, _ in ledger.ledgers_info()] == [6]
