"""The entry index: (ledger, entry) -> (entry log, offset, length), one file per ledger.

``<ledger dir>/index/<ledger id>.idx`` holds record ``i`` for entry ``i``: two little-endian
u64 words, ``(log id + 1) << 32 | data length`` and the record's offset in the log. Records are
written only after the entry log data they point at is fsynced, and fsynced before the
checkpoint mark that makes the journal behind them disposable. So at start-up a file is loaded
as the longest prefix of records pointing inside existing logs; anything past it (zeros or a
torn write of a flush the crash interrupted) is cut, and the journal replay from the mark
brings those entries back. Compaction rewrites single records in place (16 aligned bytes).

The in-memory copy is the same words in an ``array('Q')`` per ledger, loaded with one read per
file. Start-up only lists the files: a ledger's file is read when that ledger is first used
(or written), and the storage thread reads the rest before its first garbage collection, a step
at a time (checkpoint.py), so a broker holding 100,000 ledgers is up before it has read 100,000
files, and serves the topics used first as fast as later ones. A file is checked against the
entry logs as they were at start-up, whenever it is read. Also kept: live record bytes per log,
which drive garbage collection.
"""

from __future__ import annotations

import collections
import logging
import os
import sys
import threading
from array import array
from dataclasses import dataclass
from itertools import compress, islice
from pathlib import Path
from typing import Callable

from .give_way import STEP_ENTRIES
from .journal import HEADER_SIZE, fsync_directory, has_sync_filesystem, pwrite_all, sync_filesystem

logger = logging.getLogger(__name__)

INDEX_SUFFIX = ".idx"
RECORD_SIZE = 16
#: Index files a flush keeps open to fsync each (each ledger written since the last checkpoint
#: has one; 100,000 topics would pass any open-files limit). Past that many, the files are
#: closed as written and made durable together by one syncfs(2) of their filesystem.
MAX_OPEN_FILES = 256
_LENGTH_MASK = 0xFFFFFFFF


@dataclass(frozen=True, slots=True)
class EntryLocation:
    log_id: int
    offset: int
    length: int


def encode_locations(locations: list[EntryLocation]) -> array:
    words = array("Q")
    for location in locations:
        words.append(location_tag(location.log_id) | location.length)
        words.append(location.offset)
    return words


def _decode(words: array, entry_id: int) -> EntryLocation:
    first = words[2 * entry_id]
    return EntryLocation((first >> 32) - 1, words[2 * entry_id + 1], first & _LENGTH_MASK)


def location_tag(log_id: int) -> int:
    """The high half of an entry's first index word: its log id + 1 (0 means no entry)."""
    return (log_id + 1) << 32


def encode_runs(runs: list[tuple[int, array]], entries: list[bytes],
                pause: Callable[[], None] | None = None) -> tuple[array, collections.Counter[int]]:
    """Words for consecutive entries written as ``EntryLogWriter.append_records`` placed them,
    and the record bytes they added per log (built with slices, not a call per entry, and
    ``pause`` between slices: a checkpoint gives way to the event loop with it)."""
    words = array("Q", bytes(16 * len(entries)))
    live: collections.Counter[int] = collections.Counter()
    start = 0
    for log_id, offsets in runs:
        stop = start + len(offsets)
        tag = location_tag(log_id)
        for low in range(start, stop, STEP_ENTRIES):   # bounded lists of ints
            high = min(low + STEP_ENTRIES, stop)
            words[2 * low : 2 * high : 2] = array("Q", [tag | len(data) for data in entries[low:high]])
            if pause is not None:
                pause()
        words[2 * start + 1 : 2 * stop : 2] = offsets
        live[log_id] += offsets[-1] + HEADER_SIZE + len(entries[stop - 1]) - offsets[0]
        start = stop
    return words, live


def summarize(words: array) -> tuple[int, collections.Counter[int]]:
    """(data bytes, record bytes per log) of encoded locations, in C-level passes over the
    words' 32-bit halves: a ledger of 100k entries dropped on the event loop took 160 ms
    with an object per entry, and a few ms so."""
    halves = array("I", words.tobytes())   # per entry: length, log id + 1, then the offset
    lengths, tags = (halves[0::4], halves[1::4]) if sys.byteorder == "little" else (halves[1::4], halves[0::4])
    total_size = sum(lengths)
    live: collections.Counter[int] = collections.Counter()
    for tag in set(tags):
        count = tags.count(tag)
        data = total_size if count == len(tags) else sum(compress(lengths, map(tag.__eq__, tags)))
        live[tag - 1] = data + count * HEADER_SIZE
    return total_size, live


def _to_disk(words: array) -> bytes:
    if sys.byteorder == "little":
        return words.tobytes()
    swapped = array("Q", words)
    swapped.byteswap()
    return swapped.tobytes()


class LedgerEntries:
    """One ledger's locations; entry ids are record numbers (contiguous from 0).

    ``uncounted``: how many leading entries (those loaded at start-up) are not yet in the
    index's live bytes per log; the storage thread counts them after start-up.
    """

    __slots__ = ("words", "total_size", "uncounted")

    def __init__(self, words: array, total_size: int, uncounted: int = 0) -> None:
        self.words = words
        self.total_size = total_size
        self.uncounted = uncounted

    def __len__(self) -> int:
        return len(self.words) // 2

    def location(self, entry_id: int) -> EntryLocation:
        return _decode(self.words, entry_id)


class LedgerIndex:
    """In-memory locations plus their per-ledger files.

    Memory methods are called under the storage lock; file methods (``persist*``, ``sync``,
    ``delete_file``, ``load``) and ``count_loaded_entries`` only on the storage thread.
    """

    def __init__(self, directory: Path, lock: threading.Lock) -> None:
        self._directory = directory
        self._lock = lock
        self._all_counted = True
        self._ledgers: dict[int, LedgerEntries] = {}
        #: Ledgers whose files are not read yet, and the entry logs' sizes at start-up.
        self._unread: set[int] = set()
        self._start_log_sizes: dict[int, int] = {}
        #: Log id -> bytes of records (header + data) the index points at (complete once
        #: count_loaded_entries ran).
        self.live_bytes: collections.Counter[int] = collections.Counter()
        self._dirty: dict[int, int] = {}
        self._unsynced = False   # files written and closed since the last sync, not fsynced
        self._created_file = False

    # ---- start-up ------------------------------------------------------------------------

    def load(self, live_ledgers: set[int], log_sizes: dict[int, int]) -> None:
        """List the index files, dropping those of deleted ledgers; each is read on first use."""
        self._directory.mkdir(parents=True, exist_ok=True)
        self._start_log_sizes = dict(log_sizes)
        dropped = False
        for path in self._directory.glob(f"*{INDEX_SUFFIX}"):
            try:
                ledger_id = int(path.name[: -len(INDEX_SUFFIX)])
            except ValueError:
                logger.warning("ignoring stray file %s in the index directory", path)
                continue
            if ledger_id not in live_ledgers:
                path.unlink()
                dropped = True
                continue
            self._unread.add(ledger_id)
        self._all_counted = not self._unread
        if dropped:
            fsync_directory(self._directory)

    def _entries(self, ledger_id: int) -> LedgerEntries | None:
        """A ledger's locations, its file read first if it was not yet (under the lock)."""
        if ledger_id in self._unread:
            self._unread.discard(ledger_id)
            self._read_file(ledger_id)
        return self._ledgers.get(ledger_id)

    def _read_file(self, ledger_id: int) -> None:
        """Load a file as its longest valid prefix; cut (durably) what follows it."""
        path = self._directory / f"{ledger_id}{INDEX_SUFFIX}"
        raw = path.read_bytes()
        words = array("Q")
        words.frombytes(raw[: len(raw) - len(raw) % RECORD_SIZE])
        if sys.byteorder != "little":
            words.byteswap()
        valid, total_size = _valid_prefix(words, self._start_log_sizes)
        if valid * RECORD_SIZE != len(raw):
            logger.warning("index of ledger %d: cutting %d bytes past %d valid entries",
                           ledger_id, len(raw) - valid * RECORD_SIZE, valid)
            del words[2 * valid:]
            with open(path, "r+b") as f:
                f.truncate(valid * RECORD_SIZE)
                os.fsync(f.fileno())
        if valid:
            self._ledgers[ledger_id] = LedgerEntries(words, total_size, uncounted=valid)
            self._all_counted = False

    def read_unread(self, limit: int) -> bool:
        """Read up to limit of the files not read yet (storage thread); True once none is left.
        A step at a time, 100,000 files after a restart keep neither the storage thread from
        its checkpoints nor the interpreter from the event loop for seconds."""
        for ledger_id in list(islice(self._unread, limit)):
            with self._lock:
                self._entries(ledger_id)
        return not self._unread

    def count_loaded_entries(self) -> None:
        """Read the files not read yet, and add the entries loaded since start-up to the live
        bytes per log (storage thread, before any garbage collection decision, which needs every
        ledger's; kept off start-up, it costs a read of every file and a pass over every entry)."""
        if self._all_counted:
            return
        self.read_unread(len(self._unread))
        for ledger_id, entries in list(self._ledgers.items()):
            usage = _usage(entries.words, entries.uncounted)
            with self._lock:
                if self._ledgers.get(ledger_id) is entries and entries.uncounted:
                    self.live_bytes.update(usage)
                    entries.uncounted = 0
        self._all_counted = True

    # ---- memory (under the storage lock) ---------------------------------------------------

    def count(self, ledger_id: int) -> int:
        entries = self._entries(ledger_id)
        return len(entries) if entries is not None else 0

    def size(self, ledger_id: int) -> int:
        entries = self._entries(ledger_id)
        return entries.total_size if entries is not None else 0

    def locations(self, ledger_id: int, first: int, last: int) -> list[EntryLocation]:
        entries = self._entries(ledger_id)
        assert entries is not None, f"ledger {ledger_id} has no indexed entries"
        return [entries.location(entry_id) for entry_id in range(first, last + 1)]

    def locations_within(self, ledger_id: int, first: int, last: int, max_bytes: int
                         ) -> list[EntryLocation]:
        """Locations from ``first`` on, up to ``last``, while their data stays under
        ``max_bytes`` (at least one); none for entries past the ledger's end."""
        entries = self._entries(ledger_id)
        found: list[EntryLocation] = []
        if entries is None:
            return found
        size = 0
        for entry_id in range(first, min(last, len(entries) - 1) + 1):
            location = entries.location(entry_id)
            size += location.length
            if found and size > max_bytes:
                break
            found.append(location)
        return found

    def extend(self, ledger_id: int, words: array, summary: tuple[int, collections.Counter[int]]
               ) -> None:
        """Append locations (already persisted) for the next entries of a ledger; ``summary``
        is their (data bytes, record bytes per log), as ``summarize(words)`` gives it, computed
        before taking the lock."""
        entries = self._entries(ledger_id)
        if entries is None:
            entries = self._ledgers[ledger_id] = LedgerEntries(array("Q"), 0)
        total_size, live = summary
        entries.total_size += total_size
        self.live_bytes.update(live)
        entries.words.extend(words)

    def relocate(self, ledger_id: int, entry_id: int, expected: EntryLocation,
                 moved: EntryLocation) -> bool:
        """Point an entry at its copy, unless it changed (or its ledger went) meanwhile."""
        entries = self._entries(ledger_id)
        if entries is None or entry_id >= len(entries) or entries.location(entry_id) != expected:
            return False
        entries.words[2 * entry_id : 2 * entry_id + 2] = encode_locations([moved])
        record_bytes = HEADER_SIZE + moved.length
        self.live_bytes[expected.log_id] -= record_bytes
        self.live_bytes[moved.log_id] += record_bytes
        return True

    def drop(self, ledger_id: int) -> None:
        self._unread.discard(ledger_id)   # never counted: nothing to take back
        entries = self._ledgers.pop(ledger_id, None)
        if entries is None:
            return
        for log_id, record_bytes in summarize(entries.words[2 * entries.uncounted:])[1].items():
            self.live_bytes[log_id] -= record_bytes

    def entries_in_logs(self, log_ids: set[int]) -> dict[int, list[tuple[int, int, EntryLocation]]]:
        """(ledger, entry, location) of every indexed entry stored in one of ``log_ids``.

        Storage thread only, and without the lock: the arrays change only on that thread (a
        deletion merely drops a ledger from the dict), so the scan never stalls the loop."""
        found: dict[int, list[tuple[int, int, EntryLocation]]] = {log_id: [] for log_id in log_ids}
        for ledger_id, entries in list(self._ledgers.items()):
            for entry_id in range(len(entries)):
                location = entries.location(entry_id)
                if location.log_id in found:
                    found[location.log_id].append((ledger_id, entry_id, location))
        return found

    # ---- files (storage thread) -----------------------------------------------------------

    def persist(self, ledger_id: int, first_entry_id: int, words: array) -> None:
        """Write records for entries first_entry_id.. (durable after ``sync``); a file not read
        yet is read first, as it was (``extend`` adds these records to memory after the sync)."""
        if ledger_id in self._unread:
            with self._lock:
                self._entries(ledger_id)
        pwrite_all(self._open_for_write(ledger_id), [_to_disk(words)], first_entry_id * RECORD_SIZE)

    def sync(self) -> None:
        if self._unsynced:
            self._close_dirty()
            sync_filesystem(self._directory)
            self._unsynced = False
        else:
            self._sync_files()
        if self._created_file:
            fsync_directory(self._directory)
            self._created_file = False

    def delete_file(self, ledger_id: int) -> None:
        fd = self._dirty.pop(ledger_id, None)
        if fd is not None:
            os.close(fd)
        try:
            (self._directory / f"{ledger_id}{INDEX_SUFFIX}").unlink()
        except FileNotFoundError:
            return
        fsync_directory(self._directory)

    def _sync_files(self) -> None:
        for fd in self._dirty.values():
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        self._dirty = {}

    def _close_dirty(self) -> None:
        for fd in self._dirty.values():
            os.close(fd)
        self._dirty = {}

    def _make_room(self) -> None:
        """Many ledgers written since the last sync: one syncfs at sync costs far less than a
        fsync each (at 100,000 ledgers, most of a checkpoint); without syncfs, fsync them now."""
        if has_sync_filesystem():
            self._close_dirty()
            self._unsynced = True
        else:
            self._sync_files()

    def _open_for_write(self, ledger_id: int) -> int:
        fd = self._dirty.get(ledger_id)
        if fd is None:
            if len(self._dirty) >= MAX_OPEN_FILES:   # a flush of many ledgers stays within the
                self._make_room()                     # process's open-files limit
            path = self._directory / f"{ledger_id}{INDEX_SUFFIX}"
            if not path.exists():
                self._created_file = True
            fd = self._dirty[ledger_id] = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
        return fd


def _valid_prefix(words: array, log_sizes: dict[int, int]) -> tuple[int, int]:
    """(entries, data bytes) of the leading records that point inside existing logs.

    Runs at C speed over 32-bit halves (``length, log id + 1, offset low, offset high`` per
    record): the first record naming no existing log (zeros included) ends the prefix; if the
    last record left points past its log's end, the exact per-record check decides.
    """
    halves = array("I", words.tobytes())
    low = 0 if sys.byteorder == "little" else 1  # where the length half of a word sits
    lengths, stored_ids = halves[low::4], halves[1 - low::4]
    count = len(stored_ids)
    for stored_id in set(stored_ids) - {log_id + 1 for log_id in log_sizes}:
        count = min(count, stored_ids.index(stored_id))
    if count and _past_log_end(_decode(words, count - 1), log_sizes):
        return _valid_prefix_exactly(words, log_sizes)
    return count, sum(lengths[:count])


def _past_log_end(location: EntryLocation, log_sizes: dict[int, int]) -> bool:
    return location.offset + HEADER_SIZE + location.length > log_sizes.get(location.log_id, -1)


def _valid_prefix_exactly(words: array, log_sizes: dict[int, int]) -> tuple[int, int]:
    total_size = 0
    for entry_id in range(len(words) // 2):
        location = _decode(words, entry_id)
        if location.log_id < 0 or _past_log_end(location, log_sizes):
            return entry_id, total_size
        total_size += location.length
    return len(words) // 2, total_size


def _usage(words: array, count: int) -> collections.Counter[int]:
    """Record bytes per log of the first ``count`` entries."""
    return summarize(words[: 2 * count])[1]
