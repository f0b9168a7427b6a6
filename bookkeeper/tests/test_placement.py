"""Placement: a failed bookie is picked last for a while, until it registers anew."""

from __future__ import annotations

import asyncio

import pytest

from bookkeeper.bk.placement import Placement
from bookkeeper.errors import NotEnoughBookiesError


class Registrations:
    """/ledgers/available: bookie -> the session owning its node."""

    def __init__(self, owners: dict[str, int]) -> None:
        self.owners = owners

    async def children(self, path: str) -> list[str]:
        return sorted(self.owners)

    async def ephemeral_owner(self, path: str) -> int | None:
        return self.owners.get(path.rsplit("/", 1)[1])


def test_a_failed_bookie_is_picked_last_until_it_registers_anew():
    async def run() -> None:
        store = Registrations({"a:1": 10, "b:1": 11, "c:1": 12, "d:1": 13})
        placement = Placement(store, "/ledgers")
        placement.quarantine("c:1")
        for _ in range(10):   # still registered by the process that failed: the healthy d first
            assert await placement.replacements(("a:1", "b:1"), {"b:1"}) == ("a:1", "d:1")
        assert await placement.replacements(("a:1", "d:1"), {"d:1", "b:1"}) == ("a:1", "c:1")   # else c
        store.owners["c:1"] = 14                      # restarted: a new session registered it
        assert not await placement._excluded("c:1")
        assert not placement.is_quarantined("c:1")
        del store.owners["d:1"]
        with pytest.raises(NotEnoughBookiesError):
            await placement.replacements(("a:1", "b:1"), {"b:1", "c:1"})

    asyncio.run(run())
