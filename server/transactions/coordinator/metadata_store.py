"""One coordinator's transactions (Pulsar's MLTransactionMetadataStore): each change is logged
durably, then applied; replay rebuilds them after a restart.

OPEN -> COMMITTING -> COMMITTED and OPEN -> ABORTING -> ABORTED. An ended transaction is
forgotten (its records acknowledged in the log), so asking for it again is TransactionNotFound,
as from Pulsar 3.0. Changes of one transaction are serialized: a partition added concurrently
with END_TXN is either in the list the commit ends or refused.
"""

from __future__ import annotations

import asyncio
import enum
import time
from dataclasses import dataclass, field
from typing import Callable

from managed_ledger.position import Position
from server.transactions.interfaces import TxnID

from .errors import InvalidTxnStatus, ReachedMaxActiveTransactions, TransactionNotFound
from .txn_log import Record, TransactionLog

#: Pulsar's execution latency buckets (ms), pulsar_txn_execution_latency_le_*.
LATENCY_BUCKETS_MS = (10, 20, 50, 100, 500, 1000, 5000, 15000, 30000, 60000, 300000, 1500000, 3000000)


class TxnStatus(enum.Enum):
    OPEN = "OPEN"
    COMMITTING = "COMMITTING"
    COMMITTED = "COMMITTED"
    ABORTING = "ABORTING"
    ABORTED = "ABORTED"


_NEXT = {TxnStatus.COMMITTING: TxnStatus.OPEN, TxnStatus.ABORTING: TxnStatus.OPEN,
         TxnStatus.COMMITTED: TxnStatus.COMMITTING, TxnStatus.ABORTED: TxnStatus.ABORTING}
ENDED = (TxnStatus.COMMITTED, TxnStatus.ABORTED)


@dataclass
class TxnMeta:
    txn: TxnID
    open_ms: int
    timeout_ms: int
    owner: str | None
    status: TxnStatus = TxnStatus.OPEN
    partitions: dict[str, None] = field(default_factory=dict)         # insertion-ordered set
    subscriptions: dict[tuple[str, str], None] = field(default_factory=dict)
    positions: list[Position] = field(default_factory=list)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)

    @property
    def timeout_at_ms(self) -> int:
        return self.open_ms + self.timeout_ms

    def require(self, expected: TxnStatus) -> None:
        if self.status is not expected:
            raise InvalidTxnStatus(self.txn, expected.value, self.status.value)


@dataclass
class Counters:
    """Since this broker started serving the coordinator (Pulsar's counters are per run too)."""

    created: int = 0
    committed: int = 0
    aborted: int = 0
    timed_out: int = 0
    latency_buckets: list[int] = field(default_factory=lambda: [0] * (len(LATENCY_BUCKETS_MS) + 1))
    latency_sum_ms: int = 0

    def ended(self, meta: TxnMeta, status: TxnStatus, now_ms: int) -> None:
        if status is TxnStatus.COMMITTED:
            self.committed += 1
        else:
            self.aborted += 1
        took = max(0, now_ms - meta.open_ms)
        self.latency_sum_ms += took
        index = next((i for i, bound in enumerate(LATENCY_BUCKETS_MS) if took <= bound), len(LATENCY_BUCKETS_MS))
        self.latency_buckets[index] += 1


def now_ms() -> int:
    return int(time.time() * 1000)


class TransactionMetadataStore:
    def __init__(self, log: TransactionLog, max_active: int, clock: Callable[[], int] = now_ms) -> None:
        self.tc_id = log.tc_id
        self.log = log
        self._max_active = max_active
        self._clock = clock
        self.txns: dict[TxnID, TxnMeta] = {}
        #: The last id handed out (-1: none; Pulsar's first transaction is (tc, 0)).
        self.sequence = -1
        self.counters = Counters()

    async def replay(self) -> None:
        """Rebuild the open and ending transactions from the log."""
        self.sequence = self.log.reserved_sequence
        async for position, record in self.log.replay():
            self._apply(position, record)

    def _apply(self, position: Position, record: Record) -> None:
        txn = TxnID(self.tc_id, record["seq"])
        if record["op"] == "new":
            self.sequence = max(self.sequence, txn.least_bits)
            self.txns[txn] = TxnMeta(txn, record["start"], record["timeout"], record.get("owner"))
        meta = self.txns.get(txn)
        if meta is None:    # a record of a transaction that ended: its acknowledgement was lost
            self.log.acknowledge([position])
            return
        meta.positions.append(position)
        if record["op"] == "partitions":
            meta.partitions.update(dict.fromkeys(record["partitions"]))
        elif record["op"] == "subscriptions":
            meta.subscriptions.update(dict.fromkeys(tuple(s) for s in record["subscriptions"]))
        elif record["op"] == "status":
            meta.status = TxnStatus(record["status"])
            if meta.status in ENDED:
                self._forget(meta)

    def _forget(self, meta: TxnMeta) -> None:
        self.log.acknowledge(meta.positions)
        self.txns.pop(meta.txn, None)

    def get(self, txn: TxnID) -> TxnMeta:
        meta = self.txns.get(txn)
        if meta is None:
            raise TransactionNotFound(txn)
        return meta

    async def new_txn(self, timeout_ms: int, owner: str | None) -> TxnMeta:
        if self._max_active and len(self.txns) >= self._max_active:
            raise ReachedMaxActiveTransactions(self.tc_id)
        self.sequence += 1
        txn = TxnID(self.tc_id, self.sequence)
        await self.log.reserve(txn.least_bits)
        meta = TxnMeta(txn, self._clock(), timeout_ms, owner)
        record = {"op": "new", "seq": txn.least_bits, "start": meta.open_ms, "timeout": timeout_ms}
        if owner is not None:
            record["owner"] = owner
        meta.positions.append(await self.log.append(record))
        self.txns[txn] = meta
        self.counters.created += 1
        return meta

    async def add_partitions(self, txn: TxnID, partitions: list[str]) -> None:
        meta = self.get(txn)
        async with meta.lock:
            meta.require(TxnStatus.OPEN)
            new = [p for p in dict.fromkeys(partitions) if p not in meta.partitions]
            if new:
                meta.positions.append(await self.log.append({"op": "partitions", "seq": txn.least_bits,
                                                             "partitions": new}))
                meta.partitions.update(dict.fromkeys(new))

    async def add_subscriptions(self, txn: TxnID, subscriptions: list[tuple[str, str]]) -> None:
        meta = self.get(txn)
        async with meta.lock:
            meta.require(TxnStatus.OPEN)
            new = [s for s in dict.fromkeys(subscriptions) if s not in meta.subscriptions]
            if new:
                meta.positions.append(await self.log.append({"op": "subscriptions", "seq": txn.least_bits,
                                                             "subscriptions": [list(s) for s in new]}))
                meta.subscriptions.update(dict.fromkeys(new))

    async def update_status(self, txn: TxnID, status: TxnStatus, timed_out: bool = False) -> None:
        """Log the change, then apply it; an ended transaction is forgotten."""
        meta = self.get(txn)
        async with meta.lock:
            if meta.status is status:
                return
            meta.require(_NEXT[status])
            meta.positions.append(await self.log.append({"op": "status", "seq": txn.least_bits,
                                                         "status": status.value}))
            meta.status = status
            if timed_out:
                self.counters.timed_out += 1
            if status in ENDED:
                self.counters.ended(meta, status, self._clock())
                self._forget(meta)

    @property
    def low_water_mark(self) -> int:
        """The sequence before the oldest transaction still known (0 with none)."""
        return min((t.least_bits for t in self.txns), default=1) - 1

    async def close(self) -> None:
        await self.log.close()
