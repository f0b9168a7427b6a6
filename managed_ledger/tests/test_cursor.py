"""ManagedCursor: acks, mark-delete movement, batch acks, persistence, reset, waiting reads."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bookkeeper.errors import EntryUnreadableError
from managed_ledger.config import PersistencePolicy
from managed_ledger.errors import ConcurrentReadError, LedgerMissingError, NonRecoverableEntryError
from managed_ledger.lost_entries import LostEntryCounts
from managed_ledger.managed_ledger import ManagedLedgerImpl
from managed_ledger.position import EARLIEST, LATEST, InitialPosition, Position

from .conftest import TOPIC, open_storage


async def test_initial_positions(tmp_path: Path) -> None:
    async with open_storage(tmp_path) as factory:
        ledger = await factory.open_ledger(TOPIC)
        written = [await ledger.add_entry(b"%d" % i) for i in range(3)]
        earliest = await ledger.open_cursor("earliest", InitialPosition.EARLIEST)
        latest = await ledger.open_cursor("latest", InitialPosition.LATEST)
        assert await ledger.open_cursor("latest", InitialPosition.EARLIEST) is latest
        assert earliest.mark_delete_position == Position(written[0].ledger_id, -1)
        assert earliest.read_position == written[0] and earliest.backlog() == 3
        assert latest.mark_delete_position == written[-1] and latest.backlog() == 0
        assert not latest.has_more_entries()
        assert set(ledger.cursors) == {"earliest", "latest"}


async def test_individual_acks_move_mark_delete_over_contiguous_prefix(tmp_path: Path) -> None:
    async with open_storage(tmp_path) as factory:
        ledger = await factory.open_ledger(TOPIC)
        cursor = await ledger.open_cursor("sub", InitialPosition.EARLIEST)
        p = [await ledger.add_entry(b"%d" % i) for i in range(10)]
        start = cursor.mark_delete_position
        cursor.delete([p[1], p[2], p[5]])
        assert cursor.mark_delete_position == start
        assert cursor.is_deleted(p[5]) and not cursor.is_deleted(p[3])
        assert cursor.backlog() == 7
        cursor.delete([p[0]])
        assert cursor.mark_delete_position == p[2]
        cursor.delete([p[4], p[3]])
        assert cursor.mark_delete_position == p[5]
        assert cursor.backlog() == 4
        entries = await cursor.read_entries_or_wait(10)
        assert [e.position for e in entries] == p[6:]


async def test_reads_skip_deleted_entries(tmp_path: Path) -> None:
    async with open_storage(tmp_path) as factory:
        ledger = await factory.open_ledger(TOPIC)
        cursor = await ledger.open_cursor("sub", InitialPosition.EARLIEST)
        p = [await ledger.add_entry(b"%d" % i) for i in range(10)]
        cursor.delete([p[2], p[3], p[7]])
        first = await cursor.read_entries_or_wait(4)
        assert [e.position for e in first] == [p[0], p[1], p[4], p[5]]
        assert cursor.read_position == p[6]
        rest = await cursor.read_entries_or_wait(10)
        assert [e.position for e in rest] == [p[6], p[8], p[9]]
        cursor.rewind()
        assert cursor.read_position == p[0]
        cursor.seek(p[8])
        assert [e.position for e in await cursor.read_entries_or_wait(10)] == [p[8], p[9]]


async def test_mark_delete_crosses_ledger_boundaries(tmp_path: Path) -> None:
    async with open_storage(tmp_path, max_entries_per_ledger=3) as factory:
        ledger = await factory.open_ledger(TOPIC)
        cursor = await ledger.open_cursor("sub", InitialPosition.EARLIEST)
        p = [await ledger.add_entry(b"%d" % i) for i in range(8)]
        assert p[3].ledger_id != p[2].ledger_id
        cursor.delete([p[3], p[4], p[5], p[6]])
        cursor.delete([p[1], p[2]])
        cursor.delete([p[0]])
        assert cursor.mark_delete_position == p[6]
        assert cursor.backlog() == 1
        cursor.mark_delete(p[7])
        assert cursor.backlog() == 0 and not cursor.has_more_entries()


async def test_batch_ack_sets(tmp_path: Path) -> None:
    async with open_storage(tmp_path) as factory:
        ledger = await factory.open_ledger(TOPIC)
        cursor = await ledger.open_cursor("sub", InitialPosition.EARLIEST)
        p = [await ledger.add_entry(b"batch-%d" % i) for i in range(3)]
        cursor.ack_batch_indexes(p[1], [0b1010])
        assert cursor.batch_ack_set(p[1]) == [0b1010]
        assert not cursor.is_deleted(p[1])
        cursor.ack_batch_indexes(p[1], [0])  # every message acked: the entry is deleted
        assert cursor.is_deleted(p[1]) and cursor.batch_ack_set(p[1]) is None
        cursor.ack_batch_indexes(p[2], [0b1])
        cursor.mark_delete(p[2])
        assert cursor.batch_ack_set(p[2]) is None


async def test_partial_batch_acks_merge(tmp_path: Path) -> None:
    async with open_storage(tmp_path) as factory:
        ledger = await factory.open_ledger(TOPIC)
        cursor = await ledger.open_cursor("sub", InitialPosition.EARLIEST)
        p = await ledger.add_entry(b"batch of four")
        assert cursor.ack_batch_indexes(p, [0b1110]) == [0b1110]  # index 0 acked
        # a redelivered batch's ack reports index 0 unacked again: acked stays acked
        assert cursor.ack_batch_indexes(p, [0b1011]) == [0b1010]
        assert cursor.ack_batch_indexes(p, [0b0101]) is None  # the rest: the entry goes
        assert cursor.is_deleted(p) and cursor.batch_ack_set(p) is None


async def test_state_persists_across_reopen(tmp_path: Path) -> None:
    async with open_storage(tmp_path, cursor_flush_interval_ms=10_000) as factory:
        ledger = await factory.open_ledger(TOPIC)
        cursor = await ledger.open_cursor("sub/with:odd//name", InitialPosition.EARLIEST)
        p = [await ledger.add_entry(b"%d" % i) for i in range(10)]
        cursor.delete([p[0], p[1], p[4], p[6], p[7]])
        cursor.ack_batch_indexes(p[8], [0b110, 0b1])
    # the factory's close flushed the cursor although the interval never elapsed
    async with open_storage(tmp_path) as factory:
        ledger = await factory.open_ledger(TOPIC)
        cursor = ledger.cursors["sub/with:odd//name"]
        assert cursor.mark_delete_position == p[1]
        assert [cursor.is_deleted(x) for x in p] == \
            [True, True, False, False, True, False, True, True, False, False]
        assert cursor.batch_ack_set(p[8]) == [0b110, 0b1]
        assert cursor.backlog() == 5
        assert [e.position for e in await cursor.read_entries_or_wait(10)] == \
            [p[2], p[3], p[5], p[8], p[9]]


async def test_dirty_state_is_flushed_in_the_background(tmp_path: Path) -> None:
    async with open_storage(tmp_path, cursor_flush_interval_ms=20) as factory:
        ledger = await factory.open_ledger(TOPIC)
        cursor = await ledger.open_cursor("sub", InitialPosition.EARLIEST)
        p = [await ledger.add_entry(b"%d" % i) for i in range(3)]
        cursor.mark_delete(p[1])
        for _ in range(100):
            if cursor.persisted_mark_delete == p[1]:
                break
            await asyncio.sleep(0.01)
        assert cursor.persisted_mark_delete == p[1]
        found = await factory.metadata_store.get("/managed-ledgers/persistent%3A%2F%2Fpublic"
                                                 "%2Fdefault%2Ftopic-1/sub")
        assert found is not None and b"[%d,1]" % p[1].ledger_id in found[0]


async def test_the_mark_delete_rate_spaces_background_stores(tmp_path: Path) -> None:
    """At 1 per second, an ack right after a store waits for the next second; one after a
    pause is stored after the flush interval; the rate of a new policy applies at once."""
    async with open_storage(tmp_path, cursor_flush_interval_ms=20) as factory:
        ledger = await factory.open_ledger(TOPIC, PersistencePolicy(1, 1, 1, 1.0))
        cursor = await ledger.open_cursor("sub", InitialPosition.EARLIEST)
        p = [await ledger.add_entry(b"%d" % i) for i in range(4)]
        cursor.mark_delete(p[0])
        await until(lambda: cursor.persisted_mark_delete == p[0])
        cursor.mark_delete(p[1])
        await asyncio.sleep(0.3)
        assert cursor.persisted_mark_delete == p[0]       # held back by the rate
        await until(lambda: cursor.persisted_mark_delete == p[1])
        await asyncio.sleep(1.2)
        cursor.mark_delete(p[2])
        await until(lambda: cursor.persisted_mark_delete == p[2], timeout_s=0.8)   # the rate allows it
        ledger.set_persistence(PersistencePolicy(1, 1, 1, 0.0))
        cursor.mark_delete(p[3])
        await until(lambda: cursor.persisted_mark_delete == p[3], timeout_s=0.8)   # no limit now


async def test_a_held_back_store_waits_no_longer_than_the_position_flush(tmp_path: Path) -> None:
    async with open_storage(tmp_path, cursor_flush_interval_ms=20, cursor_position_flush_seconds=1) as factory:
        ledger = await factory.open_ledger(TOPIC, PersistencePolicy(1, 1, 1, 0.01))
        cursor = await ledger.open_cursor("sub", InitialPosition.EARLIEST)
        p = [await ledger.add_entry(b"%d" % i) for i in range(2)]
        cursor.mark_delete(p[0])
        await until(lambda: cursor.persisted_mark_delete == p[0])
        cursor.mark_delete(p[1])   # the rate alone would hold it for 100 s
        await until(lambda: cursor.persisted_mark_delete == p[1], timeout_s=3)


async def until(condition, timeout_s: float = 2.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


async def test_reset_persists_and_forgets_later_acks(tmp_path: Path) -> None:
    async with open_storage(tmp_path, cursor_flush_interval_ms=10_000) as factory:
        ledger = await factory.open_ledger(TOPIC)
        cursor = await ledger.open_cursor("sub", InitialPosition.EARLIEST)
        p = [await ledger.add_entry(b"%d" % i) for i in range(6)]
        cursor.mark_delete(p[4])
        await cursor.reset(p[2])
        assert cursor.mark_delete_position == p[1]
        assert cursor.read_position == p[2]
        assert cursor.persisted_mark_delete == p[1]
        assert cursor.backlog() == 4
        await cursor.reset(EARLIEST)
        assert cursor.backlog() == 6
        await cursor.reset(LATEST)
        assert cursor.backlog() == 0 and cursor.mark_delete_position == p[5]


async def test_non_durable_cursor_lives_in_memory_only(tmp_path: Path) -> None:
    async with open_storage(tmp_path) as factory:
        ledger = await factory.open_ledger(TOPIC)
        p = [await ledger.add_entry(b"%d" % i) for i in range(5)]
        reader = ledger.new_non_durable_cursor("reader", p[2])
        assert not reader.durable and "reader" not in ledger.cursors
        assert [e.position for e in await reader.read_entries_or_wait(10)] == p[2:]
        from_start = ledger.new_non_durable_cursor("r2", EARLIEST)
        assert from_start.read_position == p[0] and from_start.backlog() == 5
        tail = ledger.new_non_durable_cursor("r3", LATEST)
        assert not tail.has_more_entries()
        new = await ledger.add_entry(b"new")
        assert [e.position for e in await tail.read_entries_or_wait(10)] == [new]
        reader.delete([p[0]])
        await reader.flush()
        assert await factory.metadata_store.children(
            "/managed-ledgers/persistent%3A%2F%2Fpublic%2Fdefault%2Ftopic-1") == []


async def test_waiting_read_is_woken_by_an_add(tmp_path: Path) -> None:
    async with open_storage(tmp_path) as factory:
        ledger = await factory.open_ledger(TOPIC)
        cursor = await ledger.open_cursor("sub", InitialPosition.LATEST)
        read = asyncio.ensure_future(cursor.read_entries_or_wait(10))
        await asyncio.sleep(0.01)
        assert not read.done()
        with pytest.raises(ConcurrentReadError):
            await cursor.read_entries_or_wait(1)
        position = await ledger.add_entry(b"wake up")
        entries = await asyncio.wait_for(read, timeout=5)
        assert [(e.position, e.data) for e in entries] == [(position, b"wake up")]


async def test_cancel_pending_read_returns_empty(tmp_path: Path) -> None:
    async with open_storage(tmp_path) as factory:
        ledger = await factory.open_ledger(TOPIC)
        cursor = await ledger.open_cursor("sub", InitialPosition.LATEST)
        read = asyncio.ensure_future(cursor.read_entries_or_wait(10))
        await asyncio.sleep(0.01)
        cursor.cancel_pending_read()
        assert await asyncio.wait_for(read, timeout=5) == []
        later = asyncio.ensure_future(cursor.read_entries_or_wait(10))
        await asyncio.sleep(0.01)
        await ledger.close()
        assert await asyncio.wait_for(later, timeout=5) == []


class Listener:
    def __init__(self) -> None:
        self.calls: list[bool] = []

    def entries_available(self, more: bool) -> None:
        self.calls.append(more)


async def test_a_read_to_the_end_tells_its_listener_once_when_to_read_again(tmp_path: Path) -> None:
    """read_entries_or_notify parks no task: None at the end of the log, then one call: True
    for an add or a rewind, False for a cancel or the close."""
    async with open_storage(tmp_path) as factory:
        ledger = await factory.open_ledger(TOPIC)
        cursor = await ledger.open_cursor("sub", InitialPosition.LATEST)
        listener = Listener()
        assert await cursor.read_entries_or_notify(10, listener) is None
        position = await ledger.add_entry(b"a")
        await ledger.add_entry(b"b")
        assert listener.calls == [True]
        entries = await cursor.read_entries_or_notify(1, listener)
        assert [e.position for e in entries] == [position]
        assert len(await cursor.read_entries_or_notify(10, listener)) == 1
        assert await cursor.read_entries_or_notify(10, listener) is None
        cursor.rewind()
        assert listener.calls == [True, True]
        assert len(await cursor.read_entries_or_notify(10, listener)) == 2
        assert await cursor.read_entries_or_notify(10, listener) is None
        cursor.cancel_pending_read()
        await ledger.add_entry(b"c")   # no longer listening
        assert listener.calls == [True, True, False]
        assert len(await cursor.read_entries_or_notify(10, listener)) == 1
        assert await cursor.read_entries_or_notify(10, listener) is None
        await ledger.close()
        assert listener.calls == [True, True, False, False]


async def test_waiting_read_follows_a_rollover(tmp_path: Path) -> None:
    async with open_storage(tmp_path, max_entries_per_ledger=2) as factory:
        ledger = await factory.open_ledger(TOPIC)
        cursor = await ledger.open_cursor("sub", InitialPosition.EARLIEST)
        first = [await ledger.add_entry(b"a"), await ledger.add_entry(b"b")]
        assert len(await cursor.read_entries_or_wait(10)) == 2
        read = asyncio.ensure_future(cursor.read_entries_or_wait(10))
        await asyncio.sleep(0.01)
        third = await ledger.add_entry(b"c")
        assert third.ledger_id != first[0].ledger_id
        assert [e.position for e in await asyncio.wait_for(read, timeout=5)] == [third]


async def test_delete_cursor(tmp_path: Path) -> None:
    async with open_storage(tmp_path) as factory:
        ledger = await factory.open_ledger(TOPIC)
        await ledger.open_cursor("sub", InitialPosition.EARLIEST)
        await ledger.delete_cursor("sub")
        assert not ledger.cursors
    async with open_storage(tmp_path) as factory:
        ledger = await factory.open_ledger(TOPIC)
        assert not ledger.cursors


async def test_acks_for_positions_the_log_does_not_hold_are_ignored(tmp_path: Path) -> None:
    async with open_storage(tmp_path) as factory:
        ledger = await factory.open_ledger(TOPIC)
        cursor = await ledger.open_cursor("sub", InitialPosition.EARLIEST)
        p = [await ledger.add_entry(b"%d" % i) for i in range(3)]
        cursor.delete([Position(p[0].ledger_id, 1000), Position(p[0].ledger_id - 1, 0),
                       Position(12345, 0)])
        cursor.ack_batch_indexes(Position(999, 1), [1])
        assert cursor.backlog() == 3
        await cursor.reset(Position(p[0].ledger_id, 1000))  # past the end: the next entry
        assert cursor.backlog() == 0
        later = await ledger.add_entry(b"later")
        assert cursor.backlog() == 1
        assert [e.position for e in await cursor.read_entries_or_wait(10)] == [later]


async def test_reader_behind_a_trim_skips_to_what_is_left(tmp_path: Path, monkeypatch) -> None:
    async with open_storage(tmp_path, max_entries_per_ledger=5) as factory:
        ledger = await factory.open_ledger(TOPIC)
        durable = await ledger.open_cursor("sub", InitialPosition.EARLIEST)
        reader = ledger.new_non_durable_cursor("reader", EARLIEST)
        p = [await ledger.add_entry(b"%d" % i) for i in range(12)]
        trimmed = asyncio.Event()
        read_range = ledger.read_ledger_range

        async def read_after_the_trim(ledger_id: int, first: int, last: int):
            await trimmed.wait()
            return await read_range(ledger_id, first, last)

        monkeypatch.setattr(ManagedLedgerImpl, "read_ledger_range",
                            lambda self, *args: read_after_the_trim(*args))
        reading = asyncio.ensure_future(reader.read_entries_or_wait(3))
        await asyncio.sleep(0)
        durable.mark_delete(p[9])
        await durable.flush()
        await ledger._trimming.wait()
        trimmed.set()
        assert ledger.first_position() == p[10]
        assert [e.position for e in await reading] == [p[10], p[11]]



class LosingHandle:
    """A ledger's read handle with some entries lost: a range stops before the first of them."""

    def __init__(self, handle, lost: set[int]) -> None:
        self._handle = handle
        self._lost = lost

    def __getattr__(self, name: str):
        return getattr(self._handle, name)

    async def read_entries(self, first: int, last: int) -> list[bytes]:
        stop = min((e for e in self._lost if first <= e <= last), default=last + 1)
        if stop == first:
            raise EntryUnreadableError(f"entry {first}: every replica failed")
        return await self._handle.read_entries(first, stop - 1)


async def lose(ledger, entries: set[int]) -> None:
    reads = ledger._reads   # the one seam between a managed ledger and its ledgers' handles
    ledger_id = ledger.ledger_list.current.ledger_id
    reads.use(ledger_id, LosingHandle(await reads._handle_of(ledger_id), entries))


async def test_a_lost_entry_holds_reads_after_delivering_those_before(tmp_path: Path) -> None:
    async with open_storage(tmp_path) as factory:
        ledger = await factory.open_ledger(TOPIC)
        cursor = await ledger.open_cursor("sub", InitialPosition.EARLIEST)
        p = [await ledger.add_entry(b"%d" % i) for i in range(6)]
        await lose(ledger, {2, 4})
        assert [e.position for e in await cursor.read_entries_or_wait(10)] == p[:2]
        for _ in range(2):   # retried: fails there each time, nothing skipped
            with pytest.raises(NonRecoverableEntryError):
                await cursor.read_entries_or_wait(10)
        assert cursor.read_position == p[2] and not cursor.is_deleted(p[2])


async def test_auto_skip_acknowledges_lost_entries_and_reads_on(tmp_path: Path) -> None:
    async with open_storage(tmp_path, auto_skip_non_recoverable_data=True) as factory:
        ledger = await factory.open_ledger(TOPIC)
        cursor = await ledger.open_cursor("sub", InitialPosition.EARLIEST)
        p = [await ledger.add_entry(b"%d" % i) for i in range(6)]
        await lose(ledger, {2, 4})
        read = []
        while len(read) < 4:
            read += [e.position for e in await cursor.read_entries_or_wait(10)]
        assert read == [p[0], p[1], p[3], p[5]]
        assert cursor.skipped_lost_entries == 2 and cursor.is_deleted(p[2]) and cursor.is_deleted(p[4])
        assert ledger.lost_entries == LostEntryCounts(found=2, skipped=2)


async def remove_first_ledger(factory, ledger) -> list[Position]:
    """Six entries in ledgers of three, then the first ledger's metadata deleted behind the
    managed ledger's back (an operator, a lost ZooKeeper node): it still lists that ledger."""
    p = [await ledger.add_entry(b"%d" % i) for i in range(6)]
    await factory.bookkeeper.delete_ledger(p[0].ledger_id)
    ledger._reads.forget(p[0].ledger_id)   # its handle is opened again (a BookKeeper client re-reads metadata)
    return p


async def test_a_missing_ledger_holds_reads_there(tmp_path: Path) -> None:
    async with open_storage(tmp_path, max_entries_per_ledger=3, cache_size_mb=0) as factory:
        ledger = await factory.open_ledger(TOPIC)
        cursor = await ledger.open_cursor("sub", InitialPosition.EARLIEST)
        p = await remove_first_ledger(factory, ledger)
        for _ in range(2):   # retried: fails there each time, found once
            with pytest.raises(LedgerMissingError):
                await cursor.read_entries_or_wait(10)
        assert cursor.read_position == cursor.held_at_lost == p[0] and cursor.backlog() == 6
        assert ledger.lost_entries == LostEntryCounts(found=3, skipped=0)


async def test_auto_skip_skips_a_missing_ledger_whole(tmp_path: Path) -> None:
    async with open_storage(tmp_path, max_entries_per_ledger=3, cache_size_mb=0,
                            auto_skip_non_recoverable_data=True) as factory:
        ledger = await factory.open_ledger(TOPIC)
        cursor = await ledger.open_cursor("sub", InitialPosition.EARLIEST)
        p = await remove_first_ledger(factory, ledger)
        cursor.delete([p[1]])   # acknowledged before: not lost again
        assert [e.position for e in await cursor.read_entries_or_wait(10)] == p[3:]
        assert cursor.mark_delete_position == p[2] and cursor.held_at_lost is None
        assert cursor.skipped_lost_entries == 2
        assert ledger.lost_entries == LostEntryCounts(found=2, skipped=2)


async def test_lost_entries_are_counted_once_per_hold(tmp_path: Path) -> None:
    async with open_storage(tmp_path) as factory:
        ledger = await factory.open_ledger(TOPIC)
        cursor = await ledger.open_cursor("sub", InitialPosition.EARLIEST)
        p = [await ledger.add_entry(b"%d" % i) for i in range(3)]
        await lose(ledger, {1})
        await cursor.read_entries_or_wait(10)
        for _ in range(3):
            with pytest.raises(NonRecoverableEntryError):
                await cursor.read_entries_or_wait(10)
        assert cursor.held_at_lost == p[1] and ledger.lost_entries == LostEntryCounts(found=1, skipped=0)


async def test_reads_stop_at_the_read_limit(tmp_path: Path) -> None:
    """A topic's max-read position: reads stop there even inside a ledger, and a waiting read
    wakes when it moves; the backlog counts to the last entry, as Pulsar's."""
    async with open_storage(tmp_path) as factory:
        ledger = await factory.open_ledger(TOPIC)
        positions = [await ledger.add_entry(b"m%d" % i) for i in range(6)]
        cursor = await ledger.open_cursor("sub", InitialPosition.EARLIEST)
        ledger.set_read_limit(positions[2])
        assert ledger.readable_end == positions[2] and cursor.backlog() == 6
        assert [e.data for e in await cursor.read_entries_or_wait(10)] == [b"m0", b"m1", b"m2"]
        waiting = asyncio.ensure_future(cursor.read_entries_or_wait(10))
        await asyncio.sleep(0.01)
        assert not waiting.done()
        ledger.set_read_limit(None)
        assert [e.data for e in await asyncio.wait_for(waiting, 5)] == [b"m3", b"m4", b"m5"]
        assert ledger.readable_end == positions[-1]
