"""A producer attached to a topic: turns SENDs into appends and appends into receipts."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Callable

from log_limits.repeats import RepeatLimitedLog
from managed_ledger.errors import ManagedLedgerFencedError, ManagedLedgerTerminatedError
from protocol import commands
from protocol import pulsar_api_pb2 as pb
from protocol.codec import Send
from protocol.entry import read_metadata
from protocol.receipts import ReceiptEncoder, receipt_encoder
from server.errors import NotAllowed

from .deduplication import DedupStatus, MessageDeduplication, is_last_chunk_or_whole

if TYPE_CHECKING:
    from managed_ledger.position import Position
    from server.transactions.interfaces import TxnID

    from .interfaces import ClientConnection
    from .topic_base import TopicBase

log = logging.getLogger(__name__)
_repeats = RepeatLimitedLog(log)   # a failing ledger fails every SEND: one line per interval

#: The message id Pulsar receipts a duplicate with: it was not stored again.
DUPLICATE_ID = (-1, -1)


@dataclass(eq=False, slots=True)
class Producer:
    producer_id: int
    name: str
    topic: "TopicBase"
    connection: "ClientConnection"
    user_provided_name: bool
    access_mode: int = pb.Shared
    schema_version: bytes | None = None
    #: The epoch an exclusive producer presents when it reconnects (None for a new one).
    requested_epoch: int | None = None
    #: The key/values the client attached to PRODUCER (shown in the publisher's stats).
    metadata: dict[str, str] = field(default_factory=dict)
    #: The topic epoch announced in PRODUCER_SUCCESS.
    topic_epoch: int | None = field(default=None, init=False)
    #: Appends started and completed: answers that must follow the receipts of the SENDs
    #: taken so far wait in _after with the count of appends they follow.
    _appended: int = field(default=0, init=False)
    _completed: int = field(default=0, init=False)
    #: (made on first use: an empty deque costs 760 bytes a producer, and few answers ever wait)
    _after: "list[tuple[int, Callable[[], None]]] | None" = field(default=None, init=False)
    #: After a failed append, later SENDs fail too (the client reconnects and resends them
    #: all in order), so nothing is stored ahead of the message that failed.
    _persistence_failed: bool = field(default=False, init=False)
    _encode_receipt: ReceiptEncoder = field(init=False)

    def __post_init__(self) -> None:
        self._encode_receipt = receipt_encoder(self.producer_id)

    def publish(self, sends: list[Send]) -> None:
        """Append the entries of SENDs read together (their metadata already checked by the
        connection); the receipts are written once they are durable, in arrival order. They go
        as one run unless each needs a look of its own: deduplication, an earlier failure, or
        a topic whose positions are not consecutive."""
        topic = self.topic
        if topic.deduplication is None and topic.positions_are_consecutive and not self._persistence_failed:
            self._append(sends, None)
        else:
            for send in sends:
                self._publish_one(send)

    def publish_txn(self, send: Send, txn: "TxnID") -> None:
        """A transaction's SEND: its topic's transaction buffer stores it (refused where there is
        none, or where the transaction ended already), deduplicated as any SEND."""
        buffer = self.topic.transaction_buffer
        refusal = buffer.refusal(txn) if buffer is not None else NotAllowed(
            "Transactions are not enabled." if self.topic.name.persistent
            else "Transactional messages are not supported on non-persistent topics")
        if refusal is not None:
            self.connection.publish_completed(len(send.entry), 1)
            self.connection.write(commands.send_error(self.producer_id, send.sequence_id, refusal.code, str(refusal)))
            return
        self._publish_one(send, txn)

    def _publish_one(self, send: Send, txn: "TxnID | None" = None) -> None:
        deduplication = self.topic.deduplication
        if deduplication is not None and send.is_chunk and not is_last_chunk_or_whole(read_metadata(send.entry)):
            deduplication = None
        if deduplication is not None:
            status = deduplication.check(self.name, send.sequence_id, send.highest_sequence_id)
            if status is not DedupStatus.NEW:
                self.after_receipts(partial(self._answer_duplicate, status, send.sequence_id,
                                            send.highest_sequence_id, len(send.entry)))
                return
        if self._persistence_failed:
            self.connection.publish_completed(len(send.entry), 1)
            self.connection.write(commands.send_error(
                self.producer_id, send.sequence_id, pb.PersistenceError,
                "An earlier message failed to persist; reconnect to resend in order"))
            return
        if txn is None:
            self._append([send], deduplication)
            return
        self._appended += 1
        self.topic.transaction_buffer.append(send.entry, send.num_messages, txn,
                                             partial(self._persisted, [send], deduplication))

    def _append(self, sends: list[Send], tracked: "MessageDeduplication | None") -> None:
        """tracked: the deduplication that checked the SEND (of a run of one), told the outcome
        (even if it was turned off meanwhile)."""
        # A callback, not a future: no future, done-callback and loop handle per run.
        self._appended += len(sends)
        self.topic.publish([send.entry for send in sends], sum(send.num_messages for send in sends),
                           partial(self._persisted, sends, tracked))

    def _persisted(self, sends: list[Send], tracked: "MessageDeduplication | None", first: "Position | None",
                   error: BaseException | None) -> None:
        """The run is durable (receipts at consecutive positions from ``first``) or failed."""
        self._completed += len(sends)
        connection = self.connection
        connection.publish_completed(sum(len(send.entry) for send in sends), len(sends))
        if error is None:
            if tracked is not None:   # (a run of one)
                tracked.record_persisted(
                    self.name, max(sends[0].sequence_id, sends[0].highest_sequence_id), first)
            ledger_id, entry_id = first
            encode, write_frame = self._encode_receipt, connection.write_frame
            for send in sends:
                write_frame(encode(send.sequence_id, send.highest_sequence_id, ledger_id, entry_id))
                entry_id += 1
        else:
            for send in sends:
                self._failed(send.sequence_id, error, tracked)
        after = self._after
        while after and after[0][0] <= self._completed:
            after.pop(0)[1]()

    def _failed(self, sequence_id: int, error: BaseException, tracked: "MessageDeduplication | None") -> None:
        if tracked is not None:
            tracked.forget_pushed(self.name)
        if isinstance(error, ManagedLedgerTerminatedError):
            self.connection.write(commands.send_error(
                self.producer_id, sequence_id, pb.TopicTerminatedError, "Topic was already terminated"))
            return
        _repeats.warning(repr(error), "append to %s failed: %r", self.topic.name, error)
        if isinstance(error, ManagedLedgerFencedError):
            self.topic.storage_fenced()
        self._persistence_failed = True
        self.connection.write(
            commands.send_error(self.producer_id, sequence_id, pb.PersistenceError, f"Failed to persist: {error!r}")
        )

    def after_receipts(self, answer: Callable[[], None]) -> None:
        """Run answer after the receipts of earlier SENDs (receipts keep arrival order, and a
        broker-initiated close follows what was sent before it)."""
        if self._completed < self._appended:
            if self._after is None:
                self._after = []
            self._after.append((self._appended, answer))
        else:
            answer()

    def _answer_duplicate(self, status: DedupStatus, sequence_id: int, highest_sequence_id: int,
                          size: int) -> None:
        self.connection.publish_completed(size, 1)
        if status is DedupStatus.DUPLICATE:
            self.connection.write_frame(self._encode_receipt(sequence_id, highest_sequence_id, *DUPLICATE_ID))
        else:
            self.connection.write(commands.send_error(
                self.producer_id, sequence_id, pb.PersistenceError,
                f"Cannot determine whether the message with sequence id {sequence_id} is a duplicate at this time",
            ))

    def close_by_broker(self) -> None:
        """Tell the client to look the topic up again and re-create this producer."""
        self.connection.close_producer_by_broker(self)
