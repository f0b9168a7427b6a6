"""ManagedLedger: a topic's log as a sequence of bookkeeper ledgers, with named cursors.

As in Pulsar, every open seals the ledger the previous incarnation was writing (open with
recovery, which fences it and finds its last durable entry) and starts a new ledger for its own
writes; ledgers that ended up empty are dropped. Writes roll over to a new ledger (rollover.py)
after max_entries_per_ledger entries or max_size_per_ledger_mb; adds arriving meanwhile queue and
go out in arrival order, but never before managedLedgerMinLedgerRolloverTimeMinutes, and a ledger
holding entries is rolled over after managedLedgerMaxLedgerRolloverTimeMinutes even when no
more come (so retention can act on an idle topic). An add resolves once its entry is durable,
then wakes the cursors waiting in read_entries_or_wait. Sealed ledgers entirely behind the
slowest durable cursor's persisted mark-delete (or any sealed ledger when there is no durable
cursor) are deleted once they are beyond the retention policy (trimming.py, retention.py);
never the current one.

Metadata (the ledgers with their entry counts and sizes) is in the metadata store, see
metadata.py; the cursors are the children of the managed ledger's node.
"""

from __future__ import annotations

import asyncio
import enum
import functools
import logging
import time
from typing import Callable, Mapping

from bookkeeper.errors import BookKeeperError, MetadataBadVersionError
from bookkeeper.interfaces import LedgerClient, WriteHandle
from log_limits.repeats import RepeatLimitedLog

from .adds import AddCallback, InFlightAdds, QueuedAdd, settle
from .coalesced_task import CoalescedTask
from .compacted_view import CompactedView
from .config import PersistencePolicy, StorageConfig
from .cursor import ManagedCursorImpl
from .cursor_registry import CursorRegistry
from .entry_cache import EntryCache
from .entry_reader import EntryReader, last_index_holding, read_across
from .errors import (ManagedLedgerClosedError, ManagedLedgerFencedError, ManagedLedgerStorageError,
                     ManagedLedgerTerminatedError, MetadataStoreError)
from .held_locks import LockTable
from .interfaces import MetadataStore
from .interned import interned
from .latency import LatencyHistogram
from .ledger_list import LedgerInfo, LedgerList
from .ledger_tags import COMPACTED_LEDGER, LedgerOwner, LedgerTags
from .lost_entries import LostEntryCounts
from .metadata import CompactedLedger, ManagedLedgerMetadata, managed_ledger_path
from .position import EARLIEST, Entry, InitialPosition, Position
from .retention import RetentionPolicy
from .rollover import RolloverClock, RolloverRule, RolloverTimer, WritingLedgers
from .trimming import LedgerTrimmer

logger = logging.getLogger(__name__)
_repeats = RepeatLimitedLog(logger)   # without bookies every add fails: one line per interval
_METADATA_WRITES = LockTable()   # one metadata write at a time per managed ledger


class ManagedLedgerState(enum.Enum):
    """WRITING <-> ROLLING_OVER; LEDGER_NEEDED after a failed write or rollover (the next add
    starts a rollover); FENCED once another broker wrote the metadata; anything -> CLOSED."""

    WRITING = "writing"
    ROLLING_OVER = "rolling_over"
    LEDGER_NEEDED = "ledger_needed"
    FENCED = "fenced"
    CLOSED = "closed"


class ManagedLedgerImpl:
    """Implements interfaces.ManagedLedger."""

    #: Slots: a broker holds one per topic, and a dict of 40 attributes is not key-shared
    #: (CPython shares keys up to 30), so it costs ~1.2 KiB more a topic.
    __slots__ = ("_bookkeeper", "_cache", "_closed", "_closing", "_compacted", "_compacted_view", "_cursors",
                 "_in_flight", "_last_confirmed", "_ledgers", "_loop", "_metadata_version",
                 "_on_closed", "_path", "_queued", "_read_limit", "_reads", "_rollover_rule",
                 "_rollover_task", "_rollover_timer", "_state", "_tags", "_terminated", "_terminating",
                 "_trimming", "_writer", "_writer_bytes", "_writer_entries",
                 "_writer_info", "config", "ledger_list", "lost_entries", "name", "persistence", "retention",
                 "store", "write_latency")

    def __init__(self, name: str, config: StorageConfig, store: MetadataStore,
                 bookkeeper: LedgerClient, cache: EntryCache, tags: LedgerTags, clock: RolloverClock,
                 on_closed: Callable[[ManagedLedgerImpl], None], persistence: PersistencePolicy | None = None) -> None:
        self.name = name
        #: E/Qw/Qa of the next ledger made, and the rate of the cursors' mark-delete persists
        self.persistence = persistence or config.default_persistence
        self._tags = tags
        self.config = config
        self.store = store
        self._bookkeeper = bookkeeper
        self._cache = cache
        self._on_closed = on_closed
        self._loop = asyncio.get_running_loop()
        self._path = managed_ledger_path(name)
        self._metadata_version = -1
        self._state = ManagedLedgerState.LEDGER_NEEDED
        self._closing = False
        #: made when someone waits for the close; True once closed
        self._closed: asyncio.Future[None] | bool | None = None
        self.ledger_list = LedgerList()
        self._last_confirmed = Position(-1, -1)
        self._writer: WriteHandle | None = None
        self._writer_info = LedgerInfo(-1)   # the writer's entry in ledger_list, counted as adds complete
        self._writer_entries = 0
        self._writer_bytes = 0
        self._rollover_rule = RolloverRule(config)
        self._rollover_timer = RolloverTimer(clock, config, ManagedLedgerImpl._rollover_timer_check, self)
        self._ledgers = WritingLedgers(name, bookkeeper, tags)
        self._queued: list[QueuedAdd] | tuple[()] = ()   # a list once an add waits (memory)
        self._rollover_task: asyncio.Task | None = None
        self._reads = EntryReader(bookkeeper, cache)
        self.lost_entries = LostEntryCounts()
        self._cursors = CursorRegistry(self, store, self._path,
                                       bookkeeper if config.uses_bookkeeper_cluster else None)
        #: Where cursors stop reading when short of the last confirmed entry (set_read_limit).
        self._read_limit: Position | None = None
        self.retention = interned(RetentionPolicy(config.retention_time_minutes, config.retention_size_mb))
        self._trimming = CoalescedTask(ManagedLedgerImpl._trim_pass, self)
        self._compacted: CompactedLedger | None = None
        self._compacted_view: CompactedView | None = None
        #: Set once terminated: the last entry there will ever be (persisted in the metadata).
        self._terminated: Position | None = None
        self._terminating: asyncio.Task[Position] | None = None
        #: The latest add not yet resolved: termination waits for it (adds complete in order).
        self._in_flight = InFlightAdds()
        self.write_latency = LatencyHistogram()

    @classmethod
    async def open(cls, name: str, config: StorageConfig, store: MetadataStore,
                   bookkeeper: LedgerClient, cache: EntryCache, tags: LedgerTags, clock: RolloverClock,
                   on_closed: Callable[[ManagedLedgerImpl], None],
                   persistence: PersistencePolicy | None = None) -> ManagedLedgerImpl:
        ledger = cls(name, config, store, bookkeeper, cache, tags, clock, on_closed, persistence)
        try:
            await ledger._initialize()
        except BookKeeperError as exc:   # e.g. too few bookies for a new ledger: this layer's error
            raise ManagedLedgerStorageError(f"open failed: {exc}") from exc
        return ledger

    # ---- properties ----------------------------------------------------------------------

    @property
    def last_confirmed_entry(self) -> Position:
        return self._last_confirmed

    @property
    def readable_end(self) -> Position:
        limit, last = self._read_limit, self._last_confirmed
        return last if limit is None or limit > last else limit

    def set_read_limit(self, limit: Position | None) -> None:
        if limit != self._read_limit:
            self._read_limit = limit
            if self._cursors.waiting:
                self._cursors.wake_waiting(True)

    @property
    def closing(self) -> bool:
        """True from the moment close() begins (the factory then opens a new instance)."""
        return self._closing

    async def wait_closed(self) -> None:
        if self._closed is True:
            return
        if self._closed is None:
            self._closed = self._loop.create_future()
        await asyncio.shield(self._closed)

    @property
    def terminated(self) -> bool:
        return self._terminating is not None or self._terminated is not None

    @property
    def entries_read(self) -> int:
        return self._reads.entries_read

    @property
    def number_of_entries(self) -> int:
        return self.ledger_list.total_entries

    @property
    def total_size(self) -> int:
        return self.ledger_list.total_size

    @property
    def cursors(self) -> Mapping[str, ManagedCursorImpl]:
        return self._cursors.durable

    def ledgers_info(self) -> list[tuple[int, int, int]]:
        return [(info.ledger_id, info.entries, info.size) for info in self.ledger_list]

    def first_position(self) -> Position:
        return self.ledger_list.first_position()

    def next_position(self, position: Position) -> Position:
        return self.ledger_list.next_position(position)

    def size_after(self, position: Position) -> int:
        return self.ledger_list.size_after(position)

    def position_keeping(self, max_bytes: int) -> Position:
        return self.ledger_list.position_keeping(max_bytes)

    # ---- opening -------------------------------------------------------------------------

    async def _initialize(self) -> None:
        found = await self.store.get(self._path)
        metadata = ManagedLedgerMetadata()
        if found is not None:
            metadata = ManagedLedgerMetadata.decode(found[0])
            self._metadata_version = found[1]
        elif not self.config.embedded:
            # recorded before any ledger is made for it (see orphan_ledgers.py); the embedded
            # store sweeps orphans only while nothing is open, and needs no such record
            self._metadata_version = await self.store.put(self._path, metadata.encode(), -1)
        ledgers = metadata.ledgers
        self._compacted = metadata.compacted
        self._terminated = metadata.terminated
        for info in ledgers:
            handle = await self._ledgers.recover(info)
            if handle is not None:
                self._reads.use(info.ledger_id, handle)
        empty = {info.ledger_id for info in ledgers if not info.entries}
        self.ledger_list = LedgerList([info for info in ledgers if info.entries])
        writer = await self._ledgers.create(self.persistence)
        info = LedgerInfo(writer.ledger_id)
        self.ledger_list.append(info)
        await self.persist_metadata()
        self._install_writer(writer, info)
        self._last_confirmed = self.ledger_list.last_confirmed()
        for ledger_id in empty:
            await self._trimmer().delete(ledger_id)
        if found is not None:   # a new managed ledger has no cursors (they go before it is deleted)
            await self._cursors.load()
        logger.debug("opened managed ledger %s: ledgers %s, last confirmed %s", self.name,
                    self.ledgers_info(), self._last_confirmed)

    # ---- writing -------------------------------------------------------------------------

    async def add_entry(self, data: bytes) -> Position:
        return await self.append(data)

    def append(self, data: bytes) -> "asyncio.Future[Position]":
        future: asyncio.Future[Position] = self._loop.create_future()
        self.append_run([data], functools.partial(settle, future))
        return future

    def append_run(self, entries: list[bytes], on_done: AddCallback) -> None:
        if self._closing:
            on_done(None, ManagedLedgerClosedError(f"managed ledger {self.name} is closed"))
        elif self.terminated:
            on_done(None, ManagedLedgerTerminatedError(f"managed ledger {self.name} was terminated"))
        elif self._state is ManagedLedgerState.FENCED:
            on_done(None, ManagedLedgerFencedError(f"managed ledger {self.name} was fenced"))
        else:
            self._in_flight.count += len(entries)
            if self._state is ManagedLedgerState.WRITING:
                self._send(entries, on_done, time.monotonic())
            else:
                if not self._queued:
                    self._queued = []
                self._queued.append(QueuedAdd(entries, on_done, time.monotonic()))
                if self._state is ManagedLedgerState.LEDGER_NEEDED:
                    self._start_rollover()

    def _send(self, entries: list[bytes], on_done: AddCallback, started: float) -> None:
        """The whole run goes to the current ledger (it may pass the rollover threshold by a
        run's length, as an add crossing it does by one)."""
        writer = self._writer
        assert writer is not None
        size = sum(map(len, entries))
        on_durable = functools.partial(self._on_add_durable, self._writer_info, entries, size, on_done, started)
        try:
            writer.add_entries_with_callback(entries, on_durable)
        except BookKeeperError as exc:
            self._on_write_failed(len(entries), on_done, exc)
            return
        if not self._writer_entries:   # a ledger without entries is never rolled over: an
            self._rollover_timer.restart()   # idle topic's empty ledger keeps no timer
        self._writer_entries += len(entries)
        self._writer_bytes += size
        entries_due, size_due, at = self._rollover_rule.ask_at
        if self._writer_entries >= entries_due or self._writer_bytes >= size_due or self._loop.time() >= at:
            self._roll_over_if_due()

    def _add_completed(self, count: int, on_done: AddCallback, position: Position | None,
                       error: BaseException | None) -> None:
        self._in_flight.completed(count)
        on_done(position, error)

    def _roll_over_if_due(self) -> bool:
        if self._state is ManagedLedgerState.WRITING and \
                self._rollover_rule.due(self._writer_entries, self._writer_bytes, self._loop.time()):
            self._start_rollover()
            return True
        return False

    def _rollover_timer_check(self) -> bool:
        """The rollover timer's: roll over if due; True to ask again later."""
        return not self._closing and not self._roll_over_if_due()

    def _on_add_durable(self, info: LedgerInfo, entries: list[bytes], size: int, on_done: AddCallback,
                        started: float, last_entry_id: int, error: BaseException | None) -> None:
        count = len(entries)
        if error is not None:
            self._on_write_failed(count, on_done, error)
            return
        self.write_latency.record((time.monotonic() - started) * 1000, count)
        first_entry_id = last_entry_id - count + 1
        info.entries = last_entry_id + 1   # (an info trimmed from the list meanwhile is updated in vain)
        info.size += size
        self._last_confirmed = Position(info.ledger_id, last_entry_id)
        if self._cursors.active:   # as Pulsar: cached only for consumers keeping up
            for entry_id, data in enumerate(entries, first_entry_id):
                self._cache.add(Position(info.ledger_id, entry_id), data)
        self._add_completed(count, on_done, Position(info.ledger_id, first_entry_id), None)
        if self._cursors.waiting:
            self._cursors.wake_waiting(True)

    def _on_write_failed(self, count: int, on_done: AddCallback, error: BaseException) -> None:
        """The ledger lost a run: the next add rolls over to a new ledger. Adds queued for
        that new ledger fail too, so none of them lands ahead of the failed ones."""
        _repeats.error(str(error), "managed ledger %s: add failed: %s", self.name, error)
        self._add_completed(count, on_done, None, ManagedLedgerStorageError(f"add failed: {error}"))
        if self._state is ManagedLedgerState.WRITING:
            self._state = ManagedLedgerState.LEDGER_NEEDED
        self._fail_queued(ManagedLedgerStorageError(f"an earlier add failed: {error}"))

    def _install_writer(self, writer: WriteHandle, info: LedgerInfo) -> None:
        self._writer = writer
        self._writer_info = info
        self._reads.use(writer.ledger_id, writer)
        self._writer_entries = 0
        self._writer_bytes = 0
        self._rollover_rule.start(self._loop.time())
        self._state = ManagedLedgerState.WRITING
        self._rollover_timer.cancel()

    def _start_rollover(self) -> None:
        self._state = ManagedLedgerState.ROLLING_OVER
        self._rollover_task = self._loop.create_task(self._rollover())

    async def _rollover(self) -> None:
        """Seal the full (or failed) ledger, start the next one, send the queued adds."""
        old, self._writer = self._writer, None
        if old is not None:
            await self._ledgers.seal(old, self.ledger_list)
        try:
            writer = await self._ledgers.create(self.persistence)
        except BookKeeperError as exc:
            self._rollover_failed(exc)
            return
        info = LedgerInfo(writer.ledger_id)
        self.ledger_list.append(info)
        try:
            await self.persist_metadata()
        except ManagedLedgerStorageError as exc:
            self.ledger_list.remove({writer.ledger_id})
            await self._trimmer().delete_unrecorded(writer.ledger_id, exc)
            self._rollover_failed(exc)
            return
        self._install_writer(writer, info)
        queued, self._queued = self._queued, ()
        for index, add in enumerate(queued):
            if self._state is not ManagedLedgerState.WRITING:
                self._queued = [*queued[index:], *self._queued]
                break
            self._send(add.entries, add.on_done, add.started)
        logger.debug("managed ledger %s rolled over to ledger %d", self.name, writer.ledger_id)
        self._trimming.request()

    def _rollover_failed(self, error: BaseException) -> None:
        _repeats.error(str(error), "managed ledger %s: rollover failed: %s", self.name, error)
        if isinstance(error, ManagedLedgerFencedError):   # no later add may write here
            self._state = ManagedLedgerState.FENCED
            self._fail_queued(error)
            return
        self._state = ManagedLedgerState.LEDGER_NEEDED
        self._fail_queued(ManagedLedgerStorageError(f"no ledger to write to: {error}"))

    def _fail_queued(self, error: Exception) -> None:
        queued, self._queued = self._queued, ()
        for add in queued:
            self._add_completed(len(add.entries), add.on_done, None, error)

    async def send_last_confirmed(self) -> None:
        """Show every entry added so far to read-only views in other processes now (an explicit
        LAC to the bookies): they see an open ledger's last entry only once a later add, or
        bookkeeperExplicitLacIntervalInMills of idleness, confirms it to them."""
        if self._writer is not None and self._state is ManagedLedgerState.WRITING:
            await self._writer.write_lac()

    # ---- termination ---------------------------------------------------------------------

    async def terminate(self) -> Position:
        """Refuse every later add, let the adds in flight finish, and persist the last entry
        as the end of the ledger for good. Terminating again answers the same position."""
        self._check_open()
        if self._terminated is not None:
            return self._terminated
        if self._terminating is None:
            self._terminating = self._loop.create_task(self._terminate())
        return await asyncio.shield(self._terminating)

    async def _terminate(self) -> Position:
        try:
            await self._in_flight.drained()
            self._terminated = self._last_confirmed
            await self.persist_metadata()
        except BaseException:
            self._terminated = None
            raise
        finally:
            self._terminating = None
        logger.info("managed ledger %s terminated at %s", self.name, self._terminated)
        return self._terminated

    # ---- reading -------------------------------------------------------------------------

    async def read_entry(self, position: Position) -> Entry | None:
        info = self.ledger_list.get(position.ledger_id)
        if info is None or not 0 <= position.entry_id < info.entries:
            return None
        entries = await self.read_ledger_range(position.ledger_id, position.entry_id, position.entry_id)
        return entries[0]

    async def read_entries(self, start: Position, max_entries: int) -> list[Entry]:
        return await read_across(self.ledger_list, self._last_confirmed, self.read_ledger_range, start, max_entries)

    async def read_ledger_range(self, ledger_id: int, first: int, last: int) -> list[Entry]:
        """Entries first..last of one ledger: from the cache while it has them, then disk;
        only those before an entry that cannot be read (see EntryReader.read)."""
        return await self._reads.read(ledger_id, first, last)

    async def find_newest_matching(self, condition: Callable[[Entry], bool]) -> Position | None:
        """The newest entry meeting condition, when it holds for a prefix of the log."""

        async def holds(index: int) -> bool:
            entry = await self.read_entry(self.ledger_list.position_at(index))
            return entry is not None and condition(entry)

        last = await last_index_holding(self.ledger_list.total_entries, holds)
        return None if last is None else self.ledger_list.position_at(last)

    # ---- waiting readers -----------------------------------------------------------------

    def register_waiter(self, cursor: ManagedCursorImpl) -> None:
        """A cursor read to the end: wake_reader(more) it on the next add (or the close)."""
        self._cursors.waiting[cursor] = None

    def unregister_waiter(self, cursor: ManagedCursorImpl) -> None:
        self._cursors.stop_waiting(cursor)

    # ---- cursors -------------------------------------------------------------------------

    async def open_cursor(self, name: str, initial_position: InitialPosition) -> ManagedCursorImpl:
        self._check_open()

        def mark_delete() -> Position:
            if initial_position is InitialPosition.LATEST:
                return self._last_confirmed
            first = self.first_position()
            return Position(first.ledger_id, first.entry_id - 1)

        return await self._cursors.open(name, mark_delete)

    def new_non_durable_cursor(self, name: str, start: Position) -> ManagedCursorImpl:
        self._check_open()
        return self._cursors.add_non_durable(name, self.resolve_start(start))

    def resolve_start(self, position: Position) -> Position:
        """A position to start reading from: EARLIEST = the first entry; LATEST, or anything
        past the end, = the next entry to come."""
        if position == EARLIEST:
            return self.first_position()
        return min(position, self.next_position(self._last_confirmed))

    async def delete_cursor(self, name: str) -> None:
        if await self._cursors.delete(name):
            self._trimming.request()

    def cursor_persisted(self) -> None:
        """A durable cursor wrote its state: consumed ledgers may now be deletable."""
        self._trimming.request()

    def set_persistence(self, policy: PersistencePolicy) -> None:
        """Apply a (new) persistence policy: to the next ledger, and to the cursors' next persist."""
        self.persistence = policy

    # ---- trimming ------------------------------------------------------------------------

    def set_retention(self, policy: RetentionPolicy) -> None:
        """Apply a (new) retention policy; ledgers it no longer keeps go now."""
        changed = policy != self.retention
        self.retention = policy
        if changed:
            self._trimming.request()

    async def trim(self) -> None:
        """Delete what is consumed and beyond retention now (a periodic check calls this, so
        time-based retention acts without new writes or acks)."""
        await self._trimming.run_now()

    def _trimmer(self) -> LedgerTrimmer:
        """Made for each use (passes and deletions are rare): a topic keeps none."""
        return LedgerTrimmer(self, self._bookkeeper, self._reads, self._cursors)

    async def _trim_pass(self) -> None:
        await self._trimmer().trim()

    # ---- the compacted view --------------------------------------------------------------

    async def compacted_view(self) -> CompactedView | None:
        """The latest compacted view, loaded on first use; None before any compaction."""
        if self._compacted is not None and self._compacted_view is None:
            self._compacted_view = await CompactedView.load(
                self._bookkeeper, self._compacted.ledger_id, self._compacted.horizon)
        return self._compacted_view

    async def install_compacted(self, entries: list[Entry], horizon: Position) -> CompactedView:
        """Store a new compacted view (entries oldest first) and make it current; the previous
        one's ledger is deleted once the metadata names the new one."""
        self._check_open()
        view = await CompactedView.write(self._bookkeeper, entries, horizon,
                                         self._tags.of(LedgerOwner(COMPACTED_LEDGER, self.name)))
        previous = self._compacted
        self._compacted = CompactedLedger(view.ledger_id, horizon)
        try:
            await self.persist_metadata()
        except ManagedLedgerStorageError as exc:
            self._compacted = previous
            await self._trimmer().delete_unrecorded(view.ledger_id, exc)
            raise
        self._compacted_view = view
        if previous is not None:
            await self._trimmer().delete(previous.ledger_id)
        return view

    # ---- metadata and lifecycle ----------------------------------------------------------

    async def persist_metadata(self) -> None:
        """Write the ledger list, the compacted view and the termination (trimming too)."""
        async with _METADATA_WRITES.held(self):
            metadata = ManagedLedgerMetadata(
                [LedgerInfo(info.ledger_id, info.entries, info.size, info.closed_at_ms)
                 for info in self.ledger_list], self._compacted, self._terminated)
            try:
                self._metadata_version = await self.store.put(
                    self._path, metadata.encode(), self._metadata_version)
            except MetadataBadVersionError as exc:
                raise ManagedLedgerFencedError(
                    f"managed ledger {self.name} was written by another broker") from exc
            except MetadataStoreError as exc:
                raise ManagedLedgerStorageError(
                    f"persisting managed ledger {self.name} failed: {exc}") from exc

    def _check_open(self) -> None:
        if self._closing:
            raise ManagedLedgerClosedError(f"managed ledger {self.name} is closed")

    async def close(self) -> None:
        """Flush cursors, seal the current ledger, persist; pending reads return []."""
        if self._closing:
            return
        self._closing = True
        try:
            await self._shut_down()
        finally:
            self._on_closed(self)
            waiting, self._closed = self._closed, True
            if isinstance(waiting, asyncio.Future):
                waiting.set_result(None)
        logger.debug("closed managed ledger %s", self.name)

    async def _shut_down(self) -> None:
        self._rollover_timer.stop()
        await self._trimming.stop()
        if self._rollover_task is not None:
            await asyncio.gather(self._rollover_task, return_exceptions=True)
        self._fail_queued(ManagedLedgerClosedError(f"managed ledger {self.name} is closed"))
        await self._cursors.close_all()
        self._cursors.wake_waiting(False)
        if self._writer is not None:
            await self._ledgers.seal(self._writer, self.ledger_list)
            self._writer = None
        self._state = ManagedLedgerState.CLOSED
        try:
            await self.persist_metadata()
        except ManagedLedgerStorageError as exc:   # another broker took it over, or the store is gone
            logger.warning("managed ledger %s: final metadata write failed: %s", self.name, exc)
