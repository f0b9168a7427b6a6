"""A persistent topic: its managed ledger, producers and subscriptions."""

from __future__ import annotations

import asyncio
import itertools
import logging
from typing import TYPE_CHECKING

from managed_ledger.interfaces import ManagedLedger
from managed_ledger.position import EARLIEST, LATEST, Entry, InitialPosition, Position
from protocol import pulsar_api_pb2 as pb
from protocol.commands import to_signed
from protocol.entry import read_metadata

from .consumer import Consumer
from .errors import ConsumerBusy, ProducerBusy, ProducerFenced
from .producer import Producer
from .stats import TopicStats
from .subscription import Subscription
from .topic_name import TopicName

if TYPE_CHECKING:
    from .broker_service import BrokerService
    from .connection import Connection

log = logging.getLogger(__name__)

_producer_names = itertools.count()


class Topic:
    def __init__(self, broker: "BrokerService", name: TopicName, ledger: ManagedLedger) -> None:
        self.broker = broker
        self.name = name
        self.ledger = ledger
        self.producers: list[Producer] = []
        self.subscriptions: dict[str, Subscription] = {
            sub_name: Subscription(self, sub_name, cursor) for sub_name, cursor in ledger.cursors.items()
        }
        self.stats = TopicStats()
        self._subscribing = asyncio.Lock()

    # -- producing --------------------------------------------------------------------------

    def add_producer(
        self, connection: "Connection", producer_id: int, name: str | None, access_mode: int,
        schema_version: bytes | None,
    ) -> Producer:
        if name and any(p.name == name for p in self.producers):
            raise ProducerBusy(f"Producer with name '{name}' is already connected to topic {self.name}")
        if access_mode != pb.Shared and self.producers:
            if access_mode == pb.ExclusiveWithFencing:
                for other in list(self.producers):
                    other.close_by_broker()
                    self.remove_producer(other)
            else:
                raise ProducerFenced(f"Topic {self.name} already has a producer and this one asks for exclusive access")
        elif any(p.access_mode != pb.Shared for p in self.producers):
            raise ProducerBusy(f"Topic {self.name} has an exclusive producer")
        producer = Producer(
            producer_id=producer_id,
            name=name or f"{self.broker.config.cluster_name}-0-{next(_producer_names)}",
            topic=self,
            connection=connection,
            user_provided_name=bool(name),
            access_mode=access_mode,
            schema_version=schema_version,
        )
        self.producers.append(producer)
        return producer

    def remove_producer(self, producer: Producer) -> None:
        if producer in self.producers:
            self.producers.remove(producer)

    def publish(self, entry: bytes, num_messages: int) -> "asyncio.Future[Position]":
        """Append one entry; the future resolves once it is durable. Arrival order is kept."""
        self.stats.published(num_messages, len(entry))
        return self.ledger.append(entry)

    # -- consuming --------------------------------------------------------------------------

    async def subscribe(self, connection: "Connection", command: pb.CommandSubscribe) -> Consumer:
        async with self._subscribing:
            subscription = self.subscriptions.get(command.subscription)
            if subscription is None:
                subscription = await self._create_subscription(command)
        consumer = Consumer(
            consumer_id=command.consumer_id,
            name=command.consumer_name or f"consumer-{command.consumer_id}",
            subscription=subscription,
            connection=connection,
            sub_type=command.subType,
            priority_level=command.priority_level,
            partition_index=self.name.partition_index,
        )
        subscription.add_consumer(consumer)
        return consumer

    async def _create_subscription(self, command: pb.CommandSubscribe) -> Subscription:
        if command.durable:
            initial = (
                InitialPosition.EARLIEST
                if command.initialPosition == pb.CommandSubscribe.Earliest
                else InitialPosition.LATEST
            )
            cursor = await self.ledger.open_cursor(command.subscription, initial)
        else:
            cursor = self.ledger.new_non_durable_cursor(command.subscription, self._reader_start(command))
        subscription = Subscription(self, command.subscription, cursor)
        self.subscriptions[command.subscription] = subscription
        return subscription

    async def create_initial_subscription(self, name: str) -> None:
        """A producer's initial_subscription_name (a dead-letter producer's, say): a durable
        subscription from the earliest message, made before the producer is confirmed so
        nothing it publishes is missed, as Pulsar does."""
        async with self._subscribing:
            if name not in self.subscriptions:
                cursor = await self.ledger.open_cursor(name, InitialPosition.EARLIEST)
                self.subscriptions[name] = Subscription(self, name, cursor)

    @staticmethod
    def _reader_start(command: pb.CommandSubscribe) -> Position:
        """Readers start inclusively at start_message_id; the client drops what it must."""
        if not command.HasField("start_message_id"):
            return EARLIEST if command.initialPosition == pb.CommandSubscribe.Earliest else LATEST
        ledger_id, entry_id = to_signed(command.start_message_id.ledgerId), to_signed(command.start_message_id.entryId)
        if ledger_id < 0 or entry_id < 0:
            return EARLIEST
        if (ledger_id, entry_id) == (LATEST.ledger_id, LATEST.entry_id):
            return LATEST
        return Position(ledger_id, entry_id)

    def forget_subscription(self, subscription: Subscription) -> None:
        """Drop a non-durable subscription whose last consumer left."""
        if self.subscriptions.get(subscription.name) is subscription:
            del self.subscriptions[subscription.name]

    async def unsubscribe(self, subscription: Subscription, consumer: Consumer) -> None:
        if any(c is not consumer for c in subscription.consumers):
            raise ConsumerBusy(f"Subscription {subscription.name} has other connected consumers")
        subscription.remove_consumer(consumer)
        subscription.close()
        self.subscriptions.pop(subscription.name, None)
        if subscription.durable:
            await self.ledger.delete_cursor(subscription.name)

    # -- queries ----------------------------------------------------------------------------

    async def last_message_id(self) -> tuple[Position, int]:
        """(last entry, its largest batch index or -1): what GET_LAST_MESSAGE_ID answers."""
        last = self.ledger.last_confirmed_entry
        if last.entry_id < 0:
            return last, -1
        entry = await self.ledger.read_entry(last)
        return last, (largest_batch_index(entry) if entry is not None else -1)

    async def find_position_by_publish_time(self, timestamp_ms: int) -> Position:
        """The first entry published after timestamp_ms (where a seek by time resumes)."""
        newest = await self.ledger.find_newest_matching(lambda e: publish_time(e) <= timestamp_ms)
        return self.ledger.first_position() if newest is None else self.ledger.next_position(newest)

    async def close(self) -> None:
        for subscription in self.subscriptions.values():
            subscription.close()
        await self.ledger.close()


def publish_time(entry: Entry) -> int:
    return read_metadata(entry.data).publish_time


def largest_batch_index(entry: Entry) -> int:
    metadata = read_metadata(entry.data)
    return metadata.num_messages_in_batch - 1 if metadata.HasField("num_messages_in_batch") else -1

