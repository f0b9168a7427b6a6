"""Checkpoints and the storage thread: the bookie's work that is off the add path.

A checkpoint, on the event loop, takes the journal position up to which every completed add
sits in the write cache, and swaps the cache out; then, on the storage thread, it flushes that
cache to the entry logs and the index (fsynced), records the position as the LastLogMark
(fsynced) and deletes the journal files wholly before it. It runs every ``flushInterval`` ms,
early when the write cache passes its size, and at clean shutdown. Garbage collection runs on
the same thread every ``gcWaitTime`` ms, and right after a ledger is deleted (empty logs only).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from pathlib import Path
from typing import Awaitable, Callable

from .config import BookieConfig
from .garbage_collector import GarbageCollector
from .give_way import GiveWay
from .journal import trim_journal
from .last_log_mark import LastLogMark, write_mark
from .ledger_storage import EntryLogStorage
from .write_cache import WriteCache

logger = logging.getLogger(__name__)
#: Index files read per step before a collection, and the pause after each (a step is a few
#: ms of the interpreter: the reading takes about a fifth of it).
INDEX_FILES_PER_STEP = 100
INDEX_STEP_PAUSE_S = 0.02


class Checkpointer:
    def __init__(self, journal_dir: Path, config: BookieConfig, loop: asyncio.AbstractEventLoop,
                 storage: EntryLogStorage, collector: GarbageCollector,
                 journal_position: Callable[[], LastLogMark], last_mark: LastLogMark) -> None:
        self._journal_dir = journal_dir
        self._config = config
        self._loop = loop
        self._storage = storage
        self._collector = collector
        self._journal_position = journal_position
        self._last_mark = last_mark
        self._thread = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="bookie-storage")
        self._lock = asyncio.Lock()
        #: The mark of a checkpoint that failed: it is retried (with the cache it swapped out,
        #: if that is still unflushed) before anything newer.
        self._failed_mark: LastLogMark | None = None
        self._timers: list[asyncio.Task] = []
        self._early: set[asyncio.Task] = set()
        #: Checkpoints completed, for tests and metrics.
        self.checkpoints = 0

    def start(self) -> None:
        """Start the timers, and a first garbage collection pass (it drops what a crash left
        behind: logs of deleted ledgers, half-written compaction copies)."""
        self._timers = [
            self._loop.create_task(self._logging_failure(self.remove_empty_logs)),
            self._loop.create_task(self._every(self._config.flush_interval_ms, self.checkpoint)),
            self._loop.create_task(self._every(self._config.gc_wait_time_ms, self.collect_garbage)),
        ]

    async def checkpoint(self, give_way: bool = True) -> None:
        """Flush what completed so far, then move the mark and trim the journal; giving way
        to the event loop (give_way.py) unless nothing else runs any more (at shutdown)."""
        async with self._lock:
            if self._failed_mark is not None:
                snapshot, mark = self._storage.unflushed, self._failed_mark
            else:
                mark = self._journal_position()
                snapshot = self._storage.swap_cache()
                if snapshot is None and mark == self._last_mark:
                    return
            try:
                await self._loop.run_in_executor(self._thread, self._run, snapshot, mark, give_way)
            except OSError:
                logger.exception("checkpoint failed; the journal keeps everything meanwhile")
                self._failed_mark = mark
                return
            self._failed_mark = None
            self.checkpoints += 1

    @property
    def running(self) -> bool:
        return self._lock.locked()

    def request_early_checkpoint(self) -> None:
        """The write cache is over its size: checkpoint now, unless one is running."""
        if self._lock.locked():
            return
        task = self._loop.create_task(self.checkpoint())
        self._early.add(task)
        task.add_done_callback(self._early.discard)

    async def collect_garbage(self) -> None:
        await self._read_index_files()
        await self._loop.run_in_executor(self._thread, self._collector.run)

    async def remove_empty_logs(self) -> None:
        await self._read_index_files()
        await self._loop.run_in_executor(self._thread, self._collector.remove_empty_logs)

    async def ledger_deleted(self, ledger_id: int) -> None:
        """Drop the ledger's index file and any log left without live data."""
        await self._read_index_files()
        await self._loop.run_in_executor(self._thread, self._forget_ledger, ledger_id)

    async def _read_index_files(self) -> None:
        """A collection needs every ledger's index: the files not read since start-up are read
        first, a step at a time, with checkpoints and the event loop running in between (the
        first topics used after a restart of 100,000 load as fast as later ones)."""
        index = self._storage.index
        while not await self._loop.run_in_executor(self._thread, index.read_unread, INDEX_FILES_PER_STEP):
            await asyncio.sleep(INDEX_STEP_PAUSE_S)

    async def close(self, final_checkpoint: bool) -> None:
        for timer in self._timers:
            timer.cancel()
        await asyncio.gather(*self._timers, *self._early, return_exceptions=True)
        if final_checkpoint:
            await self.checkpoint(give_way=False)
        await self._loop.run_in_executor(self._thread, self._storage.close)
        self._thread.shutdown(wait=True)

    # ---- storage thread ------------------------------------------------------------------

    def _run(self, snapshot: WriteCache | None, mark: LastLogMark, give_way: bool) -> None:
        if snapshot is not None:   # GiveWay made here: it measures this thread's CPU time
            self._storage.flush(snapshot, GiveWay() if give_way else None)
        if mark != self._last_mark:
            write_mark(self._storage.directory, mark)
            self._last_mark = mark
            trim_journal(self._journal_dir, mark.file_id)

    def _forget_ledger(self, ledger_id: int) -> None:
        self._storage.forget_deleted([ledger_id])
        self._collector.remove_empty_logs()

    async def _every(self, interval_ms: int, action: Callable[[], Awaitable[None]]) -> None:
        while True:
            await asyncio.sleep(interval_ms / 1000)
            await self._logging_failure(action)

    @staticmethod
    async def _logging_failure(action: Callable[[], Awaitable[None]]) -> None:
        try:
            await action()
        except Exception:
            logger.exception("storage task failed")
