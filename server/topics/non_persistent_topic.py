"""Non-persistent topics: nothing stored; each message goes to the connected consumers now.

As Pulsar's NonPersistentTopic: a published message is receipted at once with message id
(0, 0) and handed to every subscription; a subscription gives it to one of its consumers that
has permits (by subscription type) or drops it and counts the drop. Nothing is replayed, so
acknowledgements and redelivery requests have nothing to act on, and seek is refused.
Subscriptions live as long as they have consumers.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Callable, Protocol

from managed_ledger.position import Entry, Position
from protocol import pulsar_api_pb2 as pb
from protocol.entry import read_metadata
from server.errors import ConsumerBusy, NotAllowed
from server.policies.topic_limits import check_consumer_room, check_subscription_room

from .stats import TopicStats
from .subscriptions.active_consumer import pick_active
from .subscriptions.consumer import Consumer
from .subscriptions.dispatcher_key_shared import keyed_entry
from .subscriptions.key_shared_selector import policy_conflict, selector_for
from .topic_base import TopicBase, key_shared_meta_of
from .topic_name import TopicName

if TYPE_CHECKING:
    from server.config import BrokerConfig

    from .interfaces import ClientConnection, TopicBroker

log = logging.getLogger(__name__)

SubType = pb.CommandSubscribe.SubType
#: Where every non-persistent message "is": Pulsar receipts and delivers them all as 0:0.
NON_PERSISTENT_POSITION = Position(0, 0)


class ConsumerSelector(Protocol):
    """Picks the consumer of one message (None: nobody may take it now, so it is dropped).
    One per subscription type."""

    consumers: list[Consumer]

    def add(self, consumer: Consumer) -> None: ...

    def remove(self, consumer: Consumer) -> None: ...

    def select(self, entry: Entry) -> Consumer | None: ...


class RoundRobinSelector:
    """Shared: the next consumer, in turn, that has permits."""

    def __init__(self) -> None:
        self.consumers: list[Consumer] = []
        self._next = 0

    def add(self, consumer: Consumer) -> None:
        self.consumers.append(consumer)

    def remove(self, consumer: Consumer) -> None:
        if consumer in self.consumers:
            self.consumers.remove(consumer)

    def select(self, entry: Entry) -> Consumer | None:
        count = len(self.consumers)
        for step in range(count):
            consumer = self.consumers[(self._next + step) % count]
            if consumer.can_take_messages:
                self._next = (self._next + step + 1) % count
                return consumer
        return None


class SingleActiveSelector:
    """Exclusive and Failover: the active consumer, picked as on persistent topics
    (active_consumer.py), told to every Failover consumer."""

    def __init__(self, sub_type: int, topic: TopicName) -> None:
        self.consumers: list[Consumer] = []
        self._sub_type = sub_type
        self._topic = topic
        self._active: Consumer | None = None

    def add(self, consumer: Consumer) -> None:
        if self._sub_type == pb.CommandSubscribe.Exclusive and self.consumers:
            raise ConsumerBusy("Exclusive consumer is already connected")
        self.consumers.append(consumer)
        self._pick_active()

    def remove(self, consumer: Consumer) -> None:
        if consumer in self.consumers:
            self.consumers.remove(consumer)
            self._pick_active()

    def _pick_active(self) -> None:
        self._active = pick_active(self.consumers, self._topic.partition_index, str(self._topic))
        if self._active is not None and self._sub_type == pb.CommandSubscribe.Failover:
            for consumer in self.consumers:
                consumer.set_active(consumer is self._active)

    def select(self, entry: Entry) -> Consumer | None:
        active = self._active
        return active if active is not None and active.can_take_messages else None


class StickyKeySelector:
    """Key_Shared: the owner of the message's sticky-key hash, if it has permits; otherwise the
    message is dropped (as Pulsar's non-persistent Key_Shared dispatcher does). Nothing is kept,
    so there is no per-key ordering across consumer changes to protect."""

    def __init__(self, meta: pb.KeySharedMeta, config: "BrokerConfig") -> None:
        self.consumers: list[Consumer] = []
        self._meta = meta
        self._by_hash = selector_for(meta, config)

    def add(self, consumer: Consumer) -> None:
        conflict = policy_conflict(self._meta, consumer.key_shared_meta) if self.consumers else None
        if conflict is not None:
            raise ConsumerBusy(conflict)
        self._by_hash.add_consumer(consumer)
        self.consumers.append(consumer)

    def remove(self, consumer: Consumer) -> None:
        if consumer in self.consumers:
            self.consumers.remove(consumer)
            self._by_hash.remove_consumer(consumer)

    def select(self, entry: Entry) -> Consumer | None:
        consumer = self._by_hash.select(keyed_entry(read_metadata(entry.data)).key_hash)
        return consumer if consumer is not None and consumer.can_take_messages else None


class NonPersistentSubscription:
    durable = False
    blocked_on_unacked = False   # nothing stays unacknowledged

    def __init__(self, topic: "NonPersistentTopic", name: str, command: pb.CommandSubscribe) -> None:
        self.topic = topic
        self.name = name
        self.sub_type = command.subType
        self.selector = _selector_for(command, topic.name, topic.broker.config)
        self.dropped_messages = 0
        self.stats = TopicStats()

    def dispatched(self, messages: int, size: int) -> None:
        self.stats.dispatched(messages, size)
        self.topic.stats.dispatched(messages, size)

    @property
    def consumers(self) -> list[Consumer]:
        return list(self.selector.consumers)

    def add_consumer(self, consumer: Consumer) -> None:
        if consumer.sub_type != self.sub_type:
            raise ConsumerBusy(
                f"Subscription {self.name} is of type {SubType.Name(self.sub_type)}, "
                f"not {SubType.Name(consumer.sub_type)}"
            )
        taken = len(self.selector.consumers)
        if not (taken and self.sub_type == pb.CommandSubscribe.Exclusive):   # refused below, as Pulsar words it
            check_subscription_room(self.topic, taken)
        self.selector.add(consumer)

    def remove_consumer(self, consumer: Consumer, resetting: bool = False) -> None:
        self.selector.remove(consumer)
        if not self.selector.consumers:
            self.topic.forget_subscription(self)

    def send(self, entry: Entry, num_messages: int) -> None:
        consumer = self.selector.select(entry)
        if consumer is None:
            self.dropped_messages += num_messages
            return
        consumer.send(entry, num_messages, 0, None)
        consumer.acknowledged([entry.position])  # nothing to acknowledge: it is gone already
        self.dispatched(num_messages, len(entry.data))

    def flow(self, consumer: Consumer, permits: int) -> None:
        consumer.flow(permits)

    def acknowledge(self, consumer: Consumer, ack: pb.CommandAck) -> None:
        """Nothing is kept, so nothing is acknowledged."""

    async def acknowledge_in_txn(self, consumer: Consumer, ack: pb.CommandAck) -> None:
        """Refused in Pulsar's words: only persistent subscriptions hold transactional acks."""
        if not self.topic.broker.config.transaction_coordinator_enabled:
            raise NotAllowed("Server don't support transaction ack!")
        raise NotAllowed("Transaction acknowledge only support the `PersistentSubscription`.")

    def redeliver(self, consumer: Consumer, positions: list[Position] | None) -> None:
        """Nothing is kept, so nothing can be delivered again."""

    async def reset(self, position: Position) -> None:
        raise NotAllowed(f"Seek is not supported on non-persistent topic {self.topic.name}")

    def backlog(self) -> int:
        return 0

    def close(self) -> None:
        for consumer in self.consumers:
            self.selector.remove(consumer)


def _selector_for(command: pb.CommandSubscribe, topic: TopicName, config: "BrokerConfig") -> ConsumerSelector:
    """The selector of a subscription, from the SUBSCRIBE that creates it."""
    sub_type = command.subType
    if sub_type == pb.CommandSubscribe.Shared:
        return RoundRobinSelector()
    if sub_type == pb.CommandSubscribe.Key_Shared:
        return StickyKeySelector(key_shared_meta_of(command), config)
    if sub_type in (pb.CommandSubscribe.Exclusive, pb.CommandSubscribe.Failover):
        return SingleActiveSelector(sub_type, topic)
    raise NotAllowed(f"Subscription type {SubType.Name(sub_type)} is not supported on non-persistent topics yet")


class NonPersistentTopic(TopicBase):
    __slots__ = ()

    def __init__(self, broker: "TopicBroker", name: TopicName) -> None:
        super().__init__(broker, name, None, None, {})

    def publish(self, entries: list[bytes], num_messages: int,
                on_done: Callable[[Position, BaseException | None], None]) -> None:
        """Hand the message to every subscription now; receipted at once as 0:0. (Positions
        are not consecutive here, so producers publish one entry at a time.)"""
        (entry,) = entries
        self.stats.published(num_messages, len(entry))
        if self.publish_limits:
            self.count_against_publish_limits(num_messages, len(entry))
        message = Entry(NON_PERSISTENT_POSITION, entry)
        for subscription in list(self.subscriptions.values()):
            subscription.send(message, num_messages)
        on_done(NON_PERSISTENT_POSITION, None)

    @property
    def dropped_messages(self) -> int:
        return sum(s.dropped_messages for s in self.subscriptions.values())

    async def subscribe(self, connection: "ClientConnection", command: pb.CommandSubscribe) -> Consumer:
        subscription = self.subscriptions.get(command.subscription)
        if subscription is None:
            subscription = NonPersistentSubscription(self, command.subscription, command)
        check_consumer_room(self)
        consumer = self.new_consumer(connection, command, subscription)
        subscription.add_consumer(consumer)
        self.subscriptions[command.subscription] = subscription
        return consumer

    async def create_initial_subscription(self, name: str) -> None:
        """A producer's initial subscription: as Pulsar, accepted and nothing kept, since a
        non-persistent subscription holds no messages until a consumer attaches."""

    async def unsubscribe(self, subscription: NonPersistentSubscription, consumer: Consumer) -> None:
        self.check_sole_consumer(subscription, consumer)
        subscription.remove_consumer(consumer)

    async def last_message_id(self) -> tuple[Position, int]:
        raise NotAllowed(f"GetLastMessageId is not supported on non-persistent topic {self.name}")

    async def store_epoch(self, epoch: int) -> None:
        """A non-persistent topic's epoch lives as long as the topic does (as in Pulsar)."""

    async def close(self) -> None:
        self.access.close_all()
        for subscription in list(self.subscriptions.values()):
            subscription.close()
        self.subscriptions.clear()
