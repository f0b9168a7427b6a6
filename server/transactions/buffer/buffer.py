"""A persistent topic's transaction buffer (Pulsar's TopicTransactionBuffer).

A transaction's entries go into the topic's log like any others, with the transaction's id in
their metadata (markers.py). The buffer keeps the transactions still open on this topic, each
with its first position, and the aborted ones with their abort marker's position. Its
max-read position is just before the first entry of the oldest open transaction (the last
entry when none is open): the managed ledger's read limit, so no dispatcher, reader,
compaction or GET_LAST_MESSAGE_ID goes past it (a backlog counts to the last entry, as Pulsar's).
Ending a transaction appends a commit or abort marker, durably, then moves the limit (which
wakes waiting reads); an end waits for the transaction's appends still in flight. Dispatchers
skip markers and aborted entries as acknowledged (`hides`).

Snapshots (snapshots.py) spare a restart from scanning the whole log: a topic is scanned from
its latest snapshot's max-read position on. As in Pulsar, a topic never used transactionally has
no snapshot and is not scanned; the first transactional SEND takes the first snapshot before its
entry is stored (so a restart knows to scan; the topic's other appends wait behind it), then one
is taken after transactionBufferSnapshotMaxTransactionCount forward moves of the max-read
position, or every transactionBufferSnapshotMinTimeInMillis while it moved. Aborted transactions
whose marker's ledger was trimmed are forgotten: their entries are gone with it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Protocol

from log_limits.repeats import RepeatLimitedLog
from managed_ledger.coalesced_task import CoalescedTask
from managed_ledger.errors import ManagedLedgerError
from managed_ledger.interfaces import ManagedLedger
from managed_ledger.position import Entry, Position
from protocol import pulsar_api_pb2 as pb
from protocol.entry import read_metadata
from protocol.errors import ProtocolError
from server.errors import BrokerError, NotAllowed, PersistenceError
from server.testing.crash_points import crash_point
from server.topics.topic_name import TopicName
from server.transactions.interfaces import ABORT, COMMIT, TxnID

from .markers import TXN_ABORT, is_txn_marker, marker_entry, txn_of, with_txn_id

log = logging.getLogger(__name__)
_repeats = RepeatLimitedLog(log)

#: Transactions ended here that are remembered (to refuse their late SENDs, and to answer a
#: repeated end without a second marker) besides the aborted ones.
REMEMBERED_ENDS = 10_000
_SCAN_BATCH = 256
OnDone = Callable[[Position | None, BaseException | None], None]


@dataclass
class Snapshot:
    """Pulsar's TransactionBufferSnapshot: the max-read position and the aborted transactions."""

    max_read: Position
    aborted: dict[TxnID, Position]


class SnapshotLog(Protocol):
    async def latest(self, topic: TopicName) -> Snapshot | None: ...

    async def write(self, topic: TopicName, snapshot: Snapshot) -> None:
        """Durable when it returns."""


class BufferedTopic(Protocol):
    name: TopicName
    ledger: ManagedLedger

    def publish(self, entries: list[bytes], num_messages: int, on_done: OnDone) -> None: ...

    def hold_appends(self) -> None: ...

    def release_appends(self, dropped: Callable[[OnDone], bool]) -> None: ...


@dataclass(frozen=True)
class SnapshotRule:
    max_moves: int
    min_interval_s: float


class TopicTransactionBuffer:
    def __init__(self, topic: BufferedTopic, snapshots: SnapshotLog, rule: SnapshotRule) -> None:
        self._topic = topic
        self._ledger = topic.ledger
        self._snapshots = snapshots
        self._rule = rule
        #: Open transactions and their first position, oldest first.
        self._ongoing: dict[TxnID, Position] = {}
        self._aborted: dict[TxnID, Position] = {}
        self._ended: OrderedDict[TxnID, int] = OrderedDict()
        self._ending: dict[TxnID, asyncio.Future[None]] = {}
        #: Appends of a transaction not yet durable, and who waits for them (an end).
        self._in_flight: dict[TxnID, int] = {}
        self._settled: dict[TxnID, asyncio.Future[None]] = {}
        #: Whether a snapshot exists (taken before the first transactional entry is stored).
        self._has_snapshot = False
        self._first_snapshot: asyncio.Task | None = None
        #: The transactional appends waiting for the first snapshot (held by the topic).
        self._waiting: list[OnDone] = []
        self._moves = 0
        self._snapshotting = CoalescedTask(TopicTransactionBuffer._take_snapshot, self)
        self._timer: asyncio.TimerHandle | None = None
        self.last_snapshot_ms = 0
        #: Transactions this buffer committed and aborted since the topic loaded (its metrics).
        self.committed = self.aborted = 0
        self.recover_ms = (0, 0)

    @classmethod
    async def load(cls, topic: BufferedTopic, snapshots: SnapshotLog, rule: SnapshotRule) -> "TopicTransactionBuffer":
        """Recover from the latest snapshot and the log after it; nothing to do (one lookup in
        memory) for a topic without one."""
        buffer = cls(topic, snapshots, rule)
        snapshot = await snapshots.latest(topic.name)
        if snapshot is not None:
            started = _now_ms()
            await buffer._recover(snapshot)
            buffer.recover_ms = (started, _now_ms())
        return buffer

    # -- reading ----------------------------------------------------------------------------

    @property
    def max_read_position(self) -> Position:
        return self._ledger.readable_end

    def hides(self, metadata: pb.MessageMetadata) -> bool:
        """Whether consumers never get this entry: a marker, or an aborted transaction's."""
        if metadata.HasField("marker_type"):
            return True
        txn = txn_of(metadata)
        return txn is not None and txn in self._aborted

    async def last_dispatchable(self) -> Entry | None:
        """The last entry up to the max-read position that consumers may get (None: none)."""
        end = self.max_read_position
        for ledger_id, entries, _size in reversed(self._ledger.ledgers_info()):
            if ledger_id > end.ledger_id:
                continue
            last = entries - 1 if ledger_id < end.ledger_id else min(end.entry_id, entries - 1)
            for entry_id in range(last, -1, -1):
                entry = await self._ledger.read_entry(Position(ledger_id, entry_id))
                if entry is not None and not self.hides_entry(entry):
                    return entry
        return None

    def hides_entry(self, entry: Entry) -> bool:
        try:
            return self.hides(read_metadata(entry.data))
        except ProtocolError:
            return True

    # -- transactional sends ----------------------------------------------------------------

    def refusal(self, txn: TxnID) -> BrokerError | None:
        """As Pulsar: a SEND for a transaction ended on this topic is refused."""
        if txn in self._aborted or txn in self._ended or txn in self._ending:
            return NotAllowed(f"Transaction [{txn}] has been ended. Please use a new transaction to send message.")
        return None

    def append(self, entry: bytes, num_messages: int, txn: TxnID, on_done: OnDone) -> None:
        """Store a transaction's entry (its id written into its metadata when missing);
        on_done(position, error) once durable. The first one waits for the first snapshot, and
        the topic's other appends wait behind it."""
        stored = partial(self._appended, txn, on_done)
        self._in_flight[txn] = self._in_flight.get(txn, 0) + 1
        if not self._has_snapshot:
            self._topic.hold_appends()
            self._waiting.append(stored)
            if self._first_snapshot is None:
                self._first_snapshot = asyncio.get_running_loop().create_task(self._take_first_snapshot())
        self._topic.publish([with_txn_id(entry, txn)], num_messages, stored)

    def _appended(self, txn: TxnID, on_done: OnDone, position: Position | None, error: BaseException | None) -> None:
        left = self._in_flight.pop(txn) - 1
        if left:
            self._in_flight[txn] = left
        elif txn in self._settled:
            self._settled.pop(txn).set_result(None)
        if error is None and txn not in self._ongoing and self._ended_as(txn) is None:
            self._ongoing[txn] = position
            if len(self._ongoing) == 1:
                self._move_limit()
        on_done(position, error)

    async def _take_first_snapshot(self) -> None:
        """Before the first transactional entry is stored, so that a restart knows to scan."""
        try:
            await self._snapshots.write(self._topic.name, self._snapshot())
        except Exception as exc:  # noqa: BLE001 - the waiting SENDs fail with it; the next one tries again
            _repeats.warning(str(exc), "topic %s: the first transaction buffer snapshot failed: %s",
                             self._topic.name, exc)
            waiting, self._waiting, self._first_snapshot = self._waiting, [], None
            self._topic.release_appends(lambda on_done: any(on_done is w for w in waiting))
            for on_done in waiting:
                on_done(None, PersistenceError(f"Transaction buffer snapshot failed: {exc}"))
            return
        crash_point("txn-buffer-after-first-snapshot")
        self._has_snapshot = True
        self._waiting = []
        self.last_snapshot_ms = _now_ms()
        self._start_timer()
        self._topic.release_appends(lambda _on_done: False)

    # -- ending -----------------------------------------------------------------------------

    async def end_txn(self, txn: TxnID, action: int) -> None:
        """Commit or abort: the marker is durable when this returns. Idempotent; a transaction
        this topic never stored needs no marker. Ending one the other way succeeds and changes
        nothing, as Pulsar's buffer answers (its coordinator refuses that before)."""
        while txn in self._in_flight:   # its SENDs are stored first (ended, they are refused)
            settled = self._settled.setdefault(txn, asyncio.get_running_loop().create_future())
            await asyncio.shield(settled)
        while (ending := self._ending.get(txn)) is not None:
            await asyncio.shield(ending)
        if self._ended_as(txn) is not None:
            return
        if txn not in self._ongoing:
            self._remember(txn, action)
            return
        done = self._ending[txn] = asyncio.get_running_loop().create_future()
        try:
            try:
                position = await self._ledger.append(marker_entry(txn, action))
            except ManagedLedgerError as exc:
                raise PersistenceError(f"Failed to write the end marker of transaction {txn}: {exc}") from exc
            crash_point("txn-buffer-after-marker")
            self._ongoing.pop(txn, None)
            if action == ABORT:
                self._aborted[txn] = position
                self.aborted += 1
            else:
                self.committed += 1
            self._remember(txn, action)
            self._move_limit()
        finally:
            del self._ending[txn]
            done.set_result(None)

    def _ended_as(self, txn: TxnID) -> int | None:
        return ABORT if txn in self._aborted else self._ended.get(txn)

    def _remember(self, txn: TxnID, action: int) -> None:
        if action == COMMIT or txn not in self._aborted:
            self._ended[txn] = action
            if len(self._ended) > REMEMBERED_ENDS:
                self._ended.popitem(last=False)

    def _move_limit(self) -> None:
        """Reads stop just before the oldest open transaction's first entry (none: at the end).
        As Pulsar, only moves forward count towards the next snapshot."""
        limit = None
        if self._ongoing:
            first = next(iter(self._ongoing.values()))
            limit = Position(first.ledger_id, first.entry_id - 1)
        before = self._ledger.readable_end
        self._ledger.set_read_limit(limit)
        if self._ledger.readable_end <= before:
            return
        self._moves += 1
        if self._has_snapshot and self._moves >= self._rule.max_moves:
            self._snapshotting.request()

    # -- snapshots and recovery -------------------------------------------------------------

    def _snapshot(self) -> Snapshot:
        first_ledger = self._ledger.first_position().ledger_id
        for txn in [t for t, marker in self._aborted.items() if marker.ledger_id < first_ledger]:
            del self._aborted[txn]   # its ledgers were trimmed: its entries are gone
        return Snapshot(self.max_read_position, dict(self._aborted))

    async def _take_snapshot(self) -> None:
        self._moves = 0
        snapshot = self._snapshot()
        crash_point("txn-buffer-before-snapshot")
        try:
            await self._snapshots.write(self._topic.name, snapshot)
        except Exception as exc:  # noqa: BLE001 - the next move or tick tries again
            self._moves = max(self._moves, 1)
            _repeats.warning(str(exc), "topic %s: transaction buffer snapshot failed: %s", self._topic.name, exc)
            return
        crash_point("txn-buffer-after-snapshot")
        self.last_snapshot_ms = _now_ms()

    def _start_timer(self) -> None:
        self._timer = asyncio.get_running_loop().call_later(self._rule.min_interval_s, self._tick)

    def _tick(self) -> None:
        if self._moves:
            self._snapshotting.request()
        self._start_timer()

    async def _recover(self, snapshot: Snapshot) -> None:
        """The snapshot's aborted transactions, then the log after its max-read position: each
        transaction's entry opens it, each marker ends it."""
        self._has_snapshot = True
        ledger = self._ledger
        first = ledger.first_position()
        self._aborted = {txn: at for txn, at in snapshot.aborted.items() if at.ledger_id >= first.ledger_id}
        position = max(ledger.next_position(snapshot.max_read), first)
        last = ledger.last_confirmed_entry
        while position <= last:
            entries = await ledger.read_entries(position, _SCAN_BATCH)
            if not entries:
                break
            for entry in entries:
                self._replay(entry)
            position = ledger.next_position(entries[-1].position)
        self._move_limit()
        self._moves = 0
        self._start_timer()
        log.info("topic %s: transaction buffer recovered from %s: %d open, %d aborted transactions",
                 self._topic.name, snapshot.max_read, len(self._ongoing), len(self._aborted))

    def _replay(self, entry: Entry) -> None:
        try:
            metadata = read_metadata(entry.data)
        except ProtocolError:
            return
        txn = txn_of(metadata)
        if txn is None:
            return
        if is_txn_marker(metadata):
            action = ABORT if metadata.marker_type == TXN_ABORT else COMMIT
            self._ongoing.pop(txn, None)
            if action == ABORT:
                self._aborted[txn] = entry.position
            self._remember(txn, action)
        elif txn not in self._ongoing and self._ended_as(txn) is None:
            self._ongoing[txn] = entry.position

    async def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        await self._snapshotting.stop()
        if self._first_snapshot is not None:
            await asyncio.gather(self._first_snapshot, return_exceptions=True)

    # -- stats ------------------------------------------------------------------------------

    @property
    def ongoing(self) -> int:
        return len(self._ongoing)

    def stats(self, low_water_marks: bool = False) -> dict[str, Any]:
        """Pulsar's TransactionBufferStats."""
        stats: dict[str, Any] = {
            "state": "Ready" if self._has_snapshot else "NoSnapshot",
            "maxReadPosition": f"{self.max_read_position.ledger_id}:{self.max_read_position.entry_id}",
            "lastSnapshotTimestamps": self.last_snapshot_ms,
            "snapshotType": "Single",
            "ongoingTxnSize": len(self._ongoing),
            "recoverStartTime": self.recover_ms[0],
            "recoverEndTime": self.recover_ms[1],
            "totalAbortedTransactions": len(self._aborted),
        }
        if low_water_marks:
            stats["lowWaterMarks"] = {}
        return stats

    def stats_of(self, txn: TxnID) -> dict[str, Any]:
        """Pulsar's TransactionInBufferStats (a null startPosition left out, as Pulsar's JSON)."""
        first = self._ongoing.get(txn)
        stats: dict[str, Any] = {"aborted": txn in self._aborted}
        if first is not None:
            stats["startPosition"] = f"{first.ledger_id}:{first.entry_id}"
        return stats


def _now_ms() -> int:
    return int(time.time() * 1000)
