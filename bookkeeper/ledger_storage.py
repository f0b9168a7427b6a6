"""Ledger storage of this slice: entries are served straight from the journal files.

An in-memory index maps (ledger, entry) -> (journal file, offset, length); it is rebuilt at
start-up by replaying the journals (see journal.recover_journal) and fed by the journal's
group completions afterwards. Each journal file remembers which ledgers it holds, so a file
whose ledgers are all deleted can be unlinked and its space comes back.

BookKeeper's full design (entry logs + a persistent index + a LastLogMark checkpoint so the
journal can be trimmed) replaces this module later without changing the Bookie's interface.
All methods except ``read`` and ``unlink_files`` run on the event loop thread.
"""

from __future__ import annotations

import logging
import os
from array import array
from dataclasses import dataclass, field
from pathlib import Path

from .errors import EntryCorruptedError, NoSuchEntryError, NoSuchLedgerError
from .journal import HEADER_SIZE, RECORD_HEADER, journal_file_name, record_crc_ok

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class EntryLocation:
    file_id: int
    offset: int
    length: int


@dataclass(slots=True)
class LedgerLocations:
    """Where each entry of one ledger lives; entry ids are array indexes (contiguous from 0)."""

    file_ids: array = field(default_factory=lambda: array("I"))
    offsets: array = field(default_factory=lambda: array("Q"))
    lengths: array = field(default_factory=lambda: array("I"))
    total_size: int = 0

    def __len__(self) -> int:
        return len(self.offsets)

    def location(self, entry_id: int) -> EntryLocation:
        return EntryLocation(self.file_ids[entry_id], self.offsets[entry_id], self.lengths[entry_id])


class JournalLedgerStorage:
    """The (ledger, entry) -> journal location index, plus reads and file reclamation."""

    def __init__(self, journal_dir: Path) -> None:
        self._journal_dir = journal_dir
        self._ledgers: dict[int, LedgerLocations] = {}
        self._file_ledgers: dict[int, set[int]] = {}

    def record(self, ledger_id: int, entry_id: int, file_id: int, offset: int, length: int) -> None:
        """Index one durable record; anything breaking the contiguous prefix is ignored."""
        locations = self._ledgers.get(ledger_id)
        if locations is None:
            locations = self._ledgers[ledger_id] = LedgerLocations()
        if entry_id != len(locations):
            logger.warning("ledger %d: ignoring entry %d (expected %d)",
                           ledger_id, entry_id, len(locations))
            return
        locations.file_ids.append(file_id)
        locations.offsets.append(offset)
        locations.lengths.append(length)
        locations.total_size += length
        holders = self._file_ledgers.get(file_id)
        if holders is None:
            holders = self._file_ledgers[file_id] = set()
        holders.add(ledger_id)

    def add_file(self, file_id: int) -> None:
        """Make a (possibly empty) recovered file known, so reclamation can consider it."""
        self._file_ledgers.setdefault(file_id, set())

    def last_entry_id(self, ledger_id: int) -> int:
        locations = self._ledgers.get(ledger_id)
        return len(locations) - 1 if locations is not None else -1

    def ledger_size(self, ledger_id: int) -> int:
        locations = self._ledgers.get(ledger_id)
        return locations.total_size if locations is not None else 0

    def locate(self, ledger_id: int, first: int, last: int) -> list[EntryLocation]:
        locations = self._ledgers.get(ledger_id)
        if locations is None:
            raise NoSuchEntryError(f"ledger {ledger_id} holds no entries")
        if first < 0 or last >= len(locations) or first > last:
            raise NoSuchEntryError(
                f"ledger {ledger_id}: entries {first}..{last} outside 0..{len(locations) - 1}")
        return [locations.location(entry_id) for entry_id in range(first, last + 1)]

    def delete_ledger(self, ledger_id: int) -> None:
        if self._ledgers.pop(ledger_id, None) is None:
            return
        for holders in self._file_ledgers.values():
            holders.discard(ledger_id)

    def take_reclaimable_files(self, before_file_id: int) -> list[int]:
        """Forget and return files older than ``before_file_id`` that hold no live ledger."""
        files = [file_id for file_id, holders in self._file_ledgers.items()
                 if not holders and file_id < before_file_id]
        for file_id in files:
            del self._file_ledgers[file_id]
        return files

    # ---- storage threads -----------------------------------------------------------------

    def read(self, ledger_id: int, first: int, locations: list[EntryLocation]) -> list[bytes]:
        """Read and verify entries first.. of a ledger (blocking: runs on a read thread)."""
        results: list[bytes] = []
        descriptors: dict[int, int] = {}
        try:
            for entry_id, location in enumerate(locations, start=first):
                fd = descriptors.get(location.file_id)
                if fd is None:
                    fd = descriptors[location.file_id] = self._open(ledger_id, location.file_id)
                results.append(_read_record(fd, ledger_id, entry_id, location))
        finally:
            for fd in descriptors.values():
                os.close(fd)
        return results

    def unlink_files(self, file_ids: list[int]) -> None:
        for file_id in file_ids:
            path = self._journal_dir / journal_file_name(file_id)
            try:
                path.unlink()
                logger.info("reclaimed journal file %s", path)
            except FileNotFoundError:
                pass

    def _open(self, ledger_id: int, file_id: int) -> int:
        try:
            return os.open(self._journal_dir / journal_file_name(file_id), os.O_RDONLY)
        except FileNotFoundError:
            raise NoSuchLedgerError(f"ledger {ledger_id}: journal file {file_id} is gone") from None


def _read_record(fd: int, ledger_id: int, entry_id: int, location: EntryLocation) -> bytes:
    size = HEADER_SIZE + location.length
    record = os.pread(fd, size, location.offset)
    if len(record) != size:
        raise EntryCorruptedError(f"entry {ledger_id}:{entry_id}: short read")
    length, _crc, stored_ledger, stored_entry = RECORD_HEADER.unpack_from(record)
    if (length, stored_ledger, stored_entry) != (location.length, ledger_id, entry_id) \
            or not record_crc_ok(record):
        raise EntryCorruptedError(f"entry {ledger_id}:{entry_id}: header or CRC mismatch")
    return record[HEADER_SIZE:]
