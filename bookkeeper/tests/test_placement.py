"""Placement: a failed bookie is kept out of new ensembles, until it registers anew."""

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


def test_a_restarted_bookie_is_picked_again_at_once_a_crashed_one_is_not():
    async def run() -> None:
        store = Registrations({"a:1": 10, "b:1": 11, "c:1": 12})
        placement = Placement(store, "/ledgers")
        placement.quarantine("c:1")
        with pytest.raises(NotEnoughBookiesError):   # still registered by the crashed process
            await placement.replacements(("a:1", "b:1"), {"b:1"})
        del store.owners["c:1"]                       # its session expired
        with pytest.raises(NotEnoughBookiesError):
            await placement.replacements(("a:1", "b:1"), {"b:1"})
        store.owners["c:1"] = 13                      # restarted: a new session registered it
        assert await placement.replacements(("a:1", "b:1"), {"b:1"}) == ("a:1", "c:1")
        assert not placement.is_quarantined("c:1")

    asyncio.run(run())
