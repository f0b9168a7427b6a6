"""A read-only view of a managed ledger that another broker writes (Pulsar's
ReadOnlyManagedLedgerImpl): how a broker reads a log it does not own, such as a namespace's
`__change_events` served elsewhere.

refresh() reads the ledger list from the metadata store and opens each ledger without recovery,
so the writer's open ledger is never fenced; its entries are readable up to the
last-add-confirmed its bookies report (the writer shows each new entry with an explicit LAC,
ManagedLedgerImpl.send_last_confirmed). Positions are the writer's own, so a reader that becomes
the writer (opening the managed ledger itself) goes on from the position it had reached.
"""

from __future__ import annotations

from bookkeeper.errors import BookKeeperError, NoSuchLedgerError
from bookkeeper.interfaces import LedgerClient, ReadHandle

from .entry_cache import EntryCache
from .entry_reader import EntryReader, read_across
from .errors import ManagedLedgerStorageError
from .interfaces import MetadataStore
from .ledger_list import LedgerInfo, LedgerList
from .metadata import ManagedLedgerMetadata, managed_ledger_path
from .position import Entry, Position


class ReadOnlyManagedLedger:
    def __init__(self, name: str, store: MetadataStore, bookkeeper: LedgerClient, cache: EntryCache) -> None:
        self.name = name
        self._path = managed_ledger_path(name)
        self._store = store
        self._bookkeeper = bookkeeper
        self._reads = EntryReader(bookkeeper, cache)
        self._handles: dict[int, ReadHandle] = {}
        self.ledger_list = LedgerList()

    async def refresh(self) -> bool:
        """Catch up with the writer: its ledgers now, and how far each is confirmed. False when
        the managed ledger does not exist (any more). ManagedLedgerStorageError when the
        metadata store or the bookies fail."""
        try:
            found = await self._store.get(self._path)
            if found is None:
                self._forget(set(self._handles))
                self.ledger_list = LedgerList()
                return False
            infos = []
            for stored in ManagedLedgerMetadata.decode(found[0]).ledgers:
                handle = await self._handle(stored.ledger_id)
                if handle is not None:
                    infos.append(LedgerInfo(stored.ledger_id, handle.last_add_confirmed + 1, handle.length,
                                            stored.closed_at_ms))
        except BookKeeperError as exc:   # the metadata store's errors included
            raise ManagedLedgerStorageError(f"reading managed ledger {self.name} failed: {exc}") from exc
        self._forget(set(self._handles) - {info.ledger_id for info in infos})
        self.ledger_list = LedgerList(infos)
        return True

    async def _handle(self, ledger_id: int) -> ReadHandle | None:
        """A sealed ledger's handle is kept; an open one is opened again for its LAC now. None
        for a ledger that is gone (an empty one its next writer dropped)."""
        handle = self._handles.get(ledger_id)
        if handle is None or not handle.is_closed:
            try:
                handle = await self._bookkeeper.open_ledger(ledger_id, recovery=False)
            except NoSuchLedgerError:
                return None
            self._handles[ledger_id] = handle
            self._reads.use(ledger_id, handle)
        return handle

    def _forget(self, ledger_ids: set[int]) -> None:
        for ledger_id in ledger_ids:
            del self._handles[ledger_id]
            self._reads.forget(ledger_id)

    @property
    def last_confirmed_entry(self) -> Position:
        """As of the last refresh(); (-1, -1) before any ledger."""
        return self.ledger_list.last_confirmed() if len(self.ledger_list) else Position(-1, -1)

    def first_position(self) -> Position:
        return self.ledger_list.first_position() if len(self.ledger_list) else Position(-1, 0)

    def next_position(self, position: Position) -> Position:
        if not len(self.ledger_list):
            return Position(position.ledger_id, position.entry_id + 1)
        return self.ledger_list.next_position(position)

    async def read_entries(self, start: Position, max_entries: int) -> list[Entry]:
        """Entries from start up to the last confirmed entry as of the last refresh()."""
        if not len(self.ledger_list):
            return []
        return await read_across(self.ledger_list, self.last_confirmed_entry, self._reads.read, start, max_entries)
