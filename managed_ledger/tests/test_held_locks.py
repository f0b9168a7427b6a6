"""LockTable: one holder's sections run one at a time, different holders' at once, and a
holder keeps no lock while nobody holds or awaits it (not even after a cancelled wait)."""

from __future__ import annotations

import asyncio

import pytest

from managed_ledger.held_locks import LockTable


async def test_sections_of_one_holder_run_one_at_a_time_and_leave_nothing_behind() -> None:
    table, inside, most = LockTable(), {"a": 0, "b": 0}, {"a": 0, "b": 0}

    async def section(holder: str) -> None:
        async with table.held(holder):
            inside[holder] += 1
            most[holder] = max(most[holder], inside[holder])
            await asyncio.sleep(0.01)
            inside[holder] -= 1

    await asyncio.gather(*(section(holder) for holder in "abababab"))
    assert most == {"a": 1, "b": 1} and len(table) == 0


async def test_a_cancelled_waiter_and_a_failing_section_leave_nothing_behind() -> None:
    table = LockTable()
    release = asyncio.Event()

    async def hold() -> None:
        async with table.held("a"):
            await release.wait()

    holding = asyncio.ensure_future(hold())
    await asyncio.sleep(0)
    waiting = asyncio.ensure_future(hold())
    await asyncio.sleep(0)
    waiting.cancel()
    release.set()
    await holding
    with pytest.raises(asyncio.CancelledError):
        await waiting
    with pytest.raises(ValueError):
        async with table.held("a"):
            raise ValueError("fails inside")
    assert len(table) == 0
