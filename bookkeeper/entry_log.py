"""Entry logs: entries of all ledgers interleaved in append-only files rotated at a size.

A log holds records in the journal's format (``[len][crc32c][ledger][entry][data]``), so every
read verifies the CRC and compaction copies records verbatim. Logs are named
``<log id>.log`` (ten digits) in the ledger directory; ids only grow. Writers run on the
bookie's single storage thread; reads run on the read pool with ``pread``.
"""

from __future__ import annotations

import collections
import logging
import mmap
import os
import threading
from array import array
from bisect import bisect_right
from itertools import accumulate, chain
from pathlib import Path
from typing import Callable, Iterable, Sequence

from native import extension

from .errors import EntryCorruptedError
from .give_way import STEP_ENTRIES, GiveWay
from .journal import HEADER_SIZE, RECORD_HEADER, fsync_directory, pwrite_all, record_crc_ok
from .ledger_index import encode_runs, location_tag

_records = extension("bookkeeper._records")   # the optional native packer (_records.c)
_pack_records = _records.pack_records if _records is not None else None

logger = logging.getLogger(__name__)

LOG_SUFFIX = ".log"
#: Bytes gathered before one pwrite while appending.
_WRITE_CHUNK = 1024 * 1024
#: Runs up to this size are read into a buffer their reading thread keeps (see _run_buffer).
RUN_BUFFER_MAX = 8 * 1024 * 1024
_run_buffers = threading.local()


class EntryLogGoneError(Exception):
    """A log was removed (compacted or garbage collected) between lookup and read; the caller
    looks the entry up again."""


def entry_log_name(log_id: int) -> str:
    return f"{log_id:010d}{LOG_SUFFIX}"


def list_entry_logs(directory: Path) -> dict[int, int]:
    """Log id -> size of every entry log in ``directory``."""
    logs: dict[int, int] = {}
    for path in directory.glob(f"*{LOG_SUFFIX}"):
        try:
            logs[int(path.name[: -len(LOG_SUFFIX)])] = path.stat().st_size
        except ValueError:
            logger.warning("ignoring stray file %s in the ledger directory", path)
    return logs


class LogIds:
    """Hands out log ids (the flusher's and the compactor's writers share one sequence)."""

    def __init__(self, next_id: int) -> None:
        self._next_id = next_id

    def take(self) -> int:
        log_id = self._next_id
        self._next_id += 1
        return log_id


class EntryLogWriter:
    """Appends records to its current log and rotates past ``size_limit`` bytes.

    ``sizes`` is shared with the storage: it learns each log's size as records are appended.
    Nothing written is durable before ``sync``; every ``sync_every`` bytes written (0: never)
    the current log is fdatasynced on the way, so that a journal sharing the disk never waits
    for more than that much of it (see ``BookieConfig.flush_entry_log_bytes``).
    """

    def __init__(self, directory: Path, size_limit: int, ids: LogIds,
                 sizes: dict[int, int], sync_every: int = 0) -> None:
        self._directory = directory
        self._size_limit = size_limit
        self._sync_every = sync_every
        self._written_since_sync = 0
        self._ids = ids
        self._sizes = sizes
        self.current_log_id = -1
        self._fd = -1
        self._size = 0
        #: Bytes appended but not written yet: parts in _pending, or (the native path) the
        #: first _buffered bytes of _buffer, never both.
        self._pending: list[bytes | bytearray] = []
        self._pending_bytes = 0
        self._buffer = bytearray(_WRITE_CHUNK if _pack_records is not None else 0)
        self._buffered = 0
        #: Descriptors written since the last sync (rotated-out logs are closed after it).
        self._unsynced: dict[int, int] = {}
        self._created_log = False

    def append_records(self, ledger_id: int, first_entry_id: int, entries: list[bytes], crcs: array,
                       pause: GiveWay | None = None) -> tuple[array, collections.Counter[int]]:
        """Append consecutive entries of a ledger as records, with their CRCs as the journal
        computed them (an array('I')); returns their index words (see ``encode_runs``) and the
        record bytes added per log.

        A checkpoint writes hundreds of thousands of records while the event loop shares the
        interpreter with it, so nothing goes record by record in Python: the native packer
        builds each chunk of up to ``_WRITE_CHUNK`` bytes in the writer's buffer with the
        interpreter released; the Python path takes a few list passes per chunk. ``pause``
        (see give_way.py) runs after each chunk is written (the write itself not counted) and
        between steps of the Python passes over the whole run."""
        if _pack_records is None:
            runs = self._append_in_passes(ledger_id, first_entry_id, entries, crcs, pause)
            return encode_runs(runs, entries, pause)
        words = array("Q")
        live: collections.Counter[int] = collections.Counter()
        start = 0
        while start < len(entries):
            record = HEADER_SIZE + len(entries[start])
            if self._pending or self._buffered + record > len(self._buffer):
                self._write_pending()
            room = self._room_for(record)
            into = self._buffer if record <= len(self._buffer) else bytearray(record)   # (one huge entry)
            at = self._buffered if into is self._buffer else 0
            stop, end, chunk_words = _pack_records(entries, crcs, start, room, ledger_id, first_entry_id,
                                                   location_tag(self.current_log_id), self._size, into, at)
            words.frombytes(chunk_words)
            live[self.current_log_id] += end - at
            if into is self._buffer:
                self._buffered = end
            else:
                self._pending.append(into)
            self._chunk_added(end - at, stop < len(entries), pause)
            start = stop
        return words, live

    def _append_in_passes(self, ledger_id: int, first_entry_id: int, entries: list[bytes], crcs: array,
                          pause: GiveWay | None) -> list[tuple[int, array]]:
        """append_records in Python; returns the runs the records went to: a log id and the
        offsets there of the next ``len(offsets)`` records (usually one run). Offsets live in
        arrays: a list of ints for a whole cache would briefly cost more memory than the
        records' headers."""
        pack = RECORD_HEADER.pack
        record_ends = _record_ends(entries, pause)
        runs: list[tuple[int, array]] = []
        start = 0
        while start < len(entries):
            room = self._room_for(record_ends[start + 1] - record_ends[start])
            stop = max(start + 1, bisect_right(record_ends, record_ends[start] + room) - 1)
            shift = self._size - record_ends[start]
            offsets = array("Q", [shift + end for end in record_ends[start:stop]])
            chunk = entries[start:stop]
            headers = [pack(len(data), crc, ledger_id, entry_id) for data, crc, entry_id
                       in zip(chunk, crcs[start:stop], range(first_entry_id + start, first_entry_id + stop))]
            self._pending.extend(chain.from_iterable(zip(headers, chunk)))
            if runs and runs[-1][0] == self.current_log_id:
                runs[-1][1].extend(offsets)
            else:
                runs.append((self.current_log_id, offsets))
            self._chunk_added(record_ends[stop] - record_ends[start], stop < len(entries), pause)
            start = stop
        return runs

    def _room_for(self, first_record: int) -> int:
        """Rotate if the next record does not fit the current log; the bytes of records the
        next chunk may take."""
        if self._fd < 0 or (self._size > 0 and self._size + first_record > self._size_limit):
            self._rotate()
        return min(self._size_limit - self._size, _WRITE_CHUNK - self._pending_bytes)

    def _chunk_added(self, chunk_bytes: int, more: bool, pause: GiveWay | None) -> None:
        """Count a chunk just queued; write it once enough is pending or more follows."""
        self._pending_bytes += chunk_bytes
        self._size += chunk_bytes
        self._sizes[self.current_log_id] = self._size
        if self._pending_bytes >= _WRITE_CHUNK or more:
            if pause is None:
                self._write_chunk()
            else:
                pause.released(self._write_chunk)
                pause()

    def append_record(self, header: bytes, data: bytes | memoryview) -> int:
        """Append one record (compaction copies them so); returns its offset in the current log."""
        record_size = HEADER_SIZE + len(data)
        self._room_for(record_size)
        if self._buffered:
            self._write_pending()
        offset = self._size
        self._pending += (header, data)
        self._chunk_added(record_size, False, None)
        return offset

    def sync(self) -> None:
        """Make everything appended so far durable (data, and new logs' directory entries)."""
        self._write_pending()
        for log_id, fd in list(self._unsynced.items()):
            os.fdatasync(fd)
            if log_id != self.current_log_id:
                os.close(fd)
        self._unsynced = {self.current_log_id: self._fd} if self._fd >= 0 else {}
        self._written_since_sync = 0
        if self._created_log:
            fsync_directory(self._directory)
            self._created_log = False

    def close(self) -> None:
        """Sync and close the current log; the next append starts a new one."""
        self.sync()
        if self._fd >= 0:
            os.close(self._fd)
        self._fd = -1
        self._unsynced = {}
        self.current_log_id = -1

    def _rotate(self) -> None:
        self._write_pending()
        if self._fd >= 0:
            self._unsynced[self.current_log_id] = self._fd
        self.current_log_id = self._ids.take()
        path = self._directory / entry_log_name(self.current_log_id)
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        self._unsynced[self.current_log_id] = self._fd
        self._size = 0
        self._written_since_sync = 0
        self._sizes[self.current_log_id] = 0
        self._created_log = True
        logger.debug("entry log now writing %s", path)

    def _write_pending(self) -> None:
        if not self._pending_bytes:
            return
        with memoryview(self._buffer) as buffer:
            pwrite_all(self._fd, [*self._pending, buffer[:self._buffered]], self._size - self._pending_bytes)
        self._written_since_sync += self._pending_bytes
        self._pending = []
        self._pending_bytes = 0
        self._buffered = 0

    def _write_chunk(self) -> None:
        """Write what is pending, and sync the log if ``sync_every`` bytes went unsynced."""
        self._write_pending()
        if 0 < self._sync_every <= self._written_since_sync:
            os.fdatasync(self._fd)
            self._written_since_sync = 0


def open_log(directory: Path, log_id: int) -> int:
    try:
        return os.open(directory / entry_log_name(log_id), os.O_RDONLY)
    except FileNotFoundError:
        raise EntryLogGoneError(f"entry log {log_id} is gone") from None


def read_record(fd: int, ledger_id: int, entry_id: int, offset: int, length: int) -> bytes:
    """The whole verified record (header + data) of one entry."""
    size = HEADER_SIZE + length
    record = os.pread(fd, size, offset)
    if len(record) != size:
        raise EntryCorruptedError(f"entry {ledger_id}:{entry_id}: short read")
    _check_record(record, ledger_id, entry_id, length)
    return record


def read_run(fd: int, ledger_id: int, first_entry_id: int, offset: int, lengths: list[int]
             ) -> list[bytes]:
    """Verified data of consecutive entries whose records lie back to back from ``offset``,
    fetched with one read."""
    size = sum(lengths) + HEADER_SIZE * len(lengths)
    buffer = _run_buffer(size)
    if buffer is None:
        run = memoryview(os.pread(fd, size, offset))
        got = len(run)
    else:
        run = buffer[:size]
        got = os.preadv(fd, [run], offset)
    entries: list[bytes] = []
    with run:
        if got != size:
            raise EntryCorruptedError(f"entries {ledger_id}:{first_entry_id}..: short read")
        start = 0
        for entry_id, length in enumerate(lengths, start=first_entry_id):
            end = start + HEADER_SIZE + length
            _check_record(run[start:end], ledger_id, entry_id, length)
            entries.append(bytes(run[start + HEADER_SIZE:end]))
            start = end
    return entries


def _run_buffer(size: int) -> memoryview | None:
    """The reading thread's own buffer for a run of ``size`` bytes (None past RUN_BUFFER_MAX).
    A fresh buffer per run is faulted in page by page (once per 4 KiB of every catch-up read);
    an anonymous map is page-aligned, where a bytearray's 16-byte alignment makes the kernel's
    copy into it several times slower on this machine."""
    if size > RUN_BUFFER_MAX:
        return None
    buffer = getattr(_run_buffers, "view", None)
    if buffer is None or len(buffer) < size:
        capacity = max(size, len(buffer) * 2 if buffer is not None else 0, mmap.PAGESIZE)
        buffer = _run_buffers.view = memoryview(mmap.mmap(-1, min(capacity, RUN_BUFFER_MAX)))
    return buffer


def _check_record(record: bytes | memoryview, ledger_id: int, entry_id: int, length: int) -> None:
    stored_length, _crc, stored_ledger, stored_entry = RECORD_HEADER.unpack_from(record)
    if (stored_length, stored_ledger, stored_entry) != (length, ledger_id, entry_id) \
            or not record_crc_ok(record):
        raise EntryCorruptedError(f"entry {ledger_id}:{entry_id}: header or CRC mismatch")


def remove_logs(directory: Path, log_ids: Iterable[int]) -> None:
    """Unlink logs (nothing may point at them any more) and make the removal durable."""
    removed = False
    for log_id in log_ids:
        try:
            (directory / entry_log_name(log_id)).unlink()
            removed = True
            logger.info("removed entry log %d", log_id)
        except FileNotFoundError:
            pass
    if removed:
        fsync_directory(directory)


def _record_ends(entries: Sequence[bytes], pause: Callable[[], None] | None) -> array:
    """Where each record ends, counted from where the first starts (0 first): built a step
    at a time with ``pause`` between, as one pass over a full cache held the interpreter for
    ~15 ms."""
    ends = array("Q", [0])
    for low in range(0, len(entries), STEP_ENTRIES):
        ends[-1:] = array("Q", accumulate((HEADER_SIZE + len(data) for data in entries[low:low + STEP_ENTRIES]),
                                          initial=ends[-1]))
        if pause is not None:
            pause()
    return ends
