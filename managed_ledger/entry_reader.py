"""Reads of one managed ledger's entries: from the shared entry cache while it has them, then
from the ledgers, through one open read handle per ledger (the writer's own for the current one,
so tailing reads see every durable entry). A read may stop short, before an entry no copy of
which can be read; a read that starts at one fails with NonRecoverableEntryError, and one of a
ledger whose metadata is gone with LedgerMissingError."""

from __future__ import annotations

from typing import Awaitable, Callable

from bookkeeper.errors import BookKeeperError, EntryUnreadableError, NoSuchLedgerError
from bookkeeper.interfaces import LedgerClient, ReadHandle

from .entry_cache import EntryCache
from .errors import LedgerMissingError, ManagedLedgerStorageError, NonRecoverableEntryError
from .ledger_list import LedgerList
from .position import Entry, Position

ReadRange = Callable[[int, int, int], Awaitable[list[Entry]]]


class EntryReader:
    """Most topics read one ledger, so the handle used last is kept apart from the others
    (a dict made on first use): a broker holds 100,000s of these."""

    __slots__ = ("_bookkeeper", "_cache", "_ledger_id", "_handle", "_others", "entries_read")

    def __init__(self, bookkeeper: LedgerClient, cache: EntryCache) -> None:
        self._bookkeeper = bookkeeper
        self._cache = cache
        self._ledger_id = -1
        self._handle: ReadHandle | None = None
        self._others: dict[int, ReadHandle] | None = None
        #: Entries read so far (cache or disk), for the storage read-rate metric.
        self.entries_read = 0

    def use(self, ledger_id: int, handle: ReadHandle) -> None:
        """Read ledger_id through handle (one already open: a recovered ledger, the writer)."""
        if self._handle is not None and self._ledger_id != ledger_id:
            if self._others is None:
                self._others = {}
            self._others[self._ledger_id] = self._handle
        elif self._others is not None:
            self._others.pop(ledger_id, None)
        self._ledger_id, self._handle = ledger_id, handle

    def forget(self, ledger_id: int) -> None:
        """The ledger is deleted: drop its handle and its cached entries."""
        if ledger_id == self._ledger_id:
            self._ledger_id, self._handle = -1, None
        elif self._others is not None:
            self._others.pop(ledger_id, None)
        self._cache.invalidate_ledger(ledger_id)

    async def read(self, ledger_id: int, first: int, last: int) -> list[Entry]:
        """Entries first..last of one ledger (or those before an unreadable one)."""
        entries: list[Entry] = []
        entry_id = first
        while entry_id <= last:
            position = Position(ledger_id, entry_id)
            data = self._cache.get(position)
            if data is None:
                break
            entries.append(Entry(position, data))
            entry_id += 1
        if entry_id <= last:
            try:
                handle = await self._handle_of(ledger_id)
                stored = await handle.read_entries(entry_id, last)
            except (EntryUnreadableError, NoSuchLedgerError) as exc:
                if entries:
                    return self._counted(entries)
                missing = isinstance(exc, NoSuchLedgerError)
                raise (LedgerMissingError if missing else NonRecoverableEntryError)(str(exc)) from exc
            except BookKeeperError as exc:
                raise ManagedLedgerStorageError(
                    f"reading {ledger_id}:{entry_id}..{last} failed: {exc}") from exc
            entries.extend(Entry(Position(ledger_id, number), data)
                           for number, data in enumerate(stored, start=entry_id))
        return self._counted(entries)

    def _counted(self, entries: list[Entry]) -> list[Entry]:
        self.entries_read += len(entries)
        return entries

    async def _handle_of(self, ledger_id: int) -> ReadHandle:
        if ledger_id == self._ledger_id and self._handle is not None:
            return self._handle
        handle = self._others.get(ledger_id) if self._others is not None else None
        if handle is None:
            handle = await self._bookkeeper.open_ledger(ledger_id, recovery=False)
            self.use(ledger_id, handle)
        return handle


async def last_index_holding(count: int, holds: Callable[[int], Awaitable[bool]]) -> int | None:
    """Binary search over indexes 0..count-1 for the last one where holds() is true, given that
    it is true for a prefix (publish times, for a seek or an expiry); None when it holds for none."""
    if count == 0 or not await holds(0):
        return None
    low, high = 0, count - 1
    while low < high:
        middle = (low + high + 1) // 2
        if await holds(middle):
            low = middle
        else:
            high = middle - 1
    return low


async def read_across(ledgers: LedgerList, last_confirmed: Position, read_range: ReadRange, start: Position,
                      max_entries: int) -> list[Entry]:
    """Up to max_entries entries from start (inclusive) to last_confirmed, crossing ledgers;
    read_range(ledger, first, last) reads one ledger's run (stopping before an unreadable
    entry, where this read stops too)."""
    position = ledgers.normalize(start)
    entries: list[Entry] = []
    while len(entries) < max_entries and position <= last_confirmed:
        info = ledgers.get(position.ledger_id)
        if info is None:
            break
        last = min(info.entries - 1, position.entry_id + max_entries - len(entries) - 1)
        run = await read_range(position.ledger_id, position.entry_id, last)
        entries.extend(run)
        if len(run) <= last - position.entry_id:
            break   # stopped before an unreadable entry
        position = ledgers.next_position(Position(position.ledger_id, last))
    return entries
