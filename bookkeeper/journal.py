"""The bookie's journal: append-only files of entry records, written with group commit.

Record layout (big-endian)::

    [u32 data length][u32 crc32c][u64 ledger id][u64 entry id][data]

The CRC covers ledger id, entry id and data, so a torn or zero-filled tail fails the check and
is cut on recovery. One writer thread owns the open file: it takes everything queued, waits at
most ``max_group_wait_ms`` for company (or until ``buffered_writes_threshold`` bytes), writes
the group with one call, fsyncs once, and hands the whole group back to the event loop with a
single ``call_soon_threadsafe``. It waits for company only when the last group had plenty
(``COMPANY_WORTH_WAITING`` adds): a few writers (a batching producer with a few batches in
flight) would otherwise wait the whole time on every round trip for little or nobody, while
adds that arrive during an fsync form the next group anyway. Files rotate past
``journal_max_file_size``; a group never straddles two files, and a new file's directory entry
is fsynced before anything in it is acknowledged.

A failed write or fsync (disk full, I/O error) fails that group's adds, not the journal: the
next group goes to a new file (recovery cuts the failed file's torn tail and carries on with
the next), so writing resumes once space returns. A ledger that lost an add refuses every
later add, so its entries stay a contiguous prefix; its writer rolls over to a new ledger.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import logging
import mmap
import os
import struct
import threading
import time
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from native import crc32c, extension

from .config import BookieConfig
from .errors import BookieClosedError, BookieIOError
from .sync_latency import SyncLatency

_records = extension("bookkeeper._records")   # the optional native framer (_records.c)
_frame_run = _records.frame_run if _records is not None and _records.available() else None

logger = logging.getLogger(__name__)

RECORD_HEADER = struct.Struct(">IIQQ")
HEADER_SIZE = RECORD_HEADER.size
_ID_FIELDS = struct.Struct(">QQ")
JOURNAL_SUFFIX = ".journal"
_PAGE = 4096
#: Adds in a group that make waiting for company worth it for the next one. One batching
#: producer's groups hold 1-3 batches: with a wait after groups of 2 or more, its batched rate
#: was 5% lower (5 rounds A/B, 1M messages); unbatched groups hold tens of adds at any rate.
COMPANY_WORTH_WAITING = 8
#: Buffers one pwritev takes at most.
IOV_MAX = os.sysconf("SC_IOV_MAX")
_DROP_STEP = 1024 * 1024


def journal_file_name(file_id: int) -> str:
    return f"{file_id:010d}{JOURNAL_SUFFIX}"


def record_crc(ledger_id: int, entry_id: int, data: bytes | memoryview) -> int:
    """The record's CRC32C: over the ids, then the data."""
    return crc32c(data, crc32c(_ID_FIELDS.pack(ledger_id, entry_id)))


def frame_run(ledger_id: int, first_entry_id: int, entries: list[bytes], parts: list[bytes]) -> tuple[bytes, int]:
    """Append each entry's record header, then the entry, to ``parts``; returns the records'
    CRCs (native u32s) and their total size (what bookkeeper._records.frame_run does)."""
    crcs = array("I")
    size = 0
    for entry_id, data in enumerate(entries, first_entry_id):
        crc = record_crc(ledger_id, entry_id, data)
        crcs.append(crc)
        parts += (RECORD_HEADER.pack(len(data), crc, ledger_id, entry_id), data)
        size += HEADER_SIZE + len(data)
    return crcs.tobytes(), size


def record_crc_ok(record: memoryview | bytes) -> bool:
    """True when a whole record (header + data) carries a matching CRC."""
    crc = struct.unpack_from(">I", record, 4)[0]
    with memoryview(record) as view:
        return crc32c(view[8:]) == crc


def fsync_directory(path: Path) -> None:
    """Make file creations, renames and removals in ``path`` durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def has_sync_filesystem() -> bool:
    return _syncfs() is not None


def sync_filesystem(path: Path) -> None:
    """syncfs(2): make every file written on the filesystem of ``path`` durable in one call
    (Linux; callers ask has_sync_filesystem first)."""
    import ctypes
    syncfs = _syncfs()
    assert syncfs is not None
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        if syncfs(fd) != 0:
            error = ctypes.get_errno()
            raise OSError(error, f"syncfs {path}: {os.strerror(error)}")
    finally:
        os.close(fd)


@functools.cache
def _syncfs() -> Callable[[int], int] | None:
    import ctypes   # here: a broker's start needs none of it
    try:
        return ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):   # not Linux
        return None


#: Told on the event loop how a run of adds ended: (its last entry id, None) once all of it
#: is durable, or (its last entry id, error).
AddCallback = Callable[[int, BaseException | None], None]


@dataclass(slots=True, eq=False)
class JournalItem:
    """A run of consecutive adds to one ledger, queued at once and so committed in one group
    (or, with ``entries`` None, a barrier that completes in queue order)."""

    ledger_id: int
    first_entry_id: int
    entries: list[bytes] | None
    on_done: AddCallback
    #: The records' CRCs as the journal wrote them; the entry log reuses them.
    crcs: array = field(default_factory=lambda: array("I"))
    #: Where the run's last record ends: journal file id and offset.
    file_id: int = -1
    end: int = -1

    @property
    def last_entry_id(self) -> int:
        return self.first_entry_id + len(self.entries) - 1 if self.entries is not None else self.first_entry_id


#: Called on the event loop with a committed group (in queue order) and the failure, if any.
GroupCallback = Callable[[list[JournalItem], BaseException | None], None]
#: Called during recovery for every valid record: (ledger, entry, data). The data view is
#: only valid during the call.
RecordCallback = Callable[[int, int, memoryview], None]


def scan_journal_file(path: Path, on_record: RecordCallback, start: int = 0) -> tuple[int, int]:
    """Feed every valid record of one file from offset ``start`` to ``on_record``.

    Returns (valid length, file size): scanning stops at the first short or corrupt record.
    """
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size <= start:
            return size, size
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            offset = _scan_buffer(mm, size, start, on_record)
    return offset, size


def _scan_buffer(mm: mmap.mmap, size: int, offset: int, on_record: RecordCallback) -> int:
    unpack = RECORD_HEADER.unpack_from
    with memoryview(mm) as view:
        while size - offset >= HEADER_SIZE:
            length, crc, ledger_id, entry_id = unpack(view, offset)
            end = offset + HEADER_SIZE + length
            if end > size or crc32c(view[offset + 8 : end]) != crc:
                break
            with view[offset + HEADER_SIZE : end] as data:
                on_record(ledger_id, entry_id, data)
            offset = end
    return offset


def list_journal_files(journal_dir: Path) -> list[int]:
    ids = []
    for path in journal_dir.glob(f"*{JOURNAL_SUFFIX}"):
        try:
            ids.append(int(path.name[: -len(JOURNAL_SUFFIX)]))
        except ValueError:
            logger.warning("ignoring stray file %s in the journal directory", path)
    return sorted(ids)


def trim_journal(journal_dir: Path, before_file_id: int) -> None:
    """Delete the journal files wholly before a checkpoint's mark."""
    removed = False
    for file_id in list_journal_files(journal_dir):
        if file_id >= before_file_id:
            break
        (journal_dir / journal_file_name(file_id)).unlink(missing_ok=True)
        removed = True
        logger.debug("trimmed journal file %d", file_id)
    if removed:
        fsync_directory(journal_dir)


def recover_journal(journal_dir: Path, on_record: RecordCallback,
                    start_file_id: int = 0, start_offset: int = 0) -> list[int]:
    """Replay the journal in order from a mark, cutting each file's invalid tail.

    Files before ``start_file_id`` are skipped (trim_journal deletes them), and the mark's own
    file is read from ``start_offset``. A tail of zeros is preallocated space (normal after a kill). Anything else at the end of
    the newest file is a torn group write, cut with a warning. Anything else inside an older
    file (which was fsynced before rotation, so the disk lost data) ends indexing of that file;
    it is logged and the file left untouched. Returns the ids of the files found, oldest first.
    """
    file_ids = [file_id for file_id in list_journal_files(journal_dir) if file_id >= start_file_id]
    for position, file_id in enumerate(file_ids):
        path = journal_dir / journal_file_name(file_id)
        start = start_offset if file_id == start_file_id else 0
        valid, size = scan_journal_file(path, on_record, start)
        if valid == size:
            continue
        if _only_zeros(path, valid):
            logger.debug("journal %s: cutting %d bytes of preallocated space", path, size - valid)
        elif position == len(file_ids) - 1:
            logger.warning("journal %s: torn tail at offset %d of %d, truncating", path, valid, size)
        else:
            logger.error("journal %s: corrupt record at offset %d of %d; later records in this "
                         "file are ignored", path, valid, size)
            continue
        with open(path, "r+b") as f:
            f.truncate(valid)
            os.fsync(f.fileno())
    return file_ids


def _only_zeros(path: Path, start: int) -> bool:
    with open(path, "rb") as f:
        f.seek(start)
        while chunk := f.read(1 << 20):
            if chunk.count(0) != len(chunk):
                return False
    return True


class JournalWriter:
    """The single writer thread: group commit into rotating journal files."""

    def __init__(self, directory: Path, config: BookieConfig, first_file_id: int,
                 loop: asyncio.AbstractEventLoop, on_group_committed: GroupCallback) -> None:
        self._directory = directory
        self._config = config
        self._loop = loop
        self._on_group_committed = on_group_committed
        self._cond = threading.Condition()
        self._queue: collections.deque[JournalItem] = collections.deque()
        #: Adds queued on the loop thread during this loop iteration (see enqueue()).
        self._intake: list[JournalItem] = []
        self._intake_adds = 0
        self._intake_bytes = 0
        self._queued_adds = 0
        self._queued_bytes = 0
        #: When the oldest queued add arrived: a group waits for company only until it has
        #: waited max_group_wait_ms (adds that queued up during the last fsync go at once).
        self._oldest_enqueued_at = 0.0
        #: Whether the last group had plenty of adds: company is likely, worth a wait.
        self._company_expected = False
        self._writer_idle = False
        self._stopping = False
        #: Ledgers that lost an add (writer thread only): their later adds fail too.
        self._failed_ledgers: set[int] = set()
        self._needs_new_file = False
        self._fd = -1
        self._file_size = 0
        #: Bytes of the current file already zero-filled ahead of the writes: overwriting
        #: allocated blocks makes each fdatasync cheaper than growing the file would.
        self._allocated = 0
        #: The zeros of one slice, kept: a fresh buffer per slice was fresh memory that every
        #: pwrite faulted in (a quarter of the broker's page faults under batched load).
        self._zeros = bytes(max(0, min(config.journal_preallocation_size, config.journal_max_file_size)))
        #: Where the synced pages already dropped from the page cache end.
        self._dropped = 0
        self.current_file_id = first_file_id - 1
        #: fsyncs issued and groups committed, for tests and metrics.
        self.syncs = 0
        self.groups = 0
        self.sync_latency = SyncLatency()
        self._thread = threading.Thread(target=self._run, name="bookie-journal", daemon=True)

    def start(self) -> None:
        self._open_next_file()
        self._thread.start()

    def enqueue(self, item: JournalItem) -> None:
        """Queue an add (called on the loop thread); on_done is called after the fsync.

        Adds gather on the loop side and reach the writer once per loop iteration, under one
        lock acquisition: a lock (and maybe a thread wake-up) per add cost more than the add."""
        if self._stopping:
            raise BookieClosedError("journal is closed")
        self._intake.append(item)
        if item.entries is not None:
            self._intake_adds += len(item.entries)
            self._intake_bytes += HEADER_SIZE * len(item.entries) + sum(map(len, item.entries))
        if len(self._intake) == 1:
            self._loop.call_soon(self.hand_over)

    def hand_over(self) -> None:
        """Move the adds queued on the loop to the writer (on the loop thread; also called
        before stop() so nothing queued is left behind)."""
        items, self._intake = self._intake, []
        size, self._intake_bytes = self._intake_bytes, 0
        adds, self._intake_adds = self._intake_adds, 0
        if not items:
            return
        with self._cond:
            if not self._stopping:
                if not self._queue:
                    self._oldest_enqueued_at = time.monotonic()
                self._queue.extend(items)
                self._queued_adds += adds
                self._queued_bytes += size
                if self._writer_idle or self._queued_bytes >= self._config.buffered_writes_threshold:
                    self._cond.notify()
                return
        for item in items:   # stop() came first: these adds will never be written
            item.on_done(item.last_entry_id, BookieClosedError("journal is closed"))

    def stop(self) -> None:
        """Commit what is queued, then end the thread (blocking: call from an executor)."""
        with self._cond:
            self._stopping = True
            self._cond.notify()
        if self._thread.is_alive():
            self._thread.join()
        self._close_file()

    # ---- writer thread -------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            group, group_bytes = self._take_group()
            if not group:
                return
            if self._failed_ledgers:   # (two passes over every group otherwise)
                refused = [item for item in group if item.ledger_id in self._failed_ledgers]
                if refused:
                    group = [item for item in group if item.ledger_id not in self._failed_ledgers]
                    self._complete(refused, BookieIOError("an earlier add to this ledger failed"))
            self._complete(group, self._write_or_fail(group, group_bytes))

    def _write_or_fail(self, group: list[JournalItem], group_bytes: int) -> BookieIOError | None:
        try:
            if self._needs_new_file:
                self._open_next_file()
                self._needs_new_file = False
            self._write_group(group, group_bytes)
        except OSError as exc:
            logger.error("journal write failed (%s): failing %d adds", exc, len(group))
            self._needs_new_file = True
            self._failed_ledgers.update(item.ledger_id for item in group if item.entries is not None)
            return BookieIOError(f"journal write failed: {exc}")
        return None

    def _complete(self, group: list[JournalItem], error: BookieIOError | None) -> None:
        if not group:
            return
        try:
            self._loop.call_soon_threadsafe(self._on_group_committed, group, error)
        except RuntimeError:  # the loop is gone: nobody is waiting any more
            logger.warning("journal: event loop closed; dropping completion of %d adds", len(group))

    def _take_group(self) -> tuple[list[JournalItem], int]:
        """Block for the first item, then gather more until the oldest has waited
        max_group_wait_ms (none after a group of one) or the group reaches
        buffered_writes_threshold bytes."""
        config = self._config
        with self._cond:
            while not self._queue:
                if self._stopping:
                    return [], 0
                self._writer_idle = True
                self._cond.wait()
                self._writer_idle = False
            wait_s = config.max_group_wait_ms / 1000.0 if self._company_expected else 0.0
            deadline = self._oldest_enqueued_at + wait_s
            while self._queued_bytes < config.buffered_writes_threshold and not self._stopping:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
            group = list(self._queue)
            self._queue.clear()
            self._company_expected = self._queued_adds >= COMPANY_WORTH_WAITING
            self._queued_adds = 0
            group_bytes = self._queued_bytes
            self._queued_bytes = 0
        return group, group_bytes

    def _write_group(self, group: list[JournalItem], group_bytes: int) -> None:
        if self._file_size > 0 and self._file_size + group_bytes > self._config.journal_max_file_size:
            self._open_next_file()
        parts: list[bytes] = []
        offset = self._file_size
        file_id = self.current_file_id
        frame = _frame_run or frame_run
        for item in group:
            if item.entries is None:
                continue
            crcs, size = frame(item.ledger_id, item.first_entry_id, item.entries, parts)
            item.crcs.frombytes(crcs)
            offset += size
            item.file_id = file_id
            item.end = offset
        if parts:
            pwrite_all(self._fd, parts, self._file_size)
            self._file_size = offset
            if offset > self._allocated:
                self._preallocate()
            if self._config.sync_data:
                started = time.monotonic()
                os.fdatasync(self._fd)
                self.sync_latency.record(time.monotonic() - started)
                self.syncs += 1
                if self._config.journal_remove_from_page_cache:
                    self._drop_synced_pages()
        self.groups += 1

    def _drop_synced_pages(self) -> None:
        """Drop whole synced pages behind the write position from the page cache, a MiB or
        more at a time (the page being written stays: a write into a dropped page would read
        it back first)."""
        end = self._file_size & ~(_PAGE - 1)
        if end - self._dropped >= _DROP_STEP:
            os.posix_fadvise(self._fd, self._dropped, end - self._dropped, os.POSIX_FADV_DONTNEED)
            self._dropped = end

    def _preallocate(self) -> None:
        """Zero-fill the next chunk past the written end (synced with the group's data)."""
        if self._zeros:
            pwrite_all(self._fd, [self._zeros], self._file_size)
            self._allocated = self._file_size + len(self._zeros)

    def _open_next_file(self) -> None:
        """The id moves on only once the file exists: while it cannot be created (the
        directory removed, say), each failed group tries the same id again."""
        self._close_file()
        path = self._directory / journal_file_name(self.current_file_id + 1)
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        self.current_file_id += 1
        self._file_size = 0
        self._allocated = 0
        self._dropped = 0
        fsync_directory(self._directory)
        logger.debug("journal now writing %s", path)

    def _close_file(self) -> None:
        """Give back the unused preallocated tail (recovery would cut it anyway) and close."""
        if self._fd < 0:
            return
        try:
            if self._allocated > self._file_size:
                os.ftruncate(self._fd, self._file_size)
        finally:
            os.close(self._fd)
            self._fd = -1


def pwrite_all(fd: int, buffers: Sequence[bytes | memoryview], offset: int) -> None:
    """Write ``buffers`` one after another from ``offset`` with pwritev, ``IOV_MAX`` a call,
    until all is written (a short write is retried from where it ended). Never joined first:
    a joined copy of a group was a fresh buffer each time, whose page faults and zeroing cost
    more than the copy itself."""
    pending = list(buffers)
    start = 0
    while start < len(pending):
        batch = pending[start:start + IOV_MAX]
        written = os.pwritev(fd, batch, offset)
        offset += written
        if written == sum(map(len, batch)):
            start += len(batch)
            continue
        for part in batch:   # a short write: skip the parts that went, cut the one it ended in
            if written < len(part):
                pending[start] = memoryview(part)[written:]
                break
            written -= len(part)
            start += 1
