"""A subscription's pending-ack log, as Pulsar's MLPendingAckStore keeps it: a managed ledger
named `{topic}-{subscription}__transaction_pending_ack` of small JSON records (a transaction's
acks, then its commit or abort), written before the broker answers, replayed when the
subscription loads.

A record stays until its transaction ended and what the end did is durable elsewhere (a commit's
acks persisted by the subscription's cursor): its transaction's records are then acknowledged
on the log's own cursor, and ledgers holding only such records are trimmed. A commit still in
the log at replay is applied to the subscription's cursor again (idempotent), so a broker killed
between logging a commit and persisting the cursor loses nothing.
"""

from __future__ import annotations

from typing import AsyncIterator, Iterable, Protocol

from managed_ledger.interfaces import ManagedCursor, ManagedLedger
from managed_ledger.position import InitialPosition, Position
from server.transactions.record_log import Record, append_record, unacknowledged_records

#: Pulsar's SystemTopicNames.PENDING_ACK_STORE_SUFFIX and MLPendingAckStore's cursor name.
SUFFIX = "__transaction_pending_ack"
CURSOR_NAME = "__pending_ack_state"


class LedgerStorage(Protocol):
    """What the log needs of the managed ledger factory."""

    async def open_ledger(self, name: str) -> ManagedLedger: ...

    async def ledger_exists(self, name: str) -> bool: ...

    async def delete_ledger(self, name: str) -> None: ...


def log_name(topic: str, subscription: str) -> str:
    """MLPendingAckStore.getTransactionPendingAckStoreSuffix: the topic, '-', the subscription."""
    return f"{topic}-{subscription}{SUFFIX}"


class PendingAckLog:
    def __init__(self, ledger: ManagedLedger, cursor: ManagedCursor) -> None:
        self.ledger = ledger
        self._cursor = cursor

    @classmethod
    async def open(cls, storage: LedgerStorage, name: str) -> "PendingAckLog":
        ledger = await storage.open_ledger(name)
        return cls(ledger, await ledger.open_cursor(CURSOR_NAME, InitialPosition.EARLIEST))

    async def replay(self) -> AsyncIterator[tuple[Position, Record]]:
        """The records not acknowledged yet, in log order."""
        async for item in unacknowledged_records(self.ledger, self._cursor):
            yield item

    async def append(self, record: Record) -> Position:
        """On disk when this returns."""
        return await append_record(self.ledger, record)

    def forget(self, positions: Iterable[Position]) -> None:
        """Records of an ended transaction whose outcome is durable elsewhere: they may go."""
        self._cursor.delete(positions)

    async def trim(self) -> None:
        await self._cursor.flush()
        await self.ledger.trim()

    async def close(self) -> None:
        await self._cursor.flush()
        await self.ledger.close()
