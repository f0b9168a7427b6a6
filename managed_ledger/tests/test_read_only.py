"""The read-only view of a managed ledger (read_only.py) over the embedded bookie: what the
writer confirmed, across rollovers and a reopen by the next writer, without disturbing it."""

from __future__ import annotations

from pathlib import Path

from managed_ledger.position import Position

from .conftest import TOPIC, open_storage

KEEP_ALL = {"retention_time_minutes": -1, "retention_size_mb": -1}


async def read_all_after(view, after: Position | None) -> list[bytes]:
    position = view.first_position() if after is None else view.next_position(after)
    return [bytes(e.data) for e in await view.read_entries(position, 1000)]


async def test_a_view_reads_what_the_writer_confirmed_and_catches_up_on_refresh(tmp_path: Path) -> None:
    async with open_storage(tmp_path, max_entries_per_ledger=4, **KEEP_ALL) as factory:
        assert await factory.open_read_only(TOPIC) is None   # no such managed ledger
        ledger = await factory.open_ledger(TOPIC)
        view = await factory.open_read_only(TOPIC)
        assert view is not None and await view.read_entries(view.first_position(), 10) == []
        positions = [await ledger.add_entry(b"m%d" % i) for i in range(6)]
        assert view.last_confirmed_entry < positions[0]   # as of its last refresh
        assert await view.refresh()
        assert view.last_confirmed_entry == positions[-1]
        assert await read_all_after(view, None) == [b"m%d" % i for i in range(6)]   # across a rollover
        assert await read_all_after(view, positions[3]) == [b"m4", b"m5"]
        await ledger.add_entry(b"m6")   # the writer goes on: the view fenced nothing
        assert await view.refresh() and await read_all_after(view, positions[-1]) == [b"m6"]


async def test_a_view_goes_on_from_its_position_after_the_next_writer_opens_the_log(tmp_path: Path) -> None:
    async with open_storage(tmp_path, **KEEP_ALL) as factory:
        ledger = await factory.open_ledger(TOPIC)
        view = await factory.open_read_only(TOPIC)
        last = [await ledger.add_entry(b"m%d" % i) for i in range(3)][-1]
        await view.refresh()
        assert await read_all_after(view, None) == [b"m0", b"m1", b"m2"]
        await ledger.close()
        ledger = await factory.open_ledger(TOPIC)   # the next writer: a new ledger
        await ledger.add_entry(b"m3")
        assert await view.refresh()
        assert await read_all_after(view, last) == [b"m3"]
        # positions are the writer's: it reads on from the view's position as well
        assert [bytes(e.data) for e in await ledger.read_entries(ledger.next_position(last), 10)] == [b"m3"]


async def test_refresh_tells_when_the_managed_ledger_is_deleted(tmp_path: Path) -> None:
    async with open_storage(tmp_path) as factory:
        ledger = await factory.open_ledger(TOPIC)
        await ledger.add_entry(b"m0")
        view = await factory.open_read_only(TOPIC)
        assert len(await view.read_entries(view.first_position(), 10)) == 1
        await factory.delete_ledger(TOPIC)
        assert not await view.refresh()
        assert await view.read_entries(view.first_position(), 10) == []
