"""The entry cache: filled for active cursors only, emptied by age and by size."""

from __future__ import annotations

import asyncio
from pathlib import Path

from managed_ledger.entry_cache import EntryCache
from managed_ledger.position import InitialPosition, Position

from .conftest import TOPIC, open_storage


async def until_empty(cache: EntryCache) -> None:
    while cache.size:
        await asyncio.sleep(0.01)


async def test_adds_are_cached_only_while_a_cursor_with_consumers_keeps_up(tmp_path: Path) -> None:
    async with open_storage(tmp_path, cursor_backlogged_threshold=5) as factory:
        cache = factory.entry_cache
        ledger = await factory.open_ledger(TOPIC)
        await ledger.add_entry(b"nobody reads")
        cursor = await ledger.open_cursor("sub", InitialPosition.LATEST)
        await ledger.add_entry(b"no consumer")
        assert cache.size == 0 and not cursor.is_active
        cursor.set_active()
        await ledger.add_entry(b"read soon")
        assert cursor.is_active and cache.size == len(b"read soon")
        for i in range(5):
            await ledger.add_entry(b"%d" % i)
        await cursor.read_entries_or_wait(1)   # 5 entries behind after its read: backlogged
        assert not cursor.is_active
        await cursor.read_entries_or_wait(10)
        assert cursor.is_active
        cursor.set_inactive()
        assert not cursor.is_active


async def test_entries_leave_the_cache_once_older_than_the_threshold(tmp_path: Path) -> None:
    async with open_storage(tmp_path, cache_eviction_time_threshold_ms=20,
                            cache_eviction_interval_ms=5) as factory:
        ledger = await factory.open_ledger(TOPIC)
        cursor = await ledger.open_cursor("sub", InitialPosition.LATEST)
        cursor.set_active()
        position = await ledger.add_entry(b"tailing")
        assert factory.entry_cache.get(position) == b"tailing"
        await asyncio.wait_for(until_empty(factory.entry_cache), 10)
        assert (await ledger.read_entry(position)).data == b"tailing"   # from the bookie


async def test_past_its_budget_the_cache_drops_its_oldest_entries() -> None:
    cache = EntryCache(250, eviction_interval_ms=60_000)
    for entry_id in range(5):
        cache.add(Position(1, entry_id), bytes(100))
    cache.invalidate_ledger(2)
    assert cache.size == 200
    assert [cache.get(Position(1, i)) is not None for i in range(5)] == [False] * 3 + [True] * 2
    cache.invalidate_ledger(1)
    cache.add(Position(3, 0), bytes(200))
    assert cache.size == 200 and cache.get(Position(3, 0)) is not None
    cache.close()
