"""A subscription's pending acks (Pulsar's PendingAckHandleImpl): the acknowledgements
transactions made, held until each transaction ends. A held message counts as unacknowledged
(backlog, cursor) yet is delivered to no consumer meanwhile; a commit hands the acks to the
subscription's cursor, an abort releases the messages and redelivers them (on Exclusive and
Failover subscriptions at the consumer's next redelivery request, as in Pulsar).

Acks are refused with TransactionConflict as Pulsar refuses them: a message acknowledged already
(by the cursor or, for batch indexes, in part), one another transaction (or this one) holds, a
cumulative ack at or behind mark-delete, or behind or beside another transaction's cumulative
ack. Every ack and every end is in the pending-ack log (store.py) before the broker answers.

Made on first use; the log is opened only when there is one already (replayed, so the acks held
before a restart are held again) or at the first transactional ack, so a subscription never
used transactionally costs one existence check.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from managed_ledger.interfaces import ManagedCursor
from managed_ledger.position import Position
from protocol import pulsar_api_pb2 as pb
from server.errors import BrokerError, ServiceNotReady
from server.testing.crash_points import crash_point
from server.transactions.interfaces import COMMIT, TxnID

from .ack_sets import acked_mask, full_mask, words_of
from .store import LedgerStorage, PendingAckLog, Record, log_name

log = logging.getLogger(__name__)

#: An ack of one entry: the batch indexes acknowledged (None: the whole entry) and the batch size.
Ack = tuple[int | None, int]


class TransactionConflict(BrokerError):
    code = pb.TransactionConflict


class AckedSubscription(Protocol):
    """What the pending acks need of their subscription."""

    name: str
    cursor: ManagedCursor

    @property
    def topic_name(self) -> str: ...

    def commit_acks(self, acks: dict[Position, list[int] | None]) -> None:
        """Acknowledge on the cursor: whole entries (None) or batch indexes (ack-set words)."""

    def commit_cumulative(self, position: Position) -> None: ...

    def redeliver_released(self, positions: list[Position]) -> None:
        """Individual acks released by an abort: deliver again (a cumulative ack's come back
        when the consumer asks for its unacknowledged messages, as in Pulsar)."""


@dataclass(eq=False)
class _TxnAcks:
    positions: dict[Position, Ack] = field(default_factory=dict)
    cumulative: Position | None = None
    #: Its records in the log.
    records: list[Position] = field(default_factory=list)
    ended: bool = False


def _merge(held: Ack | None, ack: Ack) -> Ack:
    """Two acks of one entry: a whole-entry ack covers any part."""
    if held is None:
        return ack
    size = max(held[1], ack[1])
    if held[0] is None or ack[0] is None:
        return None, size
    return held[0] | ack[0], size


class PendingAckHandle:
    def __init__(self, subscription: AckedSubscription, storage: LedgerStorage) -> None:
        self._subscription = subscription
        self._storage = storage
        self.log_name = log_name(subscription.topic_name, subscription.name)
        self._log: PendingAckLog | None = None
        self._opening = asyncio.Lock()
        self._recovery: asyncio.Task | None = None
        self._txns: dict[TxnID, _TxnAcks] = {}
        #: Every held entry, over all transactions.
        self._held: dict[Position, Ack] = {}
        self._cumulative: tuple[TxnID, Position] | None = None
        self.state = "None"
        self._recover_start = self._recover_end = 0

    # -- recovery -------------------------------------------------------------------------

    async def ready(self) -> None:
        """Replay the log once (when there is one) before anything else touches the acks."""
        if self._recovery is None:
            self._recovery = asyncio.get_running_loop().create_task(self._recover())
        try:
            await asyncio.shield(self._recovery)
        except Exception as exc:
            self._recovery = None   # the next use tries again
            raise ServiceNotReady(f"PendingAckHandle not replay error! {exc}") from exc

    async def _recover(self) -> None:
        """State None while there is no log (as Pulsar's handle before its store is made)."""
        try:
            if await self._storage.ledger_exists(self.log_name):
                self._recover_start = int(time.time() * 1000)
                await self._open_log()
                self.state = "Initializing"
                await self._replay()
                self.state = "Ready"
                self._recover_end = int(time.time() * 1000)
        except Exception:
            self.state = "Error"
            self._txns.clear()   # the next try replays from the start
            self._held.clear()
            self._cumulative = None
            raise

    @property
    def log_ledger(self) -> Any:
        """The pending-ack log's managed ledger, once this subscription has one open."""
        return None if self._log is None else self._log.ledger

    async def _open_log(self) -> PendingAckLog:
        async with self._opening:
            if self._log is None:
                self._log = await PendingAckLog.open(self._storage, self.log_name)
                self.state = "Ready"
        return self._log

    async def _replay(self) -> None:
        """Hold again what was held; apply again the commits whose records are still there
        (their acks may not have reached the cursor's storage)."""
        committed: list[Position] = []
        ended: list[Position] = []
        async for position, record in self._log.replay():
            txn = TxnID(*record["txn"])
            kind = record["t"]
            if kind == "ack":
                self._hold(txn, {Position(l, e): (m, s) for l, e, m, s in record["p"]}).records.append(position)
            elif kind == "cumulative":
                self._hold_cumulative(txn, Position(*record["p"])).records.append(position)
            else:
                acks = self._end(txn)
                records = (acks.records if acks is not None else []) + [position]
                if kind == "commit" and acks is not None:
                    self._apply(acks)
                    committed.extend(records)
                else:
                    ended.extend(records)
        if committed:
            await self._subscription.cursor.flush()
        self._log.forget(committed + ended)
        if self._txns:
            log.info("subscription %s/%s: %d transactions hold acks again", self._subscription.topic_name,
                     self._subscription.name, len(self._txns))

    # -- acknowledging --------------------------------------------------------------------

    async def acknowledge_individual(self, txn: TxnID, acks: dict[Position, Ack]) -> None:
        """Hold the acks for txn (or TransactionConflict); durable when this returns."""
        await self.ready()
        self._check_individual(txn, acks)
        held = self._hold(txn, acks)
        await self._append(held, {"t": "ack", "txn": list(txn),
                                  "p": [[p.ledger_id, p.entry_id, m, s] for p, (m, s) in acks.items()]})

    async def acknowledge_cumulative(self, txn: TxnID, position: Position) -> None:
        await self.ready()
        mark_delete = self._subscription.cursor.mark_delete_position
        if position <= mark_delete:
            raise self._conflict(txn, f"try to cumulative ack position: {position} within range of cursor's "
                                      f"markDeletePosition: {mark_delete}")
        if self._cumulative is not None and (self._cumulative[0] != txn or position <= self._cumulative[1]):
            raise self._conflict(txn, f"try to cumulative batch ack position: {position} within range of "
                                      f"current currentPosition: {self._cumulative[1]}")
        held = self._hold_cumulative(txn, position)
        await self._append(held, {"t": "cumulative", "txn": list(txn), "p": [position.ledger_id, position.entry_id]})

    def _check_individual(self, txn: TxnID, acks: dict[Position, Ack]) -> None:
        cursor = self._subscription.cursor
        for position, (mask, size) in acks.items():
            if cursor.is_deleted(position):
                raise self._conflict(txn, f"try to ack message:{position} already acked before.")
            held = self._held.get(position)
            if mask is None:
                if held is not None:
                    raise self._conflict(txn, f"try to ack message:{position} in pending ack status.")
                continue
            words = cursor.batch_ack_set(position)
            if words is not None and acked_mask(words, size) & mask:
                raise self._conflict(txn, f"try to ack message:{position} already acked before.")
            if held is not None and (held[0] is None or held[0] & mask):
                raise self._conflict(txn, f"try to ack batch message:{position} in pending ack status.")

    def _conflict(self, txn: TxnID, what: str) -> TransactionConflict:
        sub = self._subscription
        return TransactionConflict(f"[{sub.topic_name}][{sub.name}] Transaction:{txn} {what}")

    def _hold(self, txn: TxnID, acks: dict[Position, Ack]) -> _TxnAcks:
        held = self._txns.setdefault(txn, _TxnAcks())
        for position, ack in acks.items():
            held.positions[position] = _merge(held.positions.get(position), ack)
            self._held[position] = _merge(self._held.get(position), ack)
        return held

    def _hold_cumulative(self, txn: TxnID, position: Position) -> _TxnAcks:
        held = self._txns.setdefault(txn, _TxnAcks())
        held.cumulative = position
        self._cumulative = (txn, position)
        return held

    async def _append(self, held: _TxnAcks, record: Record) -> None:
        """Log a record of held's transaction. When the append fails the acks stay held (their
        fate on disk is unknown) until the transaction ends, as in Pulsar."""
        log_ = await self._open_log()
        position = await log_.append(record)
        held.records.append(position)
        if held.ended:
            log_.forget([position])

    # -- ending ---------------------------------------------------------------------------

    async def end_txn(self, txn: TxnID, action: int) -> None:
        """Commit: the acks reach the cursor, persisted before this returns. Abort: the messages
        are delivered again. A transaction never seen here, or ended already, is a success."""
        await self.ready()
        if txn not in self._txns:
            return
        log_ = await self._open_log()
        position = await log_.append({"t": "commit" if action == COMMIT else "abort", "txn": list(txn)})
        acks = self._end(txn)
        if acks is None:   # ended meanwhile by a repeated request
            log_.forget([position])
            return
        if action == COMMIT:
            self._apply(acks)
            crash_point("pending_ack_commit_before_cursor_flush")
            await self._subscription.cursor.flush()
        else:
            self._subscription.redeliver_released(list(acks.positions))
        log_.forget(acks.records + [position])
        if not self._txns:
            await log_.trim()

    def _end(self, txn: TxnID) -> _TxnAcks | None:
        """Release what txn holds; its acks, or None when it holds nothing."""
        acks = self._txns.pop(txn, None)
        if acks is None:
            return None
        acks.ended = True
        for position, (mask, _size) in acks.positions.items():
            held = self._held.get(position)
            if held is None:
                continue
            if mask is None or held[0] is None or not held[0] & ~mask:
                del self._held[position]
            else:
                self._held[position] = (held[0] & ~mask, held[1])
        if self._cumulative is not None and self._cumulative[0] == txn:
            self._cumulative = None
        return acks

    def _apply(self, acks: _TxnAcks) -> None:
        sub = self._subscription
        if acks.positions:
            sub.commit_acks({p: None if m is None else words_of(m, s) for p, (m, s) in acks.positions.items()})
        if acks.cumulative is not None:
            sub.commit_cumulative(acks.cumulative)

    # -- what dispatch asks -----------------------------------------------------------------

    @property
    def holds_any(self) -> bool:
        return bool(self._held) or self._cumulative is not None

    def hides(self, position: Position) -> bool:
        """Whether a transaction holds the whole entry: it goes to no consumer meanwhile."""
        held = self._held.get(position)
        if held is not None and (held[0] is None or held[0] == full_mask(held[1])):
            return True
        return self._cumulative is not None and position <= self._cumulative[1]

    def unacked_words(self, position: Position, words: list[int] | None) -> list[int] | None:
        """The ack set to dispatch a batch with: the cursor's, less the indexes held."""
        held = self._held.get(position)
        if held is None or held[0] is None:
            return words
        mask, size = held
        if words is not None:
            mask |= acked_mask(words, size)
        return words_of(mask, size)

    def stats(self, low_water_marks: bool = False) -> dict[str, Any]:
        """Pulsar's TransactionPendingAckStats."""
        stats: dict[str, Any] = {"state": self.state, "ongoingTxnSize": len(self._txns),
                                 "recoverStartTime": self._recover_start, "recoverEndTime": self._recover_end}
        if low_water_marks:
            stats["lowWaterMarks"] = {}
        return stats

    def stats_of(self, txn: TxnID) -> dict[str, Any]:
        """Pulsar's TransactionInPendingAckStats: where txn's cumulative ack holds, if it has one
        (a null field is left out of Pulsar's JSON)."""
        held = self._txns.get(txn)
        position = held.cumulative if held is not None else None
        return {} if position is None else {"cumulativeAckPosition": f"{position.ledger_id}:{position.entry_id}"}

    # -- lifecycle ------------------------------------------------------------------------

    async def close(self) -> None:
        if self._recovery is not None and not self._recovery.done():
            self._recovery.cancel()
        self.state = "Close"
        if self._log is not None:
            await self._log.close()

    async def delete(self) -> None:
        """The subscription is deleted: its log goes with it."""
        await self.close()
        await self._storage.delete_ledger(self.log_name)
