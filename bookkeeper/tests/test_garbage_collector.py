"""Garbage collection: empty logs go at once, sparse logs are compacted, reads carry on."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bookkeeper.entry_log import list_entry_logs

from .conftest import open_bookkeeper

LOG_LIMIT = 4000


def data(ledger_id: int, entry_id: int) -> bytes:
    return b"%d/%d/" % (ledger_id, entry_id) + b"#" * 90


async def fill(bk, ledger_count: int, per_ledger: int) -> list:
    """Ledgers whose entries interleave in the logs (one checkpoint per round)."""
    ledgers = [await bk.create_ledger() for _ in range(ledger_count)]
    for start in range(0, per_ledger, 10):
        for ledger in ledgers:
            for entry_id in range(start, start + 10):
                await ledger.add_entry(data(ledger.ledger_id, entry_id))
        await bk.bookie.checkpointer.checkpoint()
    return ledgers


async def all_entries(handle, count: int) -> bool:
    return await handle.read_entries(0, count - 1) == [data(handle.ledger_id, e)
                                                        for e in range(count)]


def disk_usage(root: Path) -> int:
    return sum(list_entry_logs(root / "ledgers").values())


async def compacted_keeping_one(bk, ledger_count: int) -> list:
    """Fill ledgers, delete all but the first, run one garbage collection pass."""
    ledgers = await fill(bk, ledger_count, 60)
    for ledger in ledgers[1:]:
        await bk.delete_ledger(ledger.ledger_id)
    await bk.bookie.checkpointer.collect_garbage()
    return ledgers


async def test_logs_without_live_data_are_removed_when_their_ledger_goes(tmp_path: Path) -> None:
    async with open_bookkeeper(tmp_path, entry_log_size_limit=LOG_LIMIT) as bk:
        kept = await bk.create_ledger()
        await kept.add_entry(data(kept.ledger_id, 0))
        await bk.bookie.checkpointer.checkpoint()
        doomed = await bk.create_ledger()
        for entry_id in range(200):
            await doomed.add_entry(data(doomed.ledger_id, entry_id))
        await kept.add_entry(data(kept.ledger_id, 1))
        await bk.bookie.checkpointer.checkpoint()
        before = disk_usage(tmp_path)

        await bk.delete_ledger(doomed.ledger_id)

        assert disk_usage(tmp_path) < before / 4
        assert await all_entries(kept, 2)
        assert not (tmp_path / "ledgers" / "index" / f"{doomed.ledger_id}.idx").exists()


async def test_minor_compaction_copies_live_entries_and_frees_the_rest(tmp_path: Path) -> None:
    settings = dict(entry_log_size_limit=LOG_LIMIT, minor_compaction_interval_s=0,
                    minor_compaction_threshold=0.5, major_compaction_threshold=0)
    async with open_bookkeeper(tmp_path, **settings) as bk:
        ledgers = await compacted_keeping_one(bk, 6)

        assert bk.bookie.collector.compacted_logs > 0
        assert disk_usage(tmp_path) < 60 * 130 * 2
        assert await all_entries(ledgers[0], 60)
    async with open_bookkeeper(tmp_path) as bk:
        assert await all_entries(await bk.open_ledger(ledgers[0].ledger_id), 60)


async def test_logs_above_the_threshold_are_left_alone(tmp_path: Path) -> None:
    settings = dict(entry_log_size_limit=LOG_LIMIT, minor_compaction_interval_s=0,
                    minor_compaction_threshold=0.2, major_compaction_threshold=0)
    async with open_bookkeeper(tmp_path, **settings) as bk:
        ledgers = await fill(bk, 2, 60)
        await bk.delete_ledger(ledgers[1].ledger_id)  # about half of each log stays live
        before = list_entry_logs(tmp_path / "ledgers")

        await bk.bookie.checkpointer.collect_garbage()

        assert bk.bookie.collector.compacted_logs == 0
        assert list_entry_logs(tmp_path / "ledgers") == before


async def test_major_compaction_takes_the_higher_threshold(tmp_path: Path) -> None:
    settings = dict(entry_log_size_limit=LOG_LIMIT, major_compaction_interval_s=0,
                    major_compaction_threshold=0.6, minor_compaction_threshold=0.2)
    async with open_bookkeeper(tmp_path, **settings) as bk:
        ledgers = await compacted_keeping_one(bk, 2)

        assert bk.bookie.collector.compacted_logs > 0
        assert await all_entries(ledgers[0], 60)


async def test_reads_during_compaction_still_return_the_right_bytes(tmp_path: Path) -> None:
    settings = dict(entry_log_size_limit=LOG_LIMIT, minor_compaction_interval_s=0,
                    major_compaction_threshold=0, minor_compaction_threshold=0.9)
    async with open_bookkeeper(tmp_path, **settings) as bk:
        ledgers = await fill(bk, 4, 60)
        for ledger in ledgers[1:]:
            await bk.delete_ledger(ledger.ledger_id)

        async def reader() -> None:
            for _ in range(30):
                assert await all_entries(ledgers[0], 60)

        await asyncio.gather(reader(), bk.bookie.checkpointer.collect_garbage(), reader())
        assert bk.bookie.collector.compacted_logs > 0
