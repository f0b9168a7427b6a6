"""EntryReader keeps one read handle per ledger: those it was given, and those it opened."""

import asyncio

from managed_ledger.entry_cache import EntryCache
from managed_ledger.entry_reader import EntryReader


class Handle:
    def __init__(self, ledger_id: int) -> None:
        self.ledger_id = ledger_id

    async def read_entries(self, first: int, last: int) -> list[bytes]:
        return [f"{self.ledger_id}:{n}".encode() for n in range(first, last + 1)]


class Ledgers:
    """Opens a new handle each time, and counts the opens."""

    def __init__(self) -> None:
        self.opened: list[int] = []

    async def open_ledger(self, ledger_id: int, recovery: bool) -> Handle:
        self.opened.append(ledger_id)
        return Handle(ledger_id)


def test_each_ledger_is_read_through_one_handle_until_it_is_forgotten() -> None:
    async def scenario() -> None:
        ledgers = Ledgers()
        reader = EntryReader(ledgers, EntryCache(1 << 20))
        reader.use(1, Handle(1))
        reader.use(2, Handle(2))   # the writer moved on: ledger 1 stays readable through its handle
        assert [e.data for e in await reader.read(1, 0, 1)] == [b"1:0", b"1:1"]
        assert [e.data for e in await reader.read(2, 3, 3)] == [b"2:3"]
        assert [e.data for e in await reader.read(7, 0, 0)] == [b"7:0"]   # opened once, then kept
        await reader.read(7, 1, 1)
        await reader.read(1, 0, 0)
        assert ledgers.opened == [7]
        reader.forget(7)
        reader.forget(1)
        await reader.read(1, 0, 0)
        await reader.read(7, 0, 0)
        await reader.read(2, 0, 0)
        assert ledgers.opened == [7, 1, 7]
        assert reader.entries_read == 9

    asyncio.run(scenario())
