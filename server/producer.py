"""A producer attached to a topic: turns SENDs into appends and appends into receipts."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

from protocol import commands
from protocol import pulsar_api_pb2 as pb

if TYPE_CHECKING:
    from managed_ledger.position import Position

    from .connection import Connection
    from .topic import Topic

log = logging.getLogger(__name__)


@dataclass(eq=False)
class Producer:
    producer_id: int
    name: str
    topic: "Topic"
    connection: "Connection"
    user_provided_name: bool
    access_mode: int = pb.Shared
    schema_version: bytes | None = None
    pending: int = field(default=0, init=False)

    def publish(self, sequence_id: int, highest_sequence_id: int, entry: bytes, num_messages: int) -> None:
        """Append the entry; the receipt is written once it is durable, in arrival order."""
        self.pending += 1
        append = self.topic.publish(entry, num_messages)
        append.add_done_callback(partial(self._persisted, sequence_id, highest_sequence_id))

    def _persisted(self, sequence_id: int, highest_sequence_id: int, append: "asyncio.Future[Position]") -> None:
        self.pending -= 1
        self.connection.publish_completed()
        if append.cancelled() or append.exception() is not None:
            error = "cancelled" if append.cancelled() else repr(append.exception())
            log.warning("append to %s failed: %s", self.topic.name, error)
            self.connection.write(
                commands.send_error(self.producer_id, sequence_id, pb.PersistenceError, f"Failed to persist: {error}")
            )
            return
        position = append.result()
        self.connection.write(
            commands.send_receipt(
                self.producer_id, sequence_id, position.ledger_id, position.entry_id, highest_sequence_id
            )
        )

    def close_by_broker(self) -> None:
        """Tell the client to look the topic up again and re-create this producer."""
        self.connection.close_producer_by_broker(self)
