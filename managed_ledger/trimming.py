"""Deleting a managed ledger's own ledgers: in a trim pass, the sealed ones every durable cursor
consumed that retention lets go (retention.py says which), and on the way the ones its metadata
no longer names or never came to name (empty ones at open, a replaced compacted view, a new
ledger whose recording failed).

Apart from ManagedLedgerImpl because a pass needs only the ledger list, the cursors and a
metadata write, never the add path; ManagedLedgerImpl runs one pass at a time (CoalescedTask).
Ledgers nobody's metadata names any more are orphan_ledgers.py's.
"""

from __future__ import annotations

import logging
from typing import Protocol

from bookkeeper.errors import BookKeeperError, MetadataBadVersionError, MetadataNotFoundError
from bookkeeper.interfaces import LedgerClient

from .cursor_registry import CursorRegistry
from .entry_reader import EntryReader
from .errors import ManagedLedgerStorageError
from .ledger_list import LedgerList, now_ms
from .position import Position
from .retention import RetentionPolicy, ledgers_beyond_retention

logger = logging.getLogger(__name__)


class TrimmedLog(Protocol):
    name: str
    ledger_list: LedgerList
    retention: RetentionPolicy

    @property
    def last_confirmed_entry(self) -> Position: ...

    async def persist_metadata(self) -> None: ...


class LedgerTrimmer:
    __slots__ = ("_bookkeeper", "_cursors", "_log", "_reads")

    def __init__(self, log: TrimmedLog, bookkeeper: LedgerClient, reads: EntryReader, cursors: CursorRegistry) -> None:
        self._log = log
        self._bookkeeper = bookkeeper
        self._reads = reads
        self._cursors = cursors

    async def trim(self) -> None:
        """One pass: drop the ledgers from the metadata, then delete them and move the cursors
        past them."""
        log = self._log
        doomed = self._ledgers_to_delete()
        if not doomed:
            return
        log.ledger_list.remove(doomed)
        try:
            await log.persist_metadata()
        except ManagedLedgerStorageError:
            logger.exception("managed ledger %s: trimming failed", log.name)
            return
        for ledger_id in sorted(doomed):
            self._reads.forget(ledger_id)
            await self.delete(ledger_id)
        first = log.ledger_list.first_position()
        for cursor in self._cursors.all():
            cursor.move_past_trimmed(first)
        logger.info("managed ledger %s: trimmed ledgers %s", log.name, sorted(doomed))

    def _ledgers_to_delete(self) -> set[int]:
        """Sealed ledgers consumed by every durable cursor (all count as consumed when there is
        none) and beyond retention."""
        log = self._log
        slowest = self._cursors.slowest_persisted()
        if slowest is None:
            slowest = log.last_confirmed_entry
        return ledgers_beyond_retention(log.ledger_list, log.retention, slowest, now_ms())

    async def delete_unrecorded(self, ledger_id: int, error: ManagedLedgerStorageError) -> None:
        """A new ledger whose recording failed: deleted when the metadata surely does not name
        it (the CAS lost); after a lost connection the write may have landed, so it is left to
        the orphan cleaner, which reads the metadata again."""
        if isinstance(error.__cause__, (MetadataBadVersionError, MetadataNotFoundError)):
            await self.delete(ledger_id)

    async def delete(self, ledger_id: int) -> None:
        """Delete a ledger the metadata does not name; a failure is one warning line."""
        try:
            await self._bookkeeper.delete_ledger(ledger_id)
        except BookKeeperError as exc:
            logger.warning("managed ledger %s: deleting ledger %d failed: %s",
                           self._log.name, ledger_id, exc)
