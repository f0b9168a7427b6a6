"""What the transaction rooms agree on: a transaction's id, how one ends, and the small
interfaces through which a coordinator reaches the topics and subscriptions a transaction
touched (on this broker, or through their owner in cluster mode).

A coordinator never imports topics or subscriptions; a topic's buffer and a subscription's
pending acks never import the coordinator. They meet here.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

from protocol import pulsar_api_pb2 as pb

#: CommandEndTxn*.txn_action values.
COMMIT = pb.COMMIT
ABORT = pb.ABORT


class TxnID(NamedTuple):
    """A transaction's id: the coordinator that owns it (most bits) and its sequence there."""

    most_bits: int
    least_bits: int

    def __str__(self) -> str:   # Pulsar's TxnID.toString(), used in admin paths and stats
        return f"({self.most_bits},{self.least_bits})"


class TransactionParticipants(Protocol):
    """How a coordinator ends a transaction on what it touched. Both calls are idempotent (a
    coordinator that restarts mid-commit repeats them) and succeed for a transaction the
    participant never saw."""

    async def end_on_partition(self, topic: str, txn: TxnID, action: int) -> None: ...

    async def end_on_subscription(self, topic: str, subscription: str, txn: TxnID, action: int) -> None: ...


class TransactionBuffer(Protocol):
    """A topic's transactional entries (``Topic.transaction_buffer``)."""

    async def end_txn(self, txn: TxnID, action: int) -> None:
        """Commit or abort: the marker is durable when this returns."""

    def stats(self, low_water_marks: bool = False) -> dict[str, Any]:
        """Pulsar's TransactionBufferStats, as admin v3 serves them."""


class PendingAcks(Protocol):
    """A subscription's transactional acknowledgements (``Subscription.pending_acks``)."""

    async def end_txn(self, txn: TxnID, action: int) -> None:
        """Commit (the acks reach the cursor) or abort (the messages are redelivered); durable
        when this returns."""

    def stats(self, low_water_marks: bool = False) -> dict[str, Any]:
        """Pulsar's TransactionPendingAckStats, as admin v3 serves them."""
