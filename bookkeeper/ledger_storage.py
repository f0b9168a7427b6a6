"""Ledger storage: the write cache in front of entry logs, and the index that finds entries.

An entry lives in exactly one of three places at any instant, always looked up in this order:
the active write cache, the cache being flushed, or an entry log through the index (where the
read cache may hold a copy read ahead until it is read, see read_cache.py). A flush
(run by the checkpoint on the storage thread) writes the swapped-out cache to the entry log,
fsyncs it, writes and fsyncs the index records, and only then, under the lock, extends the
in-memory index and lets go of the cache: a reader never finds an entry missing.

Threads: ``add``/``lookup``/``delete_ledger``/``swap_cache`` run on the event loop; ``flush``
and the garbage collector on the single storage thread; ``read`` on the read pool. The lock
guards the in-memory index, the caches' hand-over and the read cache.
"""

from __future__ import annotations

import collections
import logging
import os
import threading
from array import array
from pathlib import Path

from .entry_log import EntryLogWriter, LogIds, list_entry_logs, open_log, read_run
from .errors import NoSuchEntryError
from .give_way import GiveWay
from .journal import HEADER_SIZE
from .ledger_index import EntryLocation, LedgerIndex
from .read_cache import READ_AHEAD_BYTES, READ_AHEAD_ENTRIES, ReadCache
from .write_cache import WriteCache

logger = logging.getLogger(__name__)

#: What a lookup yields per entry: its bytes (from a cache) or where to read it.
Found = bytes | EntryLocation


class EntryLogStorage:
    """Entries of all ledgers: cached until flushed, then in entry logs found by the index."""

    def __init__(self, ledger_dir: Path, log_size_limit: int, sync_every: int = 0) -> None:
        self.directory = ledger_dir
        self.lock = threading.Lock()
        self.index = LedgerIndex(ledger_dir / "index", self.lock)
        #: Log id -> size in bytes (appends update it as they go).
        self.log_sizes: dict[int, int] = {}
        self.log_ids = LogIds(0)
        self._log_size_limit = log_size_limit
        self._sync_every = sync_every
        self.flush_writer: EntryLogWriter | None = None
        self._cache = WriteCache()
        self._flushing: WriteCache | None = None
        self._deleted: set[int] = set()
        self.read_cache = ReadCache()

    def load(self, live_ledgers: set[int]) -> None:
        """Read the index (never the entry logs); blocking, before anything else runs."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self.log_sizes.update(list_entry_logs(self.directory))
        self.index.load(live_ledgers, self.log_sizes)
        self.log_ids = LogIds(max(self.log_sizes, default=-1) + 1)
        self.flush_writer = EntryLogWriter(self.directory, self._log_size_limit, self.log_ids,
                                           self.log_sizes, self._sync_every)

    # ---- event loop ----------------------------------------------------------------------

    @property
    def cache_size(self) -> int:
        return self._cache.size

    def next_entry_id(self, ledger_id: int) -> int:
        with self.lock:
            return self._next_entry_id_locked(ledger_id)

    def add(self, ledger_id: int, first_entry_id: int, entries: list[bytes], crcs: array) -> None:
        """Take journal-durable consecutive entries with their record CRCs; an entry already
        stored (a replay, which adds one at a time) or a run out of order is ignored."""
        cached = self._cache.get(ledger_id)  # the active cache changes on the loop only
        expected = cached.last_entry_id + 1 if cached is not None else self.next_entry_id(ledger_id)
        if first_entry_id == expected:
            self._cache.put(ledger_id, first_entry_id, entries, crcs)
        elif first_entry_id > expected:
            logger.warning("ledger %d: ignoring entries from %d (expected %d)", ledger_id, first_entry_id,
                           expected)

    def last_entry_id(self, ledger_id: int) -> int:
        return self.next_entry_id(ledger_id) - 1

    def ledger_size(self, ledger_id: int) -> int:
        with self.lock:
            size = self.index.size(ledger_id)
            for cache in (self._flushing, self._cache):
                cached = cache.get(ledger_id) if cache is not None else None
                if cached is not None:
                    size += cached.total_size
        return size

    def lookup(self, ledger_id: int, first: int, last: int) -> list[Found]:
        """Entries first..last: bytes where cached, locations where in an entry log."""
        with self.lock:
            indexed = self.index.count(ledger_id)
            end = self._next_entry_id_locked(ledger_id)
            if first < 0 or first > last or last >= end:
                raise NoSuchEntryError(
                    f"ledger {ledger_id}: entries {first}..{last} outside 0..{end - 1}")
            found: list[Found] = []
            if first < indexed:
                read_ahead = self.read_cache.take
                for entry_id, location in enumerate(
                        self.index.locations(ledger_id, first, min(last, indexed - 1)), start=first):
                    data = read_ahead(ledger_id, entry_id)
                    found.append(location if data is None else data)
            for entry_id in range(max(first, indexed), last + 1):
                found.append(self._cached_entry(ledger_id, entry_id))
        return found

    def _next_entry_id_locked(self, ledger_id: int) -> int:
        for cache in (self._cache, self._flushing):
            cached = cache.get(ledger_id) if cache is not None else None
            if cached is not None:
                return cached.last_entry_id + 1
        return self.index.count(ledger_id)

    def _cached_entry(self, ledger_id: int, entry_id: int) -> bytes:
        for cache in (self._flushing, self._cache):
            data = cache.entry(ledger_id, entry_id) if cache is not None else None
            if data is not None:
                return data
        raise NoSuchEntryError(f"ledger {ledger_id}: entry {entry_id} is not stored")

    def is_deleted(self, ledger_id: int) -> bool:
        return ledger_id in self._deleted

    def delete_ledger(self, ledger_id: int) -> None:
        """Forget a ledger at once (its index file goes with the next storage-thread task)."""
        with self.lock:
            self._deleted.add(ledger_id)
            self._cache.drop(ledger_id)
            self.index.drop(ledger_id)
            self.read_cache.drop_ledger(ledger_id)

    @property
    def unflushed(self) -> WriteCache | None:
        """The swapped-out cache whose flush has not completed (after a failed flush)."""
        return self._flushing

    def swap_cache(self) -> WriteCache | None:
        """Hand the active cache over for flushing (None when empty); one flush at a time."""
        if self._cache.is_empty:
            return None
        with self.lock:
            assert self._flushing is None, "one flush at a time"
            self._flushing, self._cache = self._cache, WriteCache()
        return self._flushing

    # ---- storage thread ------------------------------------------------------------------

    def flush(self, snapshot: WriteCache, pause: GiveWay | None = None) -> None:
        """Write a swapped-out cache to the entry log and the index, durably, then publish;
        ``pause`` runs between chunks (a checkpoint gives way to the event loop with it)."""
        assert self.flush_writer is not None
        written: list[tuple[int, int, array, tuple[int, collections.Counter[int]]]] = []
        for ledger_id, cached in snapshot.ledgers_in_order():
            if ledger_id in self._deleted:
                continue
            words, live = self.flush_writer.append_records(ledger_id, cached.first_entry_id, cached.entries,
                                                           cached.crcs, pause)
            written.append((ledger_id, cached.first_entry_id, words, (cached.total_size, live)))
        self.flush_writer.sync()
        for ledger_id, first_entry_id, words, _ in written:
            self.index.persist(ledger_id, first_entry_id, words)
        self.index.sync()
        with self.lock:
            for ledger_id, _, words, summary in written:
                if ledger_id not in self._deleted:
                    self.index.extend(ledger_id, words, summary)
            if self._flushing is snapshot:
                self._flushing = None
        snapshot.clear(pause)   # freeing a few hundred thousand entries here spares the event loop

    def flush_all(self) -> None:
        """Flush the active cache from the storage thread itself (start-up replay)."""
        snapshot = self.swap_cache()
        if snapshot is not None:
            self.flush(snapshot)

    def forget_deleted(self, ledger_ids: list[int]) -> None:
        for ledger_id in ledger_ids:
            self.index.delete_file(ledger_id)

    def close(self) -> None:
        if self.flush_writer is not None:
            self.flush_writer.close()

    # ---- read pool -----------------------------------------------------------------------

    def read(self, ledger_id: int, first: int, found: list[Found]) -> list[bytes]:
        """Read the entries that were not cached (blocking). A read continuing the last one of
        this ledger reads ahead too, into the read cache."""
        missing = next((i for i, item in enumerate(found) if isinstance(item, EntryLocation)), 0)
        last = first + len(found) - 1
        with self.lock:
            ahead = self._ahead(ledger_id, first + missing, last)
        descriptors: dict[int, int] = {}
        try:
            results = self._read_runs(ledger_id, first, found + ahead, descriptors)
        finally:
            for fd in descriptors.values():
                os.close(fd)
        with self.lock:
            if ledger_id not in self._deleted:
                for entry_id, data in enumerate(results[len(found):], start=last + 1):
                    self.read_cache.put(ledger_id, entry_id, data)
                self.read_cache.read_to(ledger_id, last + len(ahead))
        return results[:len(found)]

    def _ahead(self, ledger_id: int, first_missing: int, last: int) -> list[EntryLocation]:
        """Locations of the entries a read up to ``last`` fetches ahead (lock held): none unless
        the read continues the previous one, none past the index (newer entries are cached)."""
        if not self.read_cache.is_sequential(ledger_id, first_missing):
            return []
        return self.index.locations_within(ledger_id, last + 1, last + READ_AHEAD_ENTRIES,
                                           READ_AHEAD_BYTES)

    def _read_runs(self, ledger_id: int, first: int, found: list[Found],
                   descriptors: dict[int, int]) -> list[bytes]:
        """Data of entries first.. : cached ones as they are, records stored back to back in one
        log read with one pread."""
        results: list[bytes] = []
        index = 0
        while index < len(found):
            item = found[index]
            if not isinstance(item, EntryLocation):
                results.append(item)
                index += 1
                continue
            end, following = index + 1, item.offset + HEADER_SIZE + item.length
            while end < len(found):
                next_item = found[end]
                if not isinstance(next_item, EntryLocation) or next_item.log_id != item.log_id \
                        or next_item.offset != following:
                    break
                following = next_item.offset + HEADER_SIZE + next_item.length
                end += 1
            fd = descriptors.get(item.log_id)
            if fd is None:
                fd = descriptors[item.log_id] = open_log(self.directory, item.log_id)
            lengths = [location.length for location in found[index:end]]  # type: ignore[union-attr]
            results.extend(read_run(fd, ledger_id, first + index, item.offset, lengths))
            index = end
        return results
