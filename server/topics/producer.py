"""A producer attached to a topic: turns SENDs into appends and appends into receipts."""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Callable

from managed_ledger.errors import ManagedLedgerTerminatedError
from protocol import commands
from protocol import pulsar_api_pb2 as pb
from protocol.entry import read_metadata
from protocol.receipts import ReceiptEncoder, receipt_encoder

from .deduplication import DedupStatus, is_last_chunk_or_whole

if TYPE_CHECKING:
    from managed_ledger.position import Position

    from .interfaces import ClientConnection
    from .topic_base import TopicBase

log = logging.getLogger(__name__)

#: The message id Pulsar receipts a duplicate with: it was not stored again.
DUPLICATE_ID = (-1, -1)


@dataclass(eq=False)
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
    _after: "deque[tuple[int, Callable[[], None]]]" = field(default_factory=deque, init=False)
    #: After a failed append, later SENDs fail too (the client reconnects and resends them
    #: all in order), so nothing is stored ahead of the message that failed.
    _persistence_failed: bool = field(default=False, init=False)
    _encode_receipt: ReceiptEncoder = field(init=False)

    def __post_init__(self) -> None:
        self._encode_receipt = receipt_encoder(self.producer_id)

    def publish(self, sequence_id: int, highest_sequence_id: int, entry: bytes, num_messages: int,
                is_chunk: bool = False) -> None:
        """Append the entry (its metadata already checked by the connection); the receipt is
        written once it is durable, in arrival order."""
        deduplication = self.topic.deduplication
        tracked = deduplication is not None and (not is_chunk or is_last_chunk_or_whole(read_metadata(entry)))
        if tracked:
            status = deduplication.check(self.name, sequence_id, highest_sequence_id)
            if status is not DedupStatus.NEW:
                self.after_receipts(partial(self._answer_duplicate, status, sequence_id, highest_sequence_id,
                                            len(entry)))
                return
        if self._persistence_failed:
            self.connection.publish_completed(len(entry))
            self.connection.write(commands.send_error(
                self.producer_id, sequence_id, pb.PersistenceError,
                "An earlier message failed to persist; reconnect to resend in order"))
            return
        self._appended += 1
        # A callback, not a future: no future, done-callback and loop handle per message.
        self.topic.publish(entry, num_messages,
                           partial(self._persisted, sequence_id, highest_sequence_id, tracked, len(entry)))

    def _persisted(self, sequence_id: int, highest_sequence_id: int, tracked: bool, size: int,
                   position: "Position | None", error: BaseException | None) -> None:
        self._completed += 1
        connection = self.connection
        connection.publish_completed(size)
        if error is None:
            if tracked:
                self.topic.deduplication.record_persisted(self.name, max(sequence_id, highest_sequence_id), position)
            connection.write_frame(self._encode_receipt(sequence_id, highest_sequence_id, *position))
        else:
            self._failed(sequence_id, error, tracked)
        after = self._after
        while after and after[0][0] <= self._completed:
            after.popleft()[1]()

    def _failed(self, sequence_id: int, error: BaseException, tracked: bool) -> None:
        if tracked:
            self.topic.deduplication.forget_pushed(self.name)
        if isinstance(error, ManagedLedgerTerminatedError):
            self.connection.write(commands.send_error(
                self.producer_id, sequence_id, pb.TopicTerminatedError, "Topic was already terminated"))
            return
        log.warning("append to %s failed: %r", self.topic.name, error)
        self._persistence_failed = True
        self.connection.write(
            commands.send_error(self.producer_id, sequence_id, pb.PersistenceError, f"Failed to persist: {error!r}")
        )

    def after_receipts(self, answer: Callable[[], None]) -> None:
        """Run answer after the receipts of earlier SENDs (receipts keep arrival order, and a
        broker-initiated close follows what was sent before it)."""
        if self._completed < self._appended:
            self._after.append((self._appended, answer))
        else:
            answer()

    def _answer_duplicate(self, status: DedupStatus, sequence_id: int, highest_sequence_id: int,
                          size: int) -> None:
        self.connection.publish_completed(size)
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
