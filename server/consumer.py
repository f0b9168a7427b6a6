"""A consumer attached to a subscription: its permits and the entries it has not acknowledged."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable

from protocol import commands
from protocol import pulsar_api_pb2 as pb
from protocol.codec import encode_payload_frame

if TYPE_CHECKING:
    from managed_ledger.position import Entry, Position

    from .connection import Connection
    from .subscription import Subscription

log = logging.getLogger(__name__)


@dataclass(eq=False)
class Consumer:
    consumer_id: int
    name: str
    subscription: "Subscription"
    connection: "Connection"
    sub_type: int
    priority_level: int = 0
    partition_index: int = -1
    #: Key_Shared only: the consumer's mode, sticky ranges and out-of-order permission.
    key_shared_meta: pb.KeySharedMeta | None = None
    #: Messages the client can take now (FLOW adds, MESSAGE spends one per message in an entry).
    permits: int = field(default=0, init=False)
    #: Entries sent and not yet acknowledged -> messages in each.
    pending_acks: dict["Position", int] = field(default_factory=dict, init=False)

    def send(self, entry: "Entry", num_messages: int, redelivery_count: int, ack_set: list[int] | None) -> None:
        """Write one stored entry as MESSAGE, bytes unchanged, and count it as unacknowledged."""
        position = entry.position
        self.pending_acks[position] = num_messages
        self.permits -= num_messages
        header, body = encode_payload_frame(
            commands.message(
                self.consumer_id,
                position.ledger_id,
                position.entry_id,
                partition=self.partition_index,
                redelivery_count=redelivery_count,
                ack_set=ack_set,
            ),
            entry.data,
        )
        self.connection.write_parts(header, body)

    def acknowledged(self, positions: Iterable["Position"]) -> None:
        for position in positions:
            self.pending_acks.pop(position, None)

    def acknowledged_up_to(self, position: "Position") -> None:
        for pending in [p for p in self.pending_acks if p <= position]:
            del self.pending_acks[pending]

    def take_pending(self, positions: Iterable["Position"] | None = None) -> list["Position"]:
        """Forget pending entries (all, or those named) and return them for redelivery."""
        if positions is None:
            taken = sorted(self.pending_acks)
            self.pending_acks.clear()
            return taken
        return sorted(p for p in positions if self.pending_acks.pop(p, None) is not None)

    def set_active(self, is_active: bool) -> None:
        self.connection.write(commands.active_consumer_change(self.consumer_id, is_active))

    def close_by_broker(self) -> None:
        """Tell the client to re-subscribe (after a seek, an unload or a shutdown)."""
        self.connection.close_consumer_by_broker(self)
