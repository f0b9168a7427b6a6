"""The embedded Bookie: stores entries of many ledgers durably and serves them back.

An add is durable once the journal's group commit fsynced it; its completion (on the event
loop) puts the entry in the write cache and acknowledges it. Checkpoints move the cache into
entry logs off the add path (see checkpoint.py), so start-up reads the index and replays only
the journal written since the last checkpoint. Every public method runs on the event loop;
disk work runs on the journal writer thread, the storage thread or a small read pool.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from array import array
from pathlib import Path
from typing import Iterable

from .checkpoint import Checkpointer
from .config import BookieConfig
from .entry_log import EntryLogGoneError
from .errors import BookieClosedError, LedgerFencedError, NoSuchLedgerError
from .garbage_collector import GarbageCollector
from .journal import (AddCallback, JournalItem, JournalWriter, record_crc,
                      recover_journal, trim_journal)
from .last_log_mark import LastLogMark, read_mark, write_mark
from .ledger_index import EntryLocation
from .ledger_storage import EntryLogStorage

logger = logging.getLogger(__name__)


class Bookie:
    """Durable, fenceable storage of ledger entries on one machine."""

    def __init__(self, journal_dir: Path, config: BookieConfig, loop: asyncio.AbstractEventLoop,
                 storage: EntryLogStorage, collector: GarbageCollector,
                 start_mark: LastLogMark) -> None:
        self._config = config
        self._loop = loop
        self._storage = storage
        self._reads = concurrent.futures.ThreadPoolExecutor(
            max_workers=config.read_threads, thread_name_prefix="bookie-read")
        self._journal = JournalWriter(journal_dir, config, start_mark.file_id, loop,
                                      self._on_group_committed)
        #: Where the last completed add ends in the journal: what a checkpoint's mark covers.
        self._journal_end = start_mark
        self.collector = collector
        self.checkpointer = Checkpointer(journal_dir, config, loop, storage, collector,
                                         lambda: self._journal_end, start_mark)
        self._fenced: set[int] = set()
        self._deleted: set[int] = set()
        self._closed = False
        #: Completed adds whose acknowledgement waits for the write cache to be flushed.
        self._held: list[tuple[JournalItem, BaseException | None]] = []
        self._releasing: asyncio.Task | None = None
        #: Adds held so far (DbLedgerStorage's throttled write requests), for metrics.
        self.throttled_adds = 0

    @classmethod
    async def start(cls, directory: Path, config: BookieConfig, live_ledgers: Iterable[int]) -> Bookie:
        """Load the index, replay the journal from the mark, checkpoint, start writing.
        The journal lives in directory/journal, entry logs and the index in directory/ledgers."""
        loop = asyncio.get_running_loop()
        journal_dir = directory / "journal"
        journal_dir.mkdir(parents=True, exist_ok=True)
        storage = EntryLogStorage(directory / "ledgers", config.entry_log_size_limit, config.flush_entry_log_bytes)
        collector = GarbageCollector(storage, config)
        live = set(live_ledgers)
        start_mark = await loop.run_in_executor(None, recover, journal_dir, config, storage, live)
        bookie = cls(journal_dir, config, loop, storage, collector, start_mark)
        await loop.run_in_executor(None, bookie._journal.start)
        bookie.checkpointer.start()
        logger.info("bookie started in %s", directory)
        return bookie

    @property
    def journal(self) -> JournalWriter:
        return self._journal

    def add_entries(self, ledger_id: int, first_entry_id: int, entries: list[bytes], on_done: AddCallback) -> None:
        """Queue a run of consecutive entries; on_done(last entry id, None) runs on the loop
        once all of them are durable (they are committed in one group).

        Queueing is synchronous, so entries are stored (and acknowledged) in call order.
        """
        if ledger_id in self._fenced:
            raise LedgerFencedError(f"ledger {ledger_id} is fenced")
        self._journal.enqueue(JournalItem(ledger_id, first_entry_id, entries, on_done))

    async def fence(self, ledger_id: int) -> int:
        """Refuse further adds to the ledger; returns its last durable entry id once every
        add queued before the fence has completed."""
        self._fenced.add(ledger_id)
        await self._barrier()
        return self._storage.last_entry_id(ledger_id)

    def last_entry_id(self, ledger_id: int) -> int:
        return self._storage.last_entry_id(ledger_id)

    def ledger_size(self, ledger_id: int) -> int:
        return self._storage.ledger_size(ledger_id)

    async def read_entries(self, ledger_id: int, first: int, last: int) -> list[bytes]:
        """Entries first..last (inclusive) of a ledger, as stored.

        Cached entries are answered on the loop; others are read on the read pool. A log that
        compaction removed between lookup and read makes the lookup run again."""
        for attempt in range(2):
            if self._closed:
                raise BookieClosedError("bookie is closed")
            found = self._storage.lookup(ledger_id, first, last)
            if not any(isinstance(item, EntryLocation) for item in found):
                return found  # type: ignore[return-value]
            try:
                return await self._loop.run_in_executor(
                    self._reads, self._storage.read, ledger_id, first, found)
            except EntryLogGoneError:
                if attempt or ledger_id in self._deleted:
                    raise NoSuchLedgerError(f"ledger {ledger_id}: its entries are gone") from None
        raise AssertionError("unreachable")

    async def delete_ledger(self, ledger_id: int) -> None:
        """Forget the ledger's entries; entry logs left without live data go at once."""
        self._fenced.add(ledger_id)
        self._deleted.add(ledger_id)
        self._storage.delete_ledger(ledger_id)
        await self.checkpointer.ledger_deleted(ledger_id)

    async def close(self, final_checkpoint: bool = True) -> None:
        """Commit what is queued, checkpoint and stop. Without the final checkpoint the disk is
        left as a kill -9 after the last commit would leave it (for crash tests)."""
        if self._closed:
            return
        self._closed = True
        self._journal.hand_over()
        await self._loop.run_in_executor(None, self._journal.stop)
        await self.checkpointer.close(final_checkpoint)
        self._reads.shutdown(wait=False)
        logger.info("bookie closed")

    # ---- internals -----------------------------------------------------------------------

    def _barrier(self) -> asyncio.Future[int]:
        future: asyncio.Future[int] = self._loop.create_future()
        self._journal.enqueue(JournalItem(-1, -1, None, future_callback(future)))
        return future

    def _on_group_committed(self, group: list[JournalItem], error: BaseException | None) -> None:
        """Runs on the loop once per group: cache the entries, then report the runs in order."""
        add = self._storage.add
        last = None
        for item in group:
            if error is None and item.entries is not None:
                if item.ledger_id not in self._deleted:
                    add(item.ledger_id, item.first_entry_id, item.entries, item.crcs)
                last = item
        if last is not None:   # one mark per group: where its last add ends
            self._journal_end = LastLogMark(last.file_id, last.end)
        cache_full = self._storage.cache_size >= self._config.write_cache_max_size
        if self._held or (cache_full and self.checkpointer.running):
            self._hold(group, error)
        else:
            _acknowledge_all(group, error)
        if cache_full:
            self.checkpointer.request_early_checkpoint()

    def _hold(self, group: list[JournalItem], error: BaseException | None) -> None:
        """The write cache is full again while the last one is still being flushed: adds are
        acknowledged once it is flushed too, so writers wait instead of the cache growing
        without bound (as BookKeeper throttles adds on a full write cache)."""
        self._held.extend((item, error) for item in group)
        self.throttled_adds += sum(len(item.entries) for item in group if item.entries is not None)
        if self._releasing is None:
            self._releasing = self._loop.create_task(self._release_after_flush())

    async def _release_after_flush(self) -> None:
        try:
            await self.checkpointer.checkpoint()   # after the running one: the full cache goes too
        except Exception:
            if not self._closed:
                logger.exception("checkpoint for held adds failed; acknowledging them anyway")
        finally:
            self._releasing = None
            held, self._held = self._held, []
            for item, error in held:
                _acknowledge_all([item], error)


def _acknowledge_all(items: list[JournalItem], error: BaseException | None) -> None:
    """Call each run's callback; one that raises is logged and the rest still run (one try
    block around the loop, entered again after a failure: a call per run cost more)."""
    index = 0
    while index < len(items):
        try:
            for index in range(index, len(items)):
                item = items[index]
                item.on_done(item.last_entry_id, error)
            return
        except Exception:
            logger.exception("add callback failed for %d:%d", items[index].ledger_id, items[index].last_entry_id)
            index += 1


def recover(journal_dir: Path, config: BookieConfig, storage: EntryLogStorage,
            live: set[int]) -> LastLogMark:
    """Start-up (blocking): load the index, replay the journal from the mark into the entry
    logs, checkpoint at the start of the next journal file. (Logs nothing points at go with
    the first garbage collection, which the checkpointer runs at once.)"""
    storage.load(live)
    mark = read_mark(storage.directory)
    trim_journal(journal_dir, mark.file_id)

    def replay(ledger_id: int, entry_id: int, data: memoryview) -> None:
        if ledger_id in live:
            storage.add(ledger_id, entry_id, [bytes(data)], array("I", [record_crc(ledger_id, entry_id, data)]))
            if storage.cache_size >= config.write_cache_max_size:
                storage.flush_all()

    file_ids = recover_journal(journal_dir, replay, mark.file_id, mark.offset)
    storage.flush_all()
    start_mark = LastLogMark(max(file_ids[-1] + 1 if file_ids else 0, mark.file_id + 1), 0)
    write_mark(storage.directory, start_mark)
    trim_journal(journal_dir, start_mark.file_id)
    return start_mark


def future_callback(future: asyncio.Future[int]) -> AddCallback:
    """An AddCallback that settles ``future`` (unless it was cancelled meanwhile)."""

    def settle(entry_id: int, error: BaseException | None) -> None:
        if future.done():
            return
        if error is None:
            future.set_result(entry_id)
        else:
            future.set_exception(error)

    return settle
