"""A topic's compacted view: the latest entry per key up to a horizon, in a ledger of its own.

As Pulsar's compacted ledger: each entry of the ledger is one kept entry of the topic,
prefixed with its original position ([i64 ledger][i64 entry][stored bytes]), so readers get
the original message ids. The ledger id and the horizon (the last topic position the
compaction covered) are kept in the managed ledger's metadata, which also keeps the ledger
from being collected as an orphan. Positions are loaded into memory on first use (16 bytes
per kept entry) so a reader can find where to start with a binary search.
"""

from __future__ import annotations

import struct
from bisect import bisect_left
from dataclasses import dataclass, field

from bookkeeper.errors import BookKeeperError
from bookkeeper.interfaces import LedgerClient, ReadHandle

from .errors import ManagedLedgerStorageError
from .position import Entry, Position

_POSITION = struct.Struct(">qq")
_LOAD_PAGE = 1000


@dataclass(slots=True)
class CompactedView:
    ledger_id: int
    horizon: Position
    positions: list[Position] = field(default_factory=list)
    _handle: ReadHandle | None = None

    @classmethod
    async def write(cls, bookkeeper: LedgerClient, entries: list[Entry], horizon: Position,
                    custom: dict[str, bytes]) -> CompactedView:
        """Store the kept entries (oldest first) in a new, sealed ledger (tagged custom)."""
        try:
            writer = await bookkeeper.create_ledger(custom)
            for entry in entries:
                position = entry.position
                await writer.add_entry(_POSITION.pack(position.ledger_id, position.entry_id) + bytes(entry.data))
            await writer.close()
        except BookKeeperError as exc:
            raise ManagedLedgerStorageError(f"writing the compacted ledger failed: {exc}") from exc
        return cls(writer.ledger_id, horizon, [entry.position for entry in entries], writer)

    @classmethod
    async def load(cls, bookkeeper: LedgerClient, ledger_id: int, horizon: Position) -> CompactedView:
        view = cls(ledger_id, horizon)
        try:
            view._handle = await bookkeeper.open_ledger(ledger_id, recovery=False)
            last = view._handle.last_add_confirmed
            for first in range(0, last + 1, _LOAD_PAGE):
                stored = await view._handle.read_entries(first, min(last, first + _LOAD_PAGE - 1))
                view.positions.extend(Position(*_POSITION.unpack_from(data)) for data in stored)
        except BookKeeperError as exc:
            raise ManagedLedgerStorageError(f"reading compacted ledger {ledger_id} failed: {exc}") from exc
        return view

    def covers(self, position: Position) -> bool:
        return position <= self.horizon

    async def read(self, start: Position, max_entries: int) -> list[Entry]:
        """Kept entries at or after start (up to the horizon), at most max_entries."""
        first = bisect_left(self.positions, start)
        last = min(len(self.positions), first + max_entries) - 1
        if last < first or self._handle is None:
            return []
        try:
            stored = await self._handle.read_entries(first, last)
        except BookKeeperError as exc:
            raise ManagedLedgerStorageError(f"reading compacted ledger {self.ledger_id} failed: {exc}") from exc
        return [Entry(Position(*_POSITION.unpack_from(data)), data[_POSITION.size:])
                for data in stored]

    async def read_all(self) -> list[Entry]:
        return await self.read(Position(-1, -1), len(self.positions))


class CompactedCursor:
    """A cursor that, while its read position is within the horizon, reads the compacted
    view instead of the log (Pulsar's read_compacted), then carries on with the log.

    It keeps its own logical read position over the log as it was, so a reader that starts
    at the beginning still gets the compacted entries of ledgers since trimmed. Everything
    but reading and moving the read position is the wrapped cursor's.
    """

    def __init__(self, cursor, ledger) -> None:
        self._cursor = cursor
        self._ledger = ledger
        at_start = cursor.read_position <= ledger.first_position()
        self._view_position = Position(-1, -1) if at_start else cursor.read_position

    def __getattr__(self, name: str):
        return getattr(self._cursor, name)

    async def read_entries_or_wait(self, max_entries: int) -> list[Entry]:
        return await self._read_view(max_entries) or await self._cursor.read_entries_or_wait(max_entries)

    async def read_entries_or_notify(self, max_entries: int, listener) -> list[Entry] | None:
        return await self._read_view(max_entries) or await self._cursor.read_entries_or_notify(max_entries, listener)

    async def _read_view(self, max_entries: int) -> list[Entry]:
        """The unacknowledged kept entries from the view position on; [] once past the view."""
        view = await self._ledger.compacted_view()
        if view is not None:
            while view.covers(self._view_position):
                entries = await view.read(self._view_position, max_entries)
                if not entries:
                    break
                last = entries[-1].position
                self._view_position = Position(last.ledger_id, last.entry_id + 1)
                unacked = [e for e in entries if not self._acknowledged(e.position)]
                if unacked:
                    return unacked
            self._leave_view(view.horizon)
        return []

    def _acknowledged(self, position: Position) -> bool:
        """Whether the subscription acknowledged a kept entry. Trimming moves every cursor's
        mark-delete past the trimmed ledgers, but only a durable cursor had acknowledged
        their entries (a trimmed ledger was behind every durable cursor); a reader that
        starts at the beginning has not."""
        if not self._cursor.durable and position < self._ledger.first_position():
            return False
        return self._cursor.is_deleted(position)

    def _leave_view(self, horizon: Position) -> None:
        """Past the horizon: the log takes over from the entry after it."""
        self._view_position = max(self._view_position, Position(horizon.ledger_id, horizon.entry_id + 1))
        if self._cursor.read_position <= horizon:
            self._cursor.seek(self._ledger.next_position(horizon))

    def seek(self, read_position: Position) -> None:
        self._cursor.seek(read_position)
        self._view_position = read_position

    def rewind(self) -> None:
        """Back to the first unacknowledged entry: for a reader whose mark-delete is at the
        start of the log, that is the view's first kept entry (see _acknowledged)."""
        self._cursor.rewind()
        mark_delete = self._cursor.mark_delete_position
        after = Position(mark_delete.ledger_id, mark_delete.entry_id + 1)
        from_start = not self._cursor.durable and after <= self._ledger.first_position()
        self._view_position = Position(-1, -1) if from_start else after

    async def reset(self, position: Position) -> None:
        await self._cursor.reset(position)
        self._view_position = position
