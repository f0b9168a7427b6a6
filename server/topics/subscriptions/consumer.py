"""A consumer attached to a subscription: its permits and the entries it has not acknowledged.

On durable Shared and Key_Shared subscriptions a consumer stops receiving once it holds
maxUnackedMessagesPerConsumer unacknowledged messages (the policy in force, read at every
change, so a new value applies to connected consumers too), as Pulsar's
blockedConsumerOnUnackedMsgs: blocked after a dispatch or a FLOW finds it at the limit; unblocked
by an acknowledgement that finds it at half the limit or less (counted before that ack), by a
removed limit at the next acknowledgement, and by any redelivery request.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable

from protocol import commands
from protocol import pulsar_api_pb2 as pb
from protocol.codec import encode_payload_frame
from server.policies.topic_limits import unacked_per_consumer
from server.topics.stats import TopicStats, pulsar_time

if TYPE_CHECKING:
    from managed_ledger.position import Entry, Position

    from ..interfaces import ClientConnection
    from .subscription import Subscription

log = logging.getLogger(__name__)


@dataclass(eq=False, slots=True)
class Consumer:
    consumer_id: int
    name: str
    subscription: "Subscription"
    connection: "ClientConnection"
    sub_type: int
    priority_level: int = 0
    partition_index: int = -1
    #: Key_Shared only: the consumer's mode, sticky ranges and out-of-order permission.
    key_shared_meta: pb.KeySharedMeta | None = None
    #: The key/values the client attached at SUBSCRIBE (shown in the consumer's stats).
    metadata: dict[str, str] = field(default_factory=dict)
    #: Messages the client can take now (FLOW adds, MESSAGE spends one per message in an entry).
    permits: int = field(default=0, init=False)
    #: While a dispatch counts permits as entries (the dispatcher's ReadLimits): the entries
    #: this consumer may still take in it; None otherwise.
    entry_allowance: int | None = field(default=None, init=False)
    #: Entries sent and not yet acknowledged -> messages in each.
    pending_acks: dict["Position", int] = field(default_factory=dict, init=False)
    #: Messages in pending_acks.
    unacked_messages: int = field(default=0, init=False)
    #: Whether maxUnackedMessagesPerConsumer applies (durable Shared and Key_Shared).
    unacked_limited: bool = field(default=False, init=False)
    blocked_on_unacked: bool = field(default=False, init=False)
    #: ACTIVE_CONSUMER_CHANGE waits for SUBSCRIBE's SUCCESS: the Go client drops it for a consumer
    #: it does not know yet, and would never learn it is active.
    subscribed: bool = field(default=False, init=False)
    _held_active: bool | None = field(default=None, init=False)
    told_end_of_topic: bool = field(default=False, init=False)
    connected_since: str = field(default_factory=lambda: pulsar_time(time.time_ns() // 1_000_000), init=False)
    #: Its redeliveries (msgRateRedeliver); what it is sent is counted by its subscription.
    stats: TopicStats = field(default_factory=TopicStats, init=False)

    @property
    def max_unacked(self) -> int:
        """maxUnackedMessagesPerConsumer in force now; 0 (or less): no limit."""
        if not self.unacked_limited:
            return 0
        topic = self.subscription.topic
        return unacked_per_consumer(topic.policies, topic.broker.config)

    def flow(self, permits: int) -> None:
        self.permits += permits
        self._block_if_at_limit()

    def _block_if_at_limit(self) -> None:
        if 0 < self.max_unacked <= self.unacked_messages:
            self.blocked_on_unacked = True

    @property
    def can_take_messages(self) -> bool:
        """Permits (or entries allowed), not blocked on unacked messages, and a connection that
        is not backed up."""
        room = self.permits > 0 if self.entry_allowance is None else self.entry_allowance > 0
        return room and not self.blocked_on_unacked and self.connection.writable

    def broker_stats(self) -> dict[str, str | int | float | bool]:
        """What CONSUMER_STATS answers, by CommandConsumerStatsResponse's field names, as Pulsar
        fills them: this consumer's counters and its subscription's backlog. Rates are not
        measured per consumer here: they answer 0."""
        return {
            "consumerName": self.name, "availablePermits": max(0, self.permits),
            "unackedMessages": self.unacked_messages, "blockedConsumerOnUnackedMsgs": self.blocked_on_unacked,
            "address": self.connection.remote, "connectedSince": self.connected_since,
            "type": pb.CommandSubscribe.SubType.Name(self.sub_type), "msgBacklog": self.subscription.backlog(),
            "msgRateOut": 0.0, "msgThroughputOut": 0.0, "msgRateRedeliver": 0.0, "msgRateExpired": 0.0,
            "messageAckRate": 0.0,
        }

    def send(self, entry: "Entry", num_messages: int, redelivery_count: int, ack_set: list[int] | None) -> None:
        """Write one stored entry as MESSAGE, bytes unchanged, and count it as unacknowledged."""
        position = entry.position
        self.pending_acks[position] = num_messages
        self.permits -= num_messages
        if self.entry_allowance is not None:
            self.entry_allowance -= 1
        self.unacked_messages += num_messages
        self._block_if_at_limit()
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

    def acknowledged(self, positions: Iterable["Position"]) -> int:
        """Forget acknowledged entries; returns the messages they held."""
        return self._forget(positions)

    def acknowledged_up_to(self, position: "Position") -> int:
        return self._forget([p for p in self.pending_acks if p <= position])

    def acknowledged_in_part(self, position: "Position", unacked_in_entry: int) -> int:
        """Part of a batch was acknowledged: only unacked_in_entry of its messages remain (no
        unblocking on a part, as in Pulsar)."""
        held = self.pending_acks.get(position)
        if held is None or unacked_in_entry >= held:
            return 0
        self.pending_acks[position] = unacked_in_entry
        self.unacked_messages -= held - unacked_in_entry
        return held - unacked_in_entry

    def take_pending(self, positions: Iterable["Position"] | None = None) -> list["Position"]:
        """Forget pending entries (all, or those named) and return them for redelivery; a
        redelivery request unblocks the consumer, as in Pulsar."""
        candidates = list(self.pending_acks) if positions is None else positions
        taken = sorted(p for p in candidates if p in self.pending_acks)
        for position in taken:
            self.unacked_messages -= self.pending_acks.pop(position)
        self.blocked_on_unacked = False
        return taken

    def _forget(self, positions: Iterable["Position"]) -> int:
        """Acknowledged entries: each may unblock the consumer, judged by the count before it
        is taken off (Pulsar's removePendingAcks)."""
        removed = 0
        for position in positions:
            messages = self.pending_acks.pop(position, None)
            if messages is None:
                continue
            if self.blocked_on_unacked:
                limit = self.max_unacked
                if limit <= 0 or self.unacked_messages <= limit // 2:
                    self.blocked_on_unacked = False
            self.unacked_messages -= messages
            removed += messages
        return removed

    def reached_end_of_topic(self) -> None:
        """Tell the client, once, that the terminated topic has nothing more for it. Only to
        clients that handle REACHED_END_OF_TOPIC: the C++ (Python) and Go clients close the
        connection on a command they do not know."""
        if not self.told_end_of_topic and self.connection.handles_end_of_topic:
            self.told_end_of_topic = True
            self.connection.write(commands.reached_end_of_topic(self.consumer_id))

    def set_active(self, is_active: bool) -> None:
        if not self.subscribed:
            self._held_active = is_active
            return
        self.connection.write(commands.active_consumer_change(self.consumer_id, is_active))

    def confirm_subscribed(self) -> None:
        """SUCCESS has been written: send the active state decided meanwhile, if any."""
        self.subscribed = True
        if self._held_active is not None:
            self.set_active(self._held_active)
            self._held_active = None

    def close_by_broker(self) -> None:
        """Tell the client to re-subscribe (after a seek, an unload or a shutdown)."""
        self.connection.close_consumer_by_broker(self)
