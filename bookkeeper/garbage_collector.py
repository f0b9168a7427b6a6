"""Garbage collection of entry logs: space of deleted ledgers comes back.

Runs on the storage thread only (so it never races a flush). A log nothing points at is
removed at once. A log whose live bytes fall under ``minorCompactionThreshold`` (checked every
``minorCompactionInterval``) or ``majorCompactionThreshold`` (every
``majorCompactionInterval``) is compacted: its live records are copied verbatim to a new log,
which is fsynced; the index records are rewritten and fsynced; the memory index is switched;
only then is the old log unlinked. A crash at any step leaves the index pointing at an
existing copy; a half-written copy nothing points at is removed by the next pass.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass

from .config import BookieConfig
from .entry_log import EntryLogWriter, open_log, read_record, remove_logs
from .errors import EntryCorruptedError
from .journal import HEADER_SIZE
from .ledger_index import EntryLocation, encode_locations
from .ledger_storage import EntryLogStorage

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Move:
    """One live entry copied by compaction: from ``old`` to ``new``."""

    ledger_id: int
    entry_id: int
    old: EntryLocation
    new: EntryLocation


class GarbageCollector:
    def __init__(self, storage: EntryLogStorage, config: BookieConfig) -> None:
        self._storage = storage
        self._config = config
        now = time.monotonic()
        self._last_minor = now
        self._last_major = now
        #: Logs removed and compacted so far, for tests and metrics.
        self.removed_logs = 0
        self.compacted_logs = 0

    def run(self) -> None:
        """One pass: remove empty logs, then compact if a compaction interval is due."""
        self.remove_empty_logs()
        threshold = self._due_threshold(time.monotonic())
        if threshold > 0:
            self.compact(threshold)

    def _due_threshold(self, now: float) -> float:
        config = self._config
        if config.major_compaction_threshold > 0 and \
                now - self._last_major >= config.major_compaction_interval_s:
            self._last_major = self._last_minor = now
            return config.major_compaction_threshold
        if config.minor_compaction_threshold > 0 and \
                now - self._last_minor >= config.minor_compaction_interval_s:
            self._last_minor = now
            return config.minor_compaction_threshold
        return 0.0

    def remove_empty_logs(self) -> None:
        storage = self._storage
        storage.index.count_loaded_entries()
        with storage.lock:
            empty = [log_id for log_id in self._settled_logs()
                     if storage.index.live_bytes[log_id] <= 0]
            self._forget(empty)
        remove_logs(storage.directory, empty)
        self.removed_logs += len(empty)

    def compact(self, threshold: float) -> None:
        """Copy the live entries of logs under ``threshold`` live ratio, then remove them."""
        storage = self._storage
        storage.index.count_loaded_entries()
        with storage.lock:
            candidates = {log_id for log_id in self._settled_logs()
                          if 0 < storage.index.live_bytes[log_id]
                          < threshold * storage.log_sizes[log_id]}
        if not candidates:
            return
        live_entries = storage.index.entries_in_logs(candidates)
        moves = self._copy(live_entries)
        self._switch_index(moves)
        with storage.lock:
            emptied = [log_id for log_id in candidates if storage.index.live_bytes[log_id] <= 0]
            self._forget(emptied)
        remove_logs(storage.directory, emptied)
        self.compacted_logs += len(emptied)
        logger.info("compaction (threshold %.2f): %d entries moved, %d logs removed",
                    threshold, len(moves), len(emptied))

    def _settled_logs(self) -> list[int]:
        """Logs no writer appends to any more (caller holds the lock)."""
        writer = self._storage.flush_writer
        current = writer.current_log_id if writer is not None else -1
        return [log_id for log_id in self._storage.log_sizes if log_id != current]

    def _forget(self, log_ids: list[int]) -> None:
        for log_id in log_ids:
            self._storage.log_sizes.pop(log_id, None)
            self._storage.index.live_bytes.pop(log_id, None)

    def _copy(self, live_entries: dict[int, list[tuple[int, int, EntryLocation]]]) -> list[Move]:
        """Copy each log's live records to new logs and make them durable."""
        storage = self._storage
        writer = EntryLogWriter(storage.directory, self._config.entry_log_size_limit,
                                storage.log_ids, storage.log_sizes, self._config.flush_entry_log_bytes)
        moves: list[Move] = []
        for log_id, entries in live_entries.items():
            try:
                moves.extend(self._copy_log(writer, log_id, entries))
            except EntryCorruptedError:
                logger.exception("entry log %d: unreadable record, log left as it is", log_id)
        writer.close()
        return moves

    def _copy_log(self, writer: EntryLogWriter, log_id: int,
                  entries: list[tuple[int, int, EntryLocation]]) -> list[Move]:
        fd = open_log(self._storage.directory, log_id)
        moves: list[Move] = []
        try:
            for ledger_id, entry_id, old in entries:
                record = read_record(fd, ledger_id, entry_id, old.offset, old.length)
                offset = writer.append_record(record[:HEADER_SIZE],
                                              memoryview(record)[HEADER_SIZE:])
                moves.append(Move(ledger_id, entry_id, old,
                                  EntryLocation(writer.current_log_id, offset, old.length)))
        finally:
            os.close(fd)
        return moves

    def _switch_index(self, moves: list[Move]) -> None:
        """Persist the new locations (fsynced), then switch the memory index over."""
        index = self._storage.index
        for move in moves:
            if self._storage.is_deleted(move.ledger_id):
                continue
            index.persist(move.ledger_id, move.entry_id, encode_locations([move.new]))
        index.sync()
        with self._storage.lock:
            for move in moves:
                index.relocate(move.ledger_id, move.entry_id, move.old, move.new)
