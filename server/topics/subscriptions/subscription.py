"""A subscription: a cursor on the topic's ledger, a dispatcher for its type, and its consumers."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from managed_ledger.compacted_view import CompactedCursor
from managed_ledger.interfaces import ManagedCursor, ManagedLedger
from managed_ledger.interned import interned
from managed_ledger.position import Position
from protocol import pulsar_api_pb2 as pb
from protocol.entry import read_metadata
from server.errors import ConsumerBusy, NotAllowed, ServiceNotReady
from server.topics.message_id import position_of
from server.topics.stats import TopicStats
from server.transactions.interfaces import TxnID
from server.transactions.pending_ack.ack_sets import acked_mask
from server.transactions.pending_ack.handle import PendingAckHandle

from .dispatcher import Dispatcher, ReadLimits, messages_in, unacked_in
from .dispatcher_key_shared import KeySharedDispatcher, LookAheadLimits
from .dispatcher_shared import SharedDispatcher
from .dispatcher_single_active import SingleActiveConsumerDispatcher
from .key_shared_selector import selector_for
from .read_backoff import BackoffTimes

if TYPE_CHECKING:
    from server.topics.interfaces import DispatchLimit
    from server.topics.topic import Topic

    from .consumer import Consumer

log = logging.getLogger(__name__)

SubType = pb.CommandSubscribe.SubType
SHARED_TYPES = (pb.CommandSubscribe.Shared, pb.CommandSubscribe.Key_Shared)
SUPPORTED_TYPES = (
    pb.CommandSubscribe.Exclusive, pb.CommandSubscribe.Failover, pb.CommandSubscribe.Shared,
    pb.CommandSubscribe.Key_Shared,
)


class Subscription:
    __slots__ = ("_fenced", "_pending_acks", "cursor", "dispatcher", "last_active", "name",
                 "reads_compacted", "redelivery_counts", "stats", "sub_type", "topic")

    def __init__(self, topic: "Topic", name: str, cursor: ManagedCursor) -> None:
        self.topic = topic
        self.name = name
        self.cursor = cursor
        self.sub_type: int | None = None
        self.dispatcher: Dispatcher | None = None
        #: position -> times redelivered on request (in memory, as Pulsar's redelivery tracker).
        self.redelivery_counts: dict[Position, int] = {}
        self.reads_compacted = False
        self.stats = TopicStats()   # its outbound counters only
        #: True while a seek resets the cursor: consumers re-subscribe only once it is done.
        self._fenced = False
        #: When it was loaded, or a consumer last joined, left or acknowledged (wall clock,
        #: seconds): subscription expiration measures inactivity from it.
        self.last_active = time.time()
        #: Its transactions' acks, made on first use (see pending_acks).
        self._pending_acks: PendingAckHandle | None = None

    @property
    def durable(self) -> bool:
        return self.cursor.durable

    @property
    def consumers(self) -> list["Consumer"]:
        return list(self.dispatcher.consumers) if self.dispatcher else []

    @property
    def blocked_on_unacked(self) -> bool:
        return self.dispatcher is not None and self.dispatcher.blocked_on_unacked

    def add_consumer(self, consumer: "Consumer") -> None:
        if consumer.sub_type not in SUPPORTED_TYPES:
            raise NotAllowed(f"Subscription type {SubType.Name(consumer.sub_type)} is not supported yet")
        if self._fenced:
            raise ServiceNotReady(f"Subscription {self.name} is fenced while a seek resets it")
        replaced = None
        if self.dispatcher is not None and self.dispatcher.consumers:
            self._check_compatible(consumer)
        elif self.dispatcher is None or not self._dispatcher_fits(consumer):
            replaced = self.dispatcher
            if replaced is not None:
                replaced.close()
            self.sub_type = consumer.sub_type
            self.dispatcher = self._new_dispatcher(consumer)
        self.dispatcher.add_consumer(consumer)
        self.last_active = time.time()
        self.cursor.set_active()   # the ledger caches adds for it while it keeps up
        if replaced is not None:
            # what the old dispatcher held for replay is gone: read again from mark-delete (as Pulsar
            # rewinds when a multi-consumer dispatcher gets its first consumer)
            self.dispatcher.rewind()
        self.notify_if_end_reached()

    def _check_compatible(self, consumer: "Consumer") -> None:
        """A consumer joining connected ones must match their type (and Key_Shared policy)."""
        if consumer.sub_type != self.sub_type:
            raise ConsumerBusy(
                f"Subscription is of different type. Active subscription type of '{SubType.Name(self.sub_type)}' "
                f"is different than the connecting consumer's type '{SubType.Name(consumer.sub_type)}'."
            )
        if isinstance(self.dispatcher, KeySharedDispatcher):
            reason = self.dispatcher.incompatibility(consumer.key_shared_meta)
            if reason is not None:
                raise ConsumerBusy(reason)

    def _dispatcher_fits(self, consumer: "Consumer") -> bool:
        """Whether the idle dispatcher can serve this consumer, or a new one must be made."""
        if consumer.sub_type != self.sub_type:
            return False
        return not isinstance(self.dispatcher, KeySharedDispatcher) or \
            self.dispatcher.incompatibility(consumer.key_shared_meta) is None

    def _new_dispatcher(self, consumer: "Consumer") -> Dispatcher:
        config = self.topic.broker.config
        backoff = BackoffTimes(config.dispatcher_read_failure_backoff_initial_time_in_ms / 1000,
                               config.dispatcher_read_failure_backoff_max_time_in_ms / 1000,
                               config.dispatcher_read_failure_backoff_mandatory_stop_time_in_ms / 1000)
        limits = interned(ReadLimits(config.dispatcher_max_read_batch_size, config.dispatcher_max_read_size_bytes,
                                     config.precise_dispatcher_flow_control, backoff))
        if consumer.sub_type == pb.CommandSubscribe.Key_Shared:
            meta = consumer.key_shared_meta
            selector = selector_for(meta, config)
            look_ahead = LookAheadLimits(config.key_shared_look_ahead_msg_in_replay_threshold_per_consumer,
                                         config.key_shared_look_ahead_msg_in_replay_threshold_per_subscription)
            return KeySharedDispatcher(self, limits, meta, selector, look_ahead)
        if consumer.sub_type == pb.CommandSubscribe.Shared:
            return SharedDispatcher(self, limits)
        return SingleActiveConsumerDispatcher(self, limits, consumer.sub_type, self.topic.name.partition_index,
                                              config.active_consumer_failover_delay_time_millis / 1000)

    def read_compacted(self, ledger: ManagedLedger, sub_type: int) -> None:
        """A consumer asked for the compacted view: read it while within its horizon.
        Only for Exclusive and Failover subscriptions (and readers), as in Pulsar."""
        if sub_type in SHARED_TYPES:
            raise NotAllowed("Read compacted is only allowed on Exclusive or Failover subscriptions")
        if not self.reads_compacted:
            self.reads_compacted = True
            self.cursor = CompactedCursor(self.cursor, ledger)
            if self.dispatcher is not None:
                self.dispatcher.cursor = self.cursor

    def remove_consumer(self, consumer: "Consumer", resetting: bool = False) -> None:
        """A consumer left. A non-durable subscription ends with its last consumer, except
        during a seek, when its reader comes back to the reset cursor."""
        if self.dispatcher is not None:
            self.dispatcher.remove_consumer(consumer)
        self.last_active = time.time()
        if not self.consumers:
            self.cursor.set_inactive()
            if self.dispatcher is not None:   # as Pulsar cancels its pending read: an idle
                self.dispatcher.stop_reading()   # subscription holds no waiting read (task, futures)
        if not self.durable and not self.consumers and not resetting:
            self.close()
            self.topic.forget_subscription(self)

    def flow(self, consumer: "Consumer", permits: int) -> None:
        if self.dispatcher is not None:
            self.dispatcher.flow(consumer, permits)

    # -- acknowledgements -----------------------------------------------------------------

    def acknowledge(self, consumer: "Consumer", ack: pb.CommandAck) -> None:
        """A plain acknowledgement (see acknowledge_in_txn for those carrying a transaction)."""
        self.last_active = time.time()
        if ack.ack_type == pb.CommandAck.Cumulative:
            self._acknowledge_cumulative(consumer, ack)
        else:
            self._acknowledge_individual(consumer, ack)
        self.notify_if_end_reached()

    def _acknowledge_individual(self, consumer: "Consumer", ack: pb.CommandAck) -> None:
        whole: list[Position] = []
        for message_id in ack.message_id:
            position = position_of(message_id)
            if not self._acknowledge_in_part(consumer, position, message_id):
                whole.append(position)
        self._delete(whole)
        if self.dispatcher is not None:
            self.dispatcher.acknowledged(consumer, whole)

    def _delete(self, positions: list[Position]) -> None:
        """Whole entries acknowledged: the cursor records them, their redelivery counts go."""
        self.cursor.delete(positions)
        for position in positions:
            self.redelivery_counts.pop(position, None)

    def _mark_delete_up_to(self, position: Position) -> None:
        """Everything up to position acknowledged (mark-delete never moves back), and the
        redelivery counts behind it gone."""
        if position > self.cursor.mark_delete_position:
            self.cursor.mark_delete(position)
        for acked in [p for p in self.redelivery_counts if p <= position]:
            del self.redelivery_counts[acked]

    def _cumulative_id(self, ack: pb.CommandAck) -> pb.MessageIdData:
        if self.sub_type in SHARED_TYPES:
            raise NotAllowed("Cumulative acknowledgement is not allowed on Shared and Key_Shared subscriptions")
        if len(ack.message_id) != 1:
            raise NotAllowed("A cumulative acknowledgement carries exactly one message id")
        return ack.message_id[0]

    def _acknowledge_cumulative(self, consumer: "Consumer", ack: pb.CommandAck) -> None:
        message_id = self._cumulative_id(ack)
        position = position_of(message_id)
        if self._acknowledge_in_part(consumer, position, message_id):
            position = Position(position.ledger_id, position.entry_id - 1)
        self._mark_delete_up_to(position)
        if self.dispatcher is not None:
            self.dispatcher.acknowledged_up_to(consumer, position)

    def expire_up_to(self, position: Position) -> bool:
        """Message TTL: acknowledge everything up to position on behalf of the consumers
        (what they hold of it is forgotten), never past the max-read position. False when it was
        acknowledged already."""
        position = min(position, self.topic.ledger.readable_end)
        if position <= self.cursor.mark_delete_position:
            return False
        self._mark_delete_up_to(position)
        for consumer in self.consumers:
            self.dispatcher.acknowledged_up_to(consumer, position)
        self.notify_if_end_reached()
        return True

    def _acknowledge_in_part(self, consumer: "Consumer", position: Position, message_id: pb.MessageIdData) -> bool:
        """True when message_id acknowledges only part of a batch (bits SET in ack_set = still
        unacknowledged), so the entry stays unacknowledged. With acknowledgmentAtBatchIndexLevelEnabled
        the part is recorded; without it the ack set is ignored and the whole batch is delivered
        again later (as Pulsar), never taken as acknowledged. The cursor merges the part with
        earlier ones: a client that got a redelivered batch reports the indexes it skipped as
        unacknowledged, and only every ack agreeing keeps a message unacknowledged."""
        if not any(message_id.ack_set):
            return False
        if not self.topic.broker.config.batch_index_ack_enabled:
            return True
        words = self.cursor.ack_batch_indexes(position, list(message_id.ack_set))
        if words is None:
            return False
        if self.dispatcher is not None:
            self.dispatcher.acknowledged_in_part(consumer, position, unacked_in(words))
        return True

    def ack_set_for_dispatch(self, position: Position) -> list[int] | None:
        """The batch indexes still to deliver: those the cursor has not recorded as acknowledged
        (acknowledgmentAtBatchIndexLevelEnabled) and, as in Pulsar whatever that key says, no
        transaction holds."""
        words = self.cursor.batch_ack_set(position) if self.topic.broker.config.batch_index_ack_enabled else None
        if self._pending_acks is not None:
            words = self._pending_acks.unacked_words(position, words)
        return words

    # -- transactions -----------------------------------------------------------------------

    @property
    def topic_name(self) -> str:
        return str(self.topic.name)

    @property
    def pending_acks(self) -> PendingAckHandle:
        """Its transactions' acks (the transactions contract's PendingAcks)."""
        if self._pending_acks is None:
            self._pending_acks = PendingAckHandle(self, self.topic.broker.storage)
        return self._pending_acks

    @property
    def held_acks(self) -> PendingAckHandle | None:
        """The pending acks while a transaction holds some (dispatch skips what they hide)."""
        pending = self._pending_acks
        return pending if pending is not None and pending.holds_any else None

    async def acknowledge_in_txn(self, consumer: "Consumer", ack: pb.CommandAck) -> None:
        """An ACK carrying a transaction: held in the pending acks (durably) until it ends, as
        Pulsar's transactionIndividualAcknowledge / transactionCumulativeAcknowledge. The
        consumer no longer counts what it acknowledged as unacknowledged."""
        if not self.topic.broker.config.transaction_coordinator_enabled:
            raise NotAllowed("Server don't support transaction ack!")
        if not self.durable:   # its pending-ack log would outlive it
            raise NotAllowed("Transaction acknowledge is only supported on durable subscriptions")
        txn = TxnID(ack.txnid_most_bits, ack.txnid_least_bits)
        self.last_active = time.time()
        if ack.ack_type == pb.CommandAck.Cumulative:
            message_id = self._cumulative_id(ack)
            position = position_of(message_id)
            if any(message_id.ack_set):   # a batch acknowledged in part: the entries before it
                position = Position(position.ledger_id, position.entry_id - 1)
            await self.pending_acks.acknowledge_cumulative(txn, position)
            if self.dispatcher is not None:
                self.dispatcher.acknowledged_up_to(consumer, position)
            return
        acks: dict[Position, tuple[int | None, int]] = {}
        for message_id in ack.message_id:
            position = position_of(message_id)
            size = message_id.batch_size if message_id.HasField("batch_size") else 0
            if any(message_id.ack_set):
                size = size or await self._batch_size(position)
                acks[position] = (acked_mask(list(message_id.ack_set), size), size)
            else:
                acks[position] = (None, size)
        pending = self.pending_acks
        await pending.acknowledge_individual(txn, acks)
        if self.dispatcher is not None:
            for position in acks:
                left = self.ack_set_for_dispatch(position)
                if pending.hides(position) or (left is not None and not any(left)):
                    self.dispatcher.acknowledged(consumer, [position])
                elif left is not None:
                    self.dispatcher.acknowledged_in_part(consumer, position, unacked_in(left))

    async def _batch_size(self, position: Position) -> int:
        """The messages in a stored entry (for a client that sent no batch_size)."""
        entry = await self.topic.ledger.read_entry(position)
        return messages_in(read_metadata(entry.data)) if entry is not None else 0

    def commit_acks(self, acks: dict[Position, list[int] | None]) -> None:
        """A transaction's individual acks, committed: whole entries and batch indexes."""
        whole = [p for p, words in acks.items() if words is None or not any(words)]
        if self.topic.broker.config.batch_index_ack_enabled:
            for position, words in acks.items():
                if words is not None and any(words):
                    self.cursor.ack_batch_indexes(position, words)
        self._delete(whole)
        self.notify_if_end_reached()

    def commit_cumulative(self, position: Position) -> None:
        self._mark_delete_up_to(position)
        self.notify_if_end_reached()

    async def close_pending_acks(self) -> None:
        if self._pending_acks is not None:
            await self._pending_acks.close()

    def redeliver_released(self, positions: list[Position]) -> None:
        """An aborted transaction released these messages (individually acknowledged ones)."""
        if self.dispatcher is not None:
            self.dispatcher.replay_released(positions)

    # -- redelivery and seek ----------------------------------------------------------------

    def count_redelivery(self, position: Position) -> None:
        self.redelivery_counts[position] = self.redelivery_counts.get(position, 0) + 1

    def redeliver(self, consumer: "Consumer", positions: list[Position] | None) -> None:
        """A consumer's request: its unacknowledged messages (all, or those named) go out again,
        counted for msgRateRedeliver as Pulsar counts them."""
        if self.dispatcher is not None:
            before = consumer.unacked_messages
            self.dispatcher.redeliver(consumer, positions)
            taken = max(0, before - consumer.unacked_messages)
            self.stats.redelivered(taken)
            consumer.stats.redelivered(taken)

    async def reset(self, position: Position) -> None:
        """Seek: disconnect every consumer (they re-subscribe), move the cursor, read from there.
        Fenced meanwhile, as Pulsar's subscription is: a consumer that came back before the seek
        is answered would get messages its client drops while the seek is in progress."""
        self._fenced = True
        try:
            for consumer in self.consumers:
                consumer.close_by_broker()
                self.remove_consumer(consumer, resetting=True)
            self.redelivery_counts.clear()
            await self.cursor.reset(position)
            if self.dispatcher is not None:
                self.dispatcher.rewind()
        finally:
            self._fenced = False

    def dispatch_throttle(self) -> "DispatchLimit | None":
        """The dispatch rates this subscription's reads obey now (None: none)."""
        limits = self.topic.rate_limits
        return limits.dispatch(self.name) if limits is not None else None

    def dispatched(self, messages: int, size: int) -> None:
        self.stats.dispatched(messages, size)
        self.topic.stats.dispatched(messages, size)

    def clear_backlog(self) -> None:
        """Acknowledge everything published so far (admin skip_all / clear-backlog), up to the
        max-read position: an open transaction's entries are not skipped before they are seen."""
        last = self.topic.ledger.readable_end
        if last.entry_id >= 0 and last > self.cursor.mark_delete_position:
            self.cursor.mark_delete(last)
        self.notify_if_end_reached()

    def notify_if_end_reached(self) -> None:
        """On a terminated topic, consumers that acknowledged everything learn that nothing
        more will come (Pulsar's REACHED_END_OF_TOPIC)."""
        if self.topic.terminated and self.consumers and self.cursor.backlog() == 0:
            for consumer in self.consumers:
                consumer.reached_end_of_topic()

    def backlog(self) -> int:
        return self.cursor.backlog()

    def close(self) -> None:
        if self.dispatcher is not None:
            self.dispatcher.close()
