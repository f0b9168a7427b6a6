"""Where a durable cursor's state is stored.

In the metadata store, under the managed ledger's node (metadata.py). On a BookKeeper cluster,
as in Pulsar, each flush is rather an entry of the cursor's own ledger (its "cursor ledger"),
whose id the node names: the metadata store is ZooKeeper there, a broker can lose its session,
and the acknowledgements it flushed must not be lost with it. Bookies reached, a flush needs no
ZooKeeper; a broker taking the topic over opens the ledger with recovery (fencing it: the old
owner can append no more) and reads the state from its last entry.

A new cursor's first state goes to the node, as in Pulsar; then, and when a cursor is opened,
a new ledger is started (written first, then named in the node, then the old one deleted), so
that flushes need no ZooKeeper from then on (Pulsar starts it at the first flush, which then
needs ZooKeeper). Too few bookies for a ledger do not fail the subscription or the topic's
load: the node holds the state and the next flush tries again; so does a flush once the ledger
holds MAX_ENTRIES. When an append fails for want of bookies, the state goes to the node itself
(without a ledger) and the next flush starts a new ledger; a fenced ledger means another broker
owns the cursor now: the flush fails.
In the embedded standalone store, the metadata store and the ledgers share one disk and one
process: the node alone holds the state.
"""

from __future__ import annotations

import logging

from bookkeeper.errors import BookKeeperError, LedgerFencedError, NoSuchLedgerError
from bookkeeper.interfaces import LedgerClient, WriteHandle
from log_limits.repeats import RepeatLimitedLog

from .errors import MetadataNotFoundError
from .interfaces import MetadataStore
from .metadata import CursorState, cursor_path

logger = logging.getLogger(__name__)
_repeats = RepeatLimitedLog(logger)

MAX_ENTRIES = 50000   # Pulsar's managedLedgerCursorMaxEntriesPerLedger


class CursorStore:
    __slots__ = ("_bookkeeper", "_cursor", "_entries", "_ledger_path", "_store", "_version", "_writer",
                 "ledger_id")

    def __init__(self, store: MetadataStore, ledger_path: str, cursor: str, bookkeeper: LedgerClient | None,
                 version: int = -1, ledger_id: int | None = None) -> None:
        self._store = store
        self._ledger_path = ledger_path   # its managed ledger's node, shared with it
        self._cursor = cursor
        self._bookkeeper = bookkeeper   # None: the node alone holds the state
        self._version = version
        self.ledger_id = ledger_id      # the ledger the node names
        self._writer: WriteHandle | None = None
        self._entries = 0

    @property
    def _path(self) -> str:
        """Its node, made when used: a broker holds 100,000s of cursors, and stores a state
        seldom (cursor.py batches them)."""
        return cursor_path(self._ledger_path, self._cursor)

    @classmethod
    async def load(cls, store: MetadataStore, ledger_path: str, cursor: str,
                   bookkeeper: LedgerClient | None) -> tuple[CursorState, CursorStore] | None:
        """The stored state (the last one its ledger holds, if it names one), None if there is
        no cursor there."""
        found = await store.get(cursor_path(ledger_path, cursor))
        if found is None:
            return None
        stored = CursorState.decode(found[0])
        state = stored
        if stored.ledger is not None and bookkeeper is not None:
            state = await _last_state(bookkeeper, stored.ledger) or stored
        holder = cls(store, ledger_path, cursor, bookkeeper, found[1], stored.ledger)
        await holder._start_ledger_if_bookies(state)
        return state, holder

    @classmethod
    async def delete_stored(cls, store: MetadataStore, ledger_path: str, cursor: str,
                            bookkeeper: LedgerClient | None) -> None:
        """Delete a cursor's node and ledger (its managed ledger is being deleted)."""
        found = await store.get(cursor_path(ledger_path, cursor))
        ledger_id = CursorState.decode(found[0]).ledger if found is not None else None
        await cls(store, ledger_path, cursor, bookkeeper, ledger_id=ledger_id).delete()

    async def create(self, state: CursorState) -> None:
        """Store the first state of a new cursor (there must be none)."""
        self._version = await self._store.put(self._path, state.encode(), -1)
        await self._start_ledger_if_bookies(state)

    async def persist(self, state: CursorState) -> None:
        """Raises the storage's error (BookKeeperError or MetadataStoreError) if not stored."""
        if self._bookkeeper is None:
            self._version = await self._store.put(self._path, state.encode(), self._version)
            return
        try:
            if self._writer is None or self._entries >= MAX_ENTRIES:
                await self._start_ledger(state)
            else:
                await self._writer.add_entry(state.encode())
                self._entries += 1
            return
        except LedgerFencedError:
            raise
        except BookKeeperError as exc:
            _repeats.warning(("append", type(exc)), "cursor ledger %s: %s; the state goes to the "
                             "metadata store", self.ledger_id, exc)
        self._writer = None
        await self._name(state, None)

    async def close(self) -> None:
        """Seal the ledger (its next owner recovers it faster); failing that, it recovers it."""
        writer, self._writer = self._writer, None
        if writer is not None:
            try:
                await writer.close()
            except BookKeeperError as exc:
                logger.info("cursor ledger %d not sealed: %s", writer.ledger_id, exc)

    async def delete(self) -> None:
        await self.close()
        try:
            await self._store.delete(self._path)
        except MetadataNotFoundError:
            pass
        await self._delete_ledger(self.ledger_id)

    async def _start_ledger_if_bookies(self, state: CursorState) -> None:
        if self._bookkeeper is None:
            return
        try:
            await self._start_ledger(state)
        except BookKeeperError as exc:   # the node holds the state meanwhile
            _repeats.warning(("start", type(exc)), "cursor ledger not started yet: %s", exc)

    async def _start_ledger(self, state: CursorState) -> None:
        writer = await self._bookkeeper.create_ledger()
        try:
            await writer.add_entry(state.encode())
            await self.close()   # the ledger written so far, sealed before the node drops it
            await self._name(state, writer.ledger_id)
        except BaseException:
            await self._delete_ledger(writer.ledger_id)
            raise
        self._writer, self._entries = writer, 1

    async def _name(self, state: CursorState, ledger_id: int | None) -> None:
        """Store state in the node, naming ledger_id; then delete the ledger it named."""
        named = CursorState(state.mark_delete, state.acked, state.batch_acks, ledger_id)
        self._version = await self._store.put(self._path, named.encode(), self._version)
        old, self.ledger_id = self.ledger_id, ledger_id
        if old != ledger_id:
            await self._delete_ledger(old)

    async def _delete_ledger(self, ledger_id: int | None) -> None:
        if ledger_id is None or self._bookkeeper is None:
            return
        try:
            await self._bookkeeper.delete_ledger(ledger_id)
        except BookKeeperError as exc:
            logger.warning("cursor ledger %d not deleted: %s", ledger_id, exc)


async def _last_state(bookkeeper: LedgerClient, ledger_id: int) -> CursorState | None:
    """The last state written to the ledger, after fencing it; None when it holds none."""
    try:
        handle = await bookkeeper.open_ledger(ledger_id, recovery=True)
    except NoSuchLedgerError:
        logger.warning("cursor ledger %d is gone: the cursor's node holds its state", ledger_id)
        return None
    last = handle.last_add_confirmed
    if last < 0:
        return None
    [raw] = await handle.read_entries(last, last)
    return CursorState.decode(raw)
