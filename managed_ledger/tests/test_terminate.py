"""ManagedLedger.terminate: adds in flight finish, later adds fail, and the end survives a reopen."""

from __future__ import annotations

from pathlib import Path

import pytest

from managed_ledger.errors import ManagedLedgerTerminatedError
from managed_ledger.position import Position

from .conftest import TOPIC, open_storage


async def test_terminate_waits_for_adds_in_flight_and_refuses_later_ones(tmp_path: Path) -> None:
    async with open_storage(tmp_path) as factory:
        ledger = await factory.open_ledger(TOPIC)
        first = await ledger.add_entry(b"m0")
        in_flight = [ledger.append(b"m%d" % i) for i in range(1, 4)]
        end = await ledger.terminate()
        positions = [await add for add in in_flight]
        assert end == positions[-1] == Position(first.ledger_id, 3)
        assert ledger.terminated
        with pytest.raises(ManagedLedgerTerminatedError):
            await ledger.add_entry(b"late")
        assert await ledger.terminate() == end
        assert [e.data for e in await ledger.read_entries(first, 10)] == [b"m0", b"m1", b"m2", b"m3"]


async def test_termination_survives_reopen(tmp_path: Path) -> None:
    async with open_storage(tmp_path) as factory:
        ledger = await factory.open_ledger(TOPIC)
        await ledger.add_entry(b"m0")
        end = await ledger.terminate()
        await ledger.close()
    async with open_storage(tmp_path) as factory:
        ledger = await factory.open_ledger(TOPIC)
        assert ledger.terminated and await ledger.terminate() == end
        assert ledger.last_confirmed_entry == end
        with pytest.raises(ManagedLedgerTerminatedError):
            await ledger.add_entry(b"after restart")


async def test_terminate_an_empty_ledger(tmp_path: Path) -> None:
    async with open_storage(tmp_path) as factory:
        ledger = await factory.open_ledger(TOPIC)
        end = await ledger.terminate()
        assert end.entry_id == -1 and ledger.number_of_entries == 0
