"""What every topic shares, persistent or not: its producers (admission, naming, removal) and
the bookkeeping of its subscriptions' consumers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterable

from protocol import pulsar_api_pb2 as pb
from server.errors import ConsumerBusy
from server.policies.topic_limits import check_producer_room

from .producer import Producer
from .producer_access import ProducerAccess
from .stats import TopicStats
from .subscriptions.consumer import Consumer

if TYPE_CHECKING:
    from .deduplication import MessageDeduplication
    from .interfaces import ClientConnection, PublishLimit, TopicBroker, TopicRateLimits, TopicTransactions
    from .topic_name import TopicName


class TopicBase:
    """What a persistent and a non-persistent topic hold alike (slotted: a broker holds
    100,000s of topics)."""

    __slots__ = ("broker", "name", "access", "deduplication", "stats", "subscriptions", "policies",
                 "publish_limits", "rate_limits", "transaction_buffer")

    #: Whether entries published together get consecutive positions (a stored log's), so that
    #: one publish may carry a run of them.
    positions_are_consecutive = False

    def __init__(self, broker: "TopicBroker", name: "TopicName", epoch: int | None,
                 deduplication: "MessageDeduplication | None", subscriptions: dict) -> None:
        self.broker = broker
        self.name = name
        self.access = ProducerAccess(self, epoch)
        self.deduplication = deduplication
        self.subscriptions = subscriptions
        self.stats = TopicStats()
        #: The policies in force (server/policies/catalog.applied_view), set at load and on change.
        self.policies: dict = {}
        #: The publish rates this topic's SENDs count against (none: nothing limits it), and its
        #: dispatch and subscribe rates; set with the policies (server/policies/rate_limits.py).
        self.publish_limits: "tuple[PublishLimit, ...]" = ()
        self.rate_limits: "TopicRateLimits | None" = None
        #: A persistent topic's transaction buffer, while transactions are enabled (set by the
        #: broker at load); None: transactional SENDs are refused.
        self.transaction_buffer: "TopicTransactions | None" = None

    @property
    def terminated(self) -> bool:
        """Only a persistent topic can be terminated."""
        return False

    @property
    def producers(self) -> list[Producer]:
        return self.access.producers

    async def add_producer(
        self, connection: "ClientConnection", request: pb.CommandProducer, schema_version: bytes | None,
        on_queued: Callable[[Producer], None],
    ) -> Producer:
        """Admit a producer under its access mode and the topic's limit; WaitForExclusive ones
        call on_queued first."""
        check_producer_room(self, on_request=False)
        producer = Producer(
            producer_id=request.producer_id,
            name=request.producer_name or self.broker.new_producer_name(),
            topic=self,
            connection=connection,
            user_provided_name=bool(request.producer_name),
            access_mode=request.producer_access_mode,
            schema_version=schema_version,
            requested_epoch=request.topic_epoch if request.HasField("topic_epoch") else None,
            metadata=key_values(request.metadata),
        )
        producer.topic_epoch = await self.access.admit(producer, producer.requested_epoch, lambda: on_queued(producer))
        return producer

    def is_idle(self) -> bool:
        """No producer, no consumer, no stored data: a consumer's schema may then become the
        topic's first (as in Pulsar's addSchemaIfIdleOrCheckCompatible)."""
        return not self.producers and not self.holds_data() \
            and not any(subscription.consumers for subscription in self.subscriptions.values())

    def holds_data(self) -> bool:
        return False

    def count_against_publish_limits(self, num_messages: int, size: int) -> None:
        """A run of messages taken, against the publish rates in force (called, once per run of
        SENDs, only when publish_limits is not empty)."""
        for limit in self.publish_limits:
            limit.published(num_messages, size, self.producers)

    def remove_producer(self, producer: Producer) -> None:
        self.access.remove(producer)

    def last_sequence_id(self, producer_name: str) -> int:
        """-1, or with deduplication the highest sequence id this producer name published."""
        return -1 if self.deduplication is None else self.deduplication.last_sequence_id(producer_name)

    # -- consumers --------------------------------------------------------------------------

    def new_consumer(self, connection: "ClientConnection", command: pb.CommandSubscribe, subscription) -> Consumer:
        """The consumer a SUBSCRIBE creates (not yet added to its subscription)."""
        return Consumer(
            consumer_id=command.consumer_id,
            name=command.consumer_name or f"consumer-{command.consumer_id}",
            subscription=subscription,
            connection=connection,
            sub_type=command.subType,
            priority_level=command.priority_level,
            partition_index=self.name.partition_index,
            key_shared_meta=key_shared_meta_of(command),
            metadata=key_values(command.metadata),
        )

    def forget_subscription(self, subscription) -> None:
        """Drop a non-durable subscription whose last consumer left."""
        if self.subscriptions.get(subscription.name) is subscription:
            del self.subscriptions[subscription.name]

    @staticmethod
    def check_sole_consumer(subscription, consumer: Consumer) -> None:
        """Unsubscribing is refused while other consumers are connected (as Pulsar does)."""
        if any(c is not consumer for c in subscription.consumers):
            raise ConsumerBusy(f"Subscription {subscription.name} has other connected consumers")


def key_values(pairs: Iterable[pb.KeyValue]) -> dict[str, str]:
    """The metadata a client attaches to PRODUCER or SUBSCRIBE (shown in stats)."""
    return {pair.key: pair.value for pair in pairs}


def key_shared_meta_of(command: pb.CommandSubscribe) -> pb.KeySharedMeta | None:
    """A Key_Shared consumer's policy; AUTO_SPLIT when the client sends none (as Pulsar does)."""
    if command.subType != pb.CommandSubscribe.Key_Shared:
        return None
    if command.HasField("keySharedMeta"):
        return command.keySharedMeta
    return pb.KeySharedMeta(keySharedMode=pb.AUTO_SPLIT)
