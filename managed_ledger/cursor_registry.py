"""A managed ledger's cursors: the durable ones by name (each stored under the managed ledger's
node), and the non-durable ones (readers), which live while someone holds them; which of them
are active (see cursor.py), and which have read to the end and wait for an add."""

from __future__ import annotations

import asyncio
import logging
import weakref
from typing import TYPE_CHECKING, Callable

from bookkeeper.errors import BookKeeperError
from bookkeeper.interfaces import LedgerClient

from .cursor import ManagedCursorImpl, discard
from .cursor_store import CursorStore
from .errors import ManagedLedgerStorageError
from .held_locks import LockTable
from .interfaces import MetadataStore
from .metadata import CursorState, decode_name
from .position import Position
from .uncancellable import run_to_end

if TYPE_CHECKING:
    from .managed_ledger import ManagedLedgerImpl

logger = logging.getLogger(__name__)
_CREATIONS = LockTable()   # one cursor made at a time per managed ledger


class CursorRegistry:
    __slots__ = ("_bookkeeper", "_ledger", "_non_durable", "_path", "_store", "active",
                 "durable", "waiting")

    def __init__(self, ledger: ManagedLedgerImpl, store: MetadataStore, path: str,
                 bookkeeper: LedgerClient | None) -> None:
        self._ledger = ledger
        self._store = store
        self._path = path
        self._bookkeeper = bookkeeper   # cursor ledgers there (cursor_store.py), None: none
        self.durable: dict[str, ManagedCursorImpl] = {}
        #: made on the first reader: an empty WeakSet costs ~700 bytes a topic
        self._non_durable: weakref.WeakSet[ManagedCursorImpl] | None = None
        #: Cursors adds are cached for (the managed ledger caches while there is one): those
        #: whose readers keep up (a dict as a set: an empty one is a third of the size).
        self.active: dict[ManagedCursorImpl, None] = {}
        #: Cursors read to the end, to wake_reader() on the next add or the close.
        self.waiting: dict[ManagedCursorImpl, None] = {}

    def all(self) -> list[ManagedCursorImpl]:
        return [*self.durable.values(), *(self._non_durable or ())]

    def slowest_persisted(self) -> Position | None:
        """The least persisted mark-delete of the durable cursors; None without any."""
        return min((c.persisted_mark_delete for c in self.durable.values()), default=None)

    async def load(self) -> None:
        for component in await self._store.children(self._path):
            name = decode_name(component)
            found = await CursorStore.load(self._store, self._path, name, self._bookkeeper)
            if found is not None:
                state, store = found
                self.durable[name] = ManagedCursorImpl(self._ledger, name, state, store, self.active)

    async def open(self, name: str, mark_delete: Callable[[], Position]) -> ManagedCursorImpl:
        """The durable cursor of that name, created at mark_delete() if there is none. A
        creation runs to its end even if the caller is cancelled: else the cursor's node could
        be stored while the cursor is not known, and no later open could create it again."""
        return await run_to_end(self._open(name, mark_delete))

    async def _open(self, name: str, mark_delete: Callable[[], Position]) -> ManagedCursorImpl:
        async with _CREATIONS.held(self):
            cursor = self.durable.get(name)
            if cursor is not None:
                return cursor
            store = CursorStore(self._store, self._path, name, self._bookkeeper)
            cursor = ManagedCursorImpl(self._ledger, name, CursorState(mark_delete()), store, self.active)
            try:
                await cursor.create()
            except BookKeeperError as exc:   # its ledger, or its node (MetadataStoreError)
                raise ManagedLedgerStorageError(f"creating cursor {name} failed: {exc}") from exc
            self.durable[name] = cursor
            return cursor

    def add_non_durable(self, name: str, start: Position) -> ManagedCursorImpl:
        cursor = ManagedCursorImpl(self._ledger, name,
                                   CursorState(Position(start.ledger_id, start.entry_id - 1)),
                                   active_cursors=self.active)
        if self._non_durable is None:
            self._non_durable = weakref.WeakSet()
        self._non_durable.add(cursor)
        return cursor

    async def delete(self, name: str) -> bool:
        """Forget and delete a durable cursor, to the end even if the caller is cancelled;
        False when there is none of that name."""
        return await run_to_end(self._delete(name))

    async def _delete(self, name: str) -> bool:
        cursor = self.durable.pop(name, None)
        if cursor is None:
            return False
        await cursor.remove()
        return True

    def stop_waiting(self, cursor: ManagedCursorImpl) -> None:
        discard(self.waiting, cursor)

    def wake_waiting(self, more: bool) -> None:
        """Wake every waiting cursor: more, entries to read; not more, the ledger closes."""
        waiting, self.waiting = self.waiting, {}
        for cursor in waiting:
            try:
                cursor.wake_reader(more)
            except Exception:   # a reader's failure must not fail the add that woke it, nor the others
                logger.exception("managed ledger %s: waking cursor %s failed", self._ledger.name, cursor.name)

    async def close_all(self) -> None:
        cursors = self.all()
        outcomes = await asyncio.gather(*[cursor.close() for cursor in cursors], return_exceptions=True)
        for cursor, outcome in zip(cursors, outcomes):
            if isinstance(outcome, ManagedLedgerStorageError):   # storage away: expected
                logger.warning("managed ledger %s: cursor %s closed without its last state "
                               "stored: %s", self._ledger.name, cursor.name, outcome.__cause__ or outcome)
            elif isinstance(outcome, Exception):
                logger.error("managed ledger %s: closing cursor %s: %s", self._ledger.name,
                             cursor.name, outcome)
