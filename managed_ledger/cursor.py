"""ManagedCursor: a subscription's place in a managed ledger.

State is the mark-delete position (everything at or before it is acknowledged), the
individually acknowledged entries after it (sorted ranges, see ranges.py), partial batch
acknowledgements (bit sets, bits SET = still unacked) and the read position (next entry a
read returns; deleted entries are skipped). Reads stop at the managed ledger's readable end (its
last entry, or a topic's max-read position before an open transaction); the backlog, as Pulsar's,
counts to the last entry.
Individual acks that close the gap after the mark-delete move it forward, also across ledger
boundaries when no entry lies between.

Persistence of durable cursors is batched: an acknowledgement only marks the cursor dirty,
and dirty state is stored (cursor_store.py: in the metadata store, or in the cursor's ledger on
a BookKeeper cluster) cursor_flush_interval_ms later, on flush() and on close; reset() stores
before it returns. The managed ledger's persistence policy limits the background stores to its
mark-delete rate (Pulsar's managedLedgerMaxMarkDeleteRate: acknowledgements beyond it are kept
in memory); what waits is stored once the rate allows, and never later than
managedLedgerCursorPositionFlushSeconds, Pulsar's bound for what its rate limiter holds back.

Crash bound: after kill -9, acknowledgements made since the last completed flush (at most one
flush interval, or 1/rate seconds, plus one metadata write) are lost, so those entries may be
redelivered. Nothing acknowledged before that is redelivered, and no unacknowledged entry is ever skipped (but one
whose every copy is lost, or whose ledger is gone, with autoSkipNonRecoverableData=true: it is
acknowledged unread; see lost_entries.py).

Non-durable cursors (readers) keep all of this in memory only and vanish with the process.

Active cursors (Pulsar's setActive / setInactive): a cursor is active while its subscription has
consumers and it is fewer than managedLedgerCursorBackloggedThreshold entries behind the last
one (judged after each read); the managed ledger caches its adds only while it has one.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Iterable

from log_limits.repeats import RepeatLimitedLog

from .errors import ConcurrentReadError, CursorClosedError, ManagedLedgerStorageError, NonRecoverableEntryError
from .cursor_store import CursorStore
from .held_locks import LockTable
from .lost_entries import lost_through
from .metadata import CursorState
from .position import Entry, Position
from .ranges import AckedRanges
from .uncancellable import run_to_end

if TYPE_CHECKING:
    from .interfaces import EntriesListener
    from .managed_ledger import ManagedLedgerImpl

logger = logging.getLogger(__name__)
_repeats = RepeatLimitedLog(logger)   # a dead ensemble can cost thousands of entries: few lines
_FLUSHES = LockTable()   # one flush of a cursor at a time


def discard(members: dict, key: object) -> None:
    """Remove key from a dict used as a set; an emptied dict is cleared too, which frees the
    table it keeps (224 bytes: a broker holds such dicts per topic, by the 100,000)."""
    members.pop(key, None)
    if not members:
        members.clear()


class ManagedCursorImpl:
    """Implements interfaces.ManagedCursor for durable and non-durable cursors."""

    __slots__ = ("_acked", "_active_cursors", "_batch_acks", "_closed", "_dirty",
                 "_flush_tasks", "_flush_timer", "_has_readers", "_last_persist", "_ledger", "_listener", "_loop",
                 "_mark_delete", "_read_cancelled", "_read_position", "_reading", "_store", "_waiter",
                 "durable", "held_at_lost", "name", "persisted_mark_delete", "skipped_lost_entries",
                 "__weakref__")   # readers' cursors are held weakly (cursor_registry.py)

    def __init__(self, ledger: ManagedLedgerImpl, name: str, state: CursorState,
                 store: CursorStore | None = None,
                 active_cursors: dict[ManagedCursorImpl, None] | None = None) -> None:
        self.name = name
        self.durable = store is not None
        self._ledger = ledger
        self._loop = asyncio.get_running_loop()
        self._mark_delete = state.mark_delete
        self._acked = AckedRanges.from_ranges(state.acked)
        self._batch_acks: dict[Position, list[int]] = dict(state.batch_acks)
        self._read_position = ledger.ledger_list.next_position(self._mark_delete)
        #: entries acknowledged unread because no copy of them could be read
        self.skipped_lost_entries = 0
        #: where an entry that cannot be read holds this cursor (None while reads go on)
        self.held_at_lost: Position | None = None
        self._reading = False
        self._read_cancelled = False
        self._waiter: asyncio.Future[bool] | None = None   # read_entries_or_wait's
        self._listener: EntriesListener | None = None      # read_entries_or_notify's
        self._closed = False
        #: The ledger's active cursors, this one among them while active.
        self._active_cursors = {} if active_cursors is None else active_cursors
        self._has_readers = False
        self._store = store   # where a durable cursor's state goes
        self._dirty = False
        self._flush_timer: asyncio.TimerHandle | None = None
        self._flush_tasks: dict[asyncio.Task, None] = {}   # a dict as a set: a third of the size
        self._last_persist = -float("inf")   # loop time of the last background store
        #: Mark-delete as last written to the metadata store (what trimming may rely on).
        self.persisted_mark_delete = state.mark_delete

    # ---- positions -----------------------------------------------------------------------

    @property
    def mark_delete_position(self) -> Position:
        return self._mark_delete

    @property
    def read_position(self) -> Position:
        ledgers = self._ledger.ledger_list
        position = ledgers.normalize(self._read_position)
        if position <= self._mark_delete:
            position = ledgers.next_position(self._mark_delete)
        return position

    @property
    def cursor_ledger(self) -> int:
        """The ledger holding its state (Pulsar's cursorLedger); -1 without one."""
        ledger_id = self._store.ledger_id if self._store is not None else None
        return -1 if ledger_id is None else ledger_id

    def has_more_entries(self) -> bool:
        return self.read_position <= self._ledger.readable_end

    def seek(self, read_position: Position) -> None:
        self._read_position = self._ledger.resolve_start(read_position)
        self.wake_reader(True)

    def rewind(self) -> None:
        self._read_position = self._ledger.ledger_list.next_position(self._mark_delete)
        self.wake_reader(True)

    def backlog(self) -> int:
        ledgers = self._ledger.ledger_list
        pending = ledgers.count_between(self._mark_delete, self._ledger.last_confirmed_entry)
        return max(0, pending - len(self._acked))

    # ---- activity ------------------------------------------------------------------------

    @property
    def is_active(self) -> bool:
        return self in self._active_cursors

    def set_active(self) -> None:
        """Consumers read through this cursor now: adds are cached while it keeps up."""
        self._has_readers = True
        self._update_active()

    def set_inactive(self) -> None:
        """No consumer reads through this cursor any more."""
        self._has_readers = False
        self._leave_active()

    def _update_active(self) -> None:
        if self._has_readers and not self._closed and self._entries_behind() < \
                self._ledger.config.cursor_backlogged_threshold:
            self._active_cursors[self] = None
        else:
            self._leave_active()

    def _leave_active(self) -> None:
        discard(self._active_cursors, self)

    def _entries_behind(self) -> int:
        """Entries from the read position to the last one (Pulsar's getNumberOfEntries)."""
        position = self.read_position
        return self._ledger.ledger_list.count_between(
            Position(position.ledger_id, position.entry_id - 1), self._ledger.last_confirmed_entry)

    # ---- reads ---------------------------------------------------------------------------

    async def read_entries_or_wait(self, max_entries: int) -> list[Entry]:
        return await self._read(max_entries, None)  # type: ignore[return-value]  # (never None without a listener)

    async def read_entries_or_notify(self, max_entries: int, listener: EntriesListener) -> list[Entry] | None:
        return await self._read(max_entries, listener)

    async def _read(self, max_entries: int, listener: EntriesListener | None) -> list[Entry] | None:
        """Read what is there; at the end of the log wait for more, or with a listener leave
        it to be called (None)."""
        self._check_open()
        if self._reading:
            raise ConcurrentReadError(f"cursor {self.name} already has a read in flight")
        self._reading = True
        self._read_cancelled = False
        try:
            while not (self._read_cancelled or self._closed):
                before = self.read_position
                entries = await self._read_available(max_entries)
                if self._has_readers:
                    self._update_active()
                if entries:
                    return entries
                if self.has_more_entries() and self.read_position != before:
                    continue  # skipped entries that were all deleted; look further
                if self._read_cancelled or self._closed:
                    break
                if listener is not None:
                    self._listener = listener
                    self._ledger.register_waiter(self)
                    return None
                if not await self._wait_for_entries():
                    break
            return []
        finally:
            self._reading = False

    def cancel_pending_read(self) -> None:
        """The read in flight returns [] instead of waiting (or at once, if it waits now), or the
        listener is told (False); entries it already fetched from disk are still returned."""
        if self._reading:
            self._read_cancelled = True
        self.wake_reader(False)

    async def _wait_for_entries(self) -> bool:
        """Sleep until an add lands (True) or the read is cancelled (False)."""
        waiter: asyncio.Future[bool] = self._loop.create_future()
        self._waiter = waiter
        self._ledger.register_waiter(self)
        try:
            return await waiter
        finally:
            self._waiter = None
            self._ledger.unregister_waiter(self)

    def wake_reader(self, more: bool) -> None:
        """Its read waits no longer: an add landed or the position or read limit moved (True),
        or the read was cancelled, the cursor or the ledger closes (False)."""
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(more)
        listener = self._listener
        if listener is not None:
            self._listener = None
            self._ledger.unregister_waiter(self)
            listener.entries_available(more)

    async def _read_available(self, max_entries: int) -> list[Entry]:
        """Read up to max_entries non-deleted entries from the read position, then move it."""
        ledgers = self._ledger.ledger_list
        last_confirmed = self._ledger.readable_end
        position = self.read_position
        runs: list[tuple[int, int, int]] = []
        wanted = max_entries
        while wanted > 0 and position <= last_confirmed:
            acked_end = self._acked.range_end(position)
            if acked_end is not None:
                position = ledgers.next_position(Position(position.ledger_id, acked_end))
                continue
            info = ledgers.get(position.ledger_id)
            if info is None:
                break
            last = min(info.entries - 1, position.entry_id + wanted - 1)
            if position.ledger_id == last_confirmed.ledger_id:   # (the read limit may fall inside a ledger)
                last = min(last, last_confirmed.entry_id)
            next_acked = self._acked.next_start_after(position)
            if next_acked is not None:
                last = min(last, next_acked - 1)
            runs.append((position.ledger_id, position.entry_id, last))
            wanted -= last - position.entry_id + 1
            position = ledgers.next_position(Position(position.ledger_id, last))
        start = self._read_position
        entries: list[Entry] = []
        for ledger_id, first, last in runs:
            try:
                run = await self._ledger.read_ledger_range(ledger_id, first, last)
            except ManagedLedgerStorageError as exc:
                if ledgers.get(ledger_id) is None:
                    continue   # trimmed while we read (a non-durable reader fell behind): those are gone
                if not isinstance(exc, NonRecoverableEntryError):
                    raise
                # deliver what came before it; the next read starts at it
                position = Position(ledger_id, first) if entries else self.skip_lost(Position(ledger_id, first), exc)
                break
            entries.extend(run)
            if len(run) <= last - first:
                position = Position(ledger_id, first + len(run))   # stopped before an unreadable one
                break
        if self._read_position == start:
            self._read_position = position
        self.held_at_lost = None
        return entries

    def skip_lost(self, position: Position, error: NonRecoverableEntryError) -> Position:
        """At an entry that cannot be read, or a missing ledger (all its entries, see
        lost_entries.py): counted once per hold; with autoSkipNonRecoverableData acknowledged,
        and the position to read on from returned; else error is raised (the read fails there,
        and the dispatcher retries it)."""
        ledgers = self._ledger.ledger_list
        last = lost_through(ledgers, position, error)
        ledger_id = position.ledger_id
        lost = [p for p in (Position(ledger_id, e) for e in range(position.entry_id, last.entry_id + 1))
                if not self.is_deleted(p)]
        counts = self._ledger.lost_entries
        if self.held_at_lost != position:
            self.held_at_lost = position
            counts.found += len(lost)
        if not self._ledger.config.auto_skip_non_recoverable_data:
            raise error
        self.held_at_lost = None
        self.skipped_lost_entries += len(lost)
        counts.skipped += len(lost)
        _repeats.warning((self._ledger.name, self.name), "cursor %s of %s: skipped %d lost entries %s..%s "
                         "(autoSkipNonRecoverableData=true; %d skipped so far): %s", self.name,
                         self._ledger.name, len(lost), position, last, self.skipped_lost_entries, error)
        self.delete(lost)
        return ledgers.next_position(last)

    # ---- acknowledgements ----------------------------------------------------------------

    def is_deleted(self, position: Position) -> bool:
        return position <= self._mark_delete or position in self._acked

    def mark_delete(self, position: Position) -> None:
        position = min(position, self._ledger.last_confirmed_entry)
        if position <= self._mark_delete:
            return
        self._set_mark_delete(position)
        self._advance_over_acked()
        self._mark_dirty()

    def delete(self, positions: Iterable[Position]) -> None:
        changed = False
        for position in positions:
            if position <= self._mark_delete or not self._is_stored(position):
                continue
            changed |= self._acked.add(position)
            changed |= self._batch_acks.pop(position, None) is not None
        if changed:
            self._advance_over_acked()
            self._mark_dirty()

    def ack_batch_indexes(self, position: Position, ack_set: list[int]) -> list[int] | None:
        if self.is_deleted(position) or not self._is_stored(position):
            return None
        stored = self._batch_acks.get(position)
        words = list(ack_set) if stored is None else [a & b for a, b in zip(stored, ack_set)]
        if not any(words):
            self.delete([position])
            return None
        self._batch_acks[position] = words
        self._mark_dirty()
        return list(words)

    def batch_ack_set(self, position: Position) -> list[int] | None:
        words = self._batch_acks.get(position)
        return list(words) if words is not None else None

    async def reset(self, position: Position) -> None:
        position = self._ledger.resolve_start(position)
        self._mark_delete = Position(position.ledger_id, position.entry_id - 1)
        self._acked.clear()
        self._batch_acks.clear()
        self._read_position = position
        self.wake_reader(True)
        if self.durable:
            self._dirty = True
            await self.flush()

    def _is_stored(self, position: Position) -> bool:
        """Acks for positions this log does not hold (bad client input) are ignored."""
        info = self._ledger.ledger_list.get(position.ledger_id)
        return info is not None and 0 <= position.entry_id < info.entries

    def _set_mark_delete(self, position: Position) -> None:
        self._mark_delete = position
        self._acked.remove_through(position)
        if self._batch_acks:
            for acked in [p for p in self._batch_acks if p <= position]:
                del self._batch_acks[acked]

    def _advance_over_acked(self) -> None:
        """Move mark-delete over acked entries that directly follow it."""
        ledgers = self._ledger.ledger_list
        mark_delete = self._mark_delete
        while True:
            following = ledgers.next_position(mark_delete)
            acked_end = self._acked.range_end(following)
            if acked_end is None:
                break
            mark_delete = Position(following.ledger_id, acked_end)
        if mark_delete != self._mark_delete:
            self._set_mark_delete(mark_delete)

    def move_past_trimmed(self, first_position: Position) -> None:
        """Ledgers before first_position were deleted: forget state about them."""
        before_first = Position(first_position.ledger_id, first_position.entry_id - 1)
        if self._mark_delete < before_first:
            self._set_mark_delete(before_first)

    # ---- persistence ---------------------------------------------------------------------

    def state(self) -> CursorState:
        return CursorState(self._mark_delete, list(self._acked.ranges()),
                           {p: list(words) for p, words in self._batch_acks.items()})

    async def flush(self) -> None:
        """Write dirty state now (durable cursors; a no-op otherwise). The write runs to its
        end even if the caller is cancelled (a client gone mid-seek): the store would apply it
        anyway, and a version the cursor never learnt would fail every later write."""
        if self.durable:
            await run_to_end(self._flush())

    async def _flush(self) -> None:
        async with _FLUSHES.held(self):
            if not self._dirty or self._closed:
                return
            self._dirty = False
            state = self.state()
            try:
                await self._store.persist(state)
            except Exception as exc:
                self._dirty = True
                raise ManagedLedgerStorageError(f"cursor {self.name}: persisting failed") from exc
            self.persisted_mark_delete = state.mark_delete
        self._ledger.cursor_persisted()

    async def create(self) -> None:
        """Write the initial state of a new durable cursor (it must not exist yet)."""
        await self._store.create(self.state())

    def _mark_dirty(self) -> None:
        if not self.durable or self._closed:
            return
        self._dirty = True
        if self._flush_timer is None:
            self._flush_timer = self._loop.call_later(self._flush_delay(), self._flush_in_background)

    def _flush_delay(self) -> float:
        """The flush interval, stretched to keep stores within the mark-delete rate."""
        config = self._ledger.config
        delay = config.cursor_flush_interval_ms / 1000.0
        rate = self._ledger.persistence.mark_delete_rate
        if rate > 0:
            delay = max(delay, self._last_persist + 1 / rate - self._loop.time())
        return min(delay, config.cursor_position_flush_seconds)

    def _flush_in_background(self) -> None:
        self._flush_timer = None
        self._last_persist = self._loop.time()
        task = self._loop.create_task(self._background_flush())
        self._flush_tasks[task] = None
        task.add_done_callback(self._flush_done)

    def _flush_done(self, task: asyncio.Task) -> None:
        self._flush_tasks.pop(task, None)

    async def _background_flush(self) -> None:
        try:
            await self.flush()
        except ManagedLedgerStorageError as exc:   # the storage is away: expected
            cause = exc.__cause__ or exc
            _repeats.warning(("flush", type(cause)), "cursor %s of %s: flush failed, retried: %s",
                             self.name, self._ledger.name, cause)
            self._mark_dirty()

    async def _stop_background_flushes(self) -> None:
        if self._flush_timer is not None:
            self._flush_timer.cancel()
            self._flush_timer = None
        if self._flush_tasks:
            await asyncio.gather(*self._flush_tasks, return_exceptions=True)

    async def close(self) -> None:
        """Persist what is pending and stop; a pending read returns []."""
        if self._closed:
            return
        await self._stop_background_flushes()
        try:
            await self.flush()
        finally:
            self._closed = True
            self._leave_active()
            self.wake_reader(False)
            if self._store is not None:
                await self._store.close()

    async def remove(self) -> None:
        """Stop, and delete the stored state (the cursor is being deleted); a pending read
        returns []."""
        self._closed = True
        self._leave_active()
        self.wake_reader(False)
        await self._stop_background_flushes()
        if self._store is not None:
            await self._store.delete()

    def _check_open(self) -> None:
        if self._closed:
            raise CursorClosedError(f"cursor {self.name} is closed")
