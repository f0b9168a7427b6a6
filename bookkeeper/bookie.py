"""The embedded Bookie: stores entries of many ledgers durably and serves them back.

It ties the journal (group-committed appends), the ledger storage (index + reads) and the
per-ledger fence flags together. Every public method runs on the event loop; disk work runs
on the journal writer thread or on a small read pool, and completes loop futures.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from typing import Iterable

from .config import BookieConfig
from .errors import BookieClosedError, LedgerFencedError
from .journal import AddCallback, JournalItem, JournalWriter, recover_journal
from .ledger_storage import JournalLedgerStorage

logger = logging.getLogger(__name__)


class Bookie:
    """Durable, fenceable storage of ledger entries on one machine."""

    def __init__(self, config: BookieConfig, loop: asyncio.AbstractEventLoop,
                 storage: JournalLedgerStorage, next_file_id: int) -> None:
        self._config = config
        self._loop = loop
        self._storage = storage
        self._reads = concurrent.futures.ThreadPoolExecutor(
            max_workers=config.read_threads, thread_name_prefix="bookie-read")
        self._journal = JournalWriter(config, next_file_id, loop, self._on_group_committed)
        self._fenced: set[int] = set()
        self._deleted: set[int] = set()
        #: Files older than this have had all their records indexed (completions run in order).
        self._indexed_before_file = next_file_id
        self._reclaim_tasks: set[asyncio.Task] = set()
        self._closed = False

    @classmethod
    async def start(cls, config: BookieConfig, live_ledgers: Iterable[int]) -> Bookie:
        """Recover the journals, drop what belongs to deleted ledgers, start writing."""
        loop = asyncio.get_running_loop()
        config.journal_dir.mkdir(parents=True, exist_ok=True)
        storage = JournalLedgerStorage(config.journal_dir)

        live = set(live_ledgers)

        def index_if_live(ledger_id: int, entry_id: int, file_id: int, offset: int,
                          length: int) -> None:
            if ledger_id in live:
                storage.record(ledger_id, entry_id, file_id, offset, length)

        def recover() -> int:
            file_ids = recover_journal(config.journal_dir, index_if_live)
            for file_id in file_ids:
                storage.add_file(file_id)
            return file_ids[-1] + 1 if file_ids else 0

        next_file_id = await loop.run_in_executor(None, recover)
        bookie = cls(config, loop, storage, next_file_id)
        await loop.run_in_executor(None, bookie._journal.start)
        await bookie._reclaim_files()
        logger.info("bookie started in %s", config.journal_dir)
        return bookie

    @property
    def journal(self) -> JournalWriter:
        return self._journal

    def add_entry(self, ledger_id: int, entry_id: int, data: bytes, on_done: AddCallback) -> None:
        """Queue an entry; on_done(entry_id, None) runs on the loop once it is durable.

        Queueing is synchronous, so entries are stored (and acknowledged) in call order.
        """
        if ledger_id in self._fenced:
            raise LedgerFencedError(f"ledger {ledger_id} is fenced")
        self._journal.enqueue(JournalItem(ledger_id, entry_id, data, on_done))

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
        """Entries first..last (inclusive) of a ledger, as stored."""
        if self._closed:
            raise BookieClosedError("bookie is closed")
        locations = self._storage.locate(ledger_id, first, last)
        return await self._loop.run_in_executor(
            self._reads, self._storage.read, ledger_id, first, locations)

    async def delete_ledger(self, ledger_id: int) -> None:
        """Forget the ledger's entries and unlink journal files left holding nothing live."""
        self._fenced.add(ledger_id)
        self._deleted.add(ledger_id)
        self._storage.delete_ledger(ledger_id)
        await self._reclaim_files()

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        await self._loop.run_in_executor(None, self._journal.stop)
        if self._reclaim_tasks:
            await asyncio.gather(*self._reclaim_tasks, return_exceptions=True)
        self._reads.shutdown(wait=False)
        logger.info("bookie closed")

    # ---- internals -----------------------------------------------------------------------

    def _barrier(self) -> asyncio.Future[int]:
        future: asyncio.Future[int] = self._loop.create_future()
        self._journal.enqueue(JournalItem(-1, -1, None, future_callback(future)))
        return future

    def _on_group_committed(self, group: list[JournalItem], error: BaseException | None) -> None:
        """Runs on the loop once per group: index the records, then report them in order."""
        record = self._storage.record
        newest_file = self._indexed_before_file
        for item in group:
            if error is None and item.data is not None:
                if item.ledger_id not in self._deleted:
                    record(item.ledger_id, item.entry_id, item.file_id, item.offset, len(item.data))
                newest_file = item.file_id
            try:
                item.on_done(item.entry_id, error)
            except Exception:
                logger.exception("add callback failed for %d:%d", item.ledger_id, item.entry_id)
        if newest_file > self._indexed_before_file:
            self._indexed_before_file = newest_file
            task = self._loop.create_task(self._reclaim_files())
            self._reclaim_tasks.add(task)
            task.add_done_callback(self._reclaim_tasks.discard)

    async def _reclaim_files(self) -> None:
        files = self._storage.take_reclaimable_files(self._indexed_before_file)
        if files:
            await self._loop.run_in_executor(None, self._storage.unlink_files, files)


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
