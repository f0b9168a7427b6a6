"""A persistent topic: its managed ledger, producers and subscriptions."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Callable
from urllib.parse import quote

from managed_ledger.coalesced_task import CoalescedTask
from managed_ledger.errors import ManagedLedgerError, ManagedLedgerStorageError, MetadataStoreError
from managed_ledger.held_locks import LockTable
from managed_ledger.interfaces import ManagedLedger, MetadataStore
from managed_ledger.interned import interned
from managed_ledger.position import EARLIEST, LATEST, Entry, InitialPosition, Position
from protocol import pulsar_api_pb2 as pb
from protocol.entry import read_metadata
from server.errors import ConsumerBusy, NotAllowed, PersistenceError, SubscriptionNotFound, TopicTerminated
from server.policies.namespace_policies import auto_subscription_creation_allowed
from server.policies.topic_limits import check_consumer_room, check_new_subscription, check_subscription_type

from .compaction import COMPACTION_CURSOR, TopicCompaction
from .deduplication import DEDUPLICATION_CURSOR, MessageDeduplication
from .message_id import position_of
from .producer import Producer
from .subscriptions.consumer import Consumer
from .subscriptions.delayed_delivery import DelayedDeliveryPolicy
from .subscriptions.subscription import Subscription
from .topic_base import TopicBase
from .topic_name import TopicName

if TYPE_CHECKING:
    from .interfaces import ClientConnection, TopicBroker

log = logging.getLogger(__name__)
_SUBSCRIBING = LockTable()   # one subscribe or unsubscribe at a time per topic

#: Per-topic state outside the ledger: the topic epoch and the deduplication snapshot.
TOPIC_STATE = "/topic-state"


#: Cursors the broker keeps for itself, not subscriptions.
INTERNAL_CURSORS = (DEDUPLICATION_CURSOR, COMPACTION_CURSOR)


class Topic(TopicBase):
    __slots__ = ("ledger", "_compaction", "delayed_delivery", "_unloading", "_deduplication_wanted",
                 "_deduplication_switch", "_held")
    positions_are_consecutive = True

    def __init__(
        self, broker: "TopicBroker", name: TopicName, ledger: ManagedLedger, epoch: int | None = None,
        deduplication: MessageDeduplication | None = None,
    ) -> None:
        super().__init__(broker, name, epoch, deduplication, {
            sub_name: Subscription(self, sub_name, cursor)
            for sub_name, cursor in ledger.cursors.items() if sub_name not in INTERNAL_CURSORS
        })
        self.ledger = ledger
        self._compaction: TopicCompaction | None = None   # made on first use (see compaction)
        config = broker.config
        #: Whether its Shared subscriptions hold delayed messages (the policy in force, set with
        #: self.policies)
        self.delayed_delivery = interned(DelayedDeliveryPolicy(config.delayed_delivery_enabled,
                                                               config.delayed_delivery_tick_time_millis))
        self._unloading: asyncio.Task[bool] | None = None
        #: Whether the policy in force wants deduplication; _deduplication_switch makes it so.
        self._deduplication_wanted = deduplication is not None
        self._deduplication_switch: CoalescedTask[Topic] | None = None   # made on first use (_switcher)
        #: Appends waiting for hold_appends to end (None: appends go straight to the ledger).
        self._held: list[tuple[list[bytes], int, Callable]] | None = None

    @classmethod
    async def load(cls, broker: "TopicBroker", name: TopicName, ledger: ManagedLedger,
                   deduplicated: bool) -> "Topic":
        """Recover the topic epoch, when deduplicated the deduplication state, and with
        transactions on the pending acks of its subscriptions."""
        store = broker.metadata
        stored_epoch = await store.get(_state_path(name, "epoch"))
        epoch = int(stored_epoch[0]) if stored_epoch is not None else None
        deduplication = None
        if deduplicated:
            deduplication = _new_deduplication(broker, name, ledger)
            await deduplication.recover()
        else:
            await MessageDeduplication.remove(ledger, store, _state_path(name, "deduplication"))
        topic = cls(broker, name, ledger, epoch, deduplication)
        if broker.config.transaction_coordinator_enabled:
            for subscription in topic.subscriptions.values():   # replayed: commits a crash cut short apply now
                await subscription.pending_acks.ready()
        return topic

    def set_deduplication(self, enabled: bool) -> None:
        """The policy in force turned deduplication on or off: switch the loaded topic over in
        the background, as Pulsar's checkDeduplicationStatus does. Until its state is recovered
        SENDs are not checked (as in Pulsar); turned off, its cursor and snapshot go."""
        if enabled != self._deduplication_wanted:
            self._deduplication_wanted = enabled
            self._switcher().request()

    def _switcher(self) -> CoalescedTask[Topic]:
        if self._deduplication_switch is None:
            self._deduplication_switch = CoalescedTask(Topic._switch_deduplication, self)
        return self._deduplication_switch

    async def _switch_deduplication(self) -> None:
        wanted = self._deduplication_wanted
        try:
            if wanted and self.deduplication is None:
                deduplication = _new_deduplication(self.broker, self.name, self.ledger)
                await deduplication.recover()
                self.deduplication = deduplication
            elif not wanted and self.deduplication is not None:
                await self.deduplication.disable()
                self.deduplication = None
            else:
                return
        except (ManagedLedgerError, MetadataStoreError) as exc:   # storage away: the next refresh tries again
            self._deduplication_wanted = self.deduplication is not None
            log.warning("topic %s: turning deduplication %s failed: %s", self.name, "on" if wanted else "off", exc)
            return
        log.info("topic %s: deduplication turned %s", self.name, "on" if wanted else "off")

    async def add_producer(self, connection: "ClientConnection", request: pb.CommandProducer,
                           schema_version: bytes | None, on_queued: Callable[[Producer], None]) -> Producer:
        """A terminated topic, or one over a hold or exception backlog quota, takes no new producers."""
        if self.terminated:
            raise TopicTerminated("Topic was already terminated")
        await self.broker.backlog_quotas.check_producer_allowed(self)
        return await super().add_producer(connection, request, schema_version, on_queued)

    async def store_epoch(self, epoch: int) -> None:
        """Persisted: after a restart, a producer presenting an older epoch is still fenced."""
        await self.broker.metadata.put(_state_path(self.name, "epoch"), str(epoch).encode())

    def publish(self, entries: list[bytes], num_messages: int,
                on_done: Callable[[Position | None, BaseException | None], None]) -> None:
        """Append a run of entries holding num_messages in all; on_done(first position, None)
        once they are durable (the rest follow it), in arrival order. On a terminated topic
        on_done gets ManagedLedgerTerminatedError."""
        if self._held is not None:
            self._held.append((entries, num_messages, on_done))
            return
        if not self.ledger.terminated:
            size = sum(map(len, entries))
            self.stats.published(num_messages, size)
            if self.publish_limits:
                self.count_against_publish_limits(num_messages, size)
        self.ledger.append_run(entries, on_done)

    def hold_appends(self) -> None:
        """Appends wait, in arrival order, until release_appends (while the transaction buffer
        takes its first snapshot, so that a producer's receipts keep its order)."""
        if self._held is None:
            self._held = []

    def release_appends(self, dropped: Callable[[Any], bool]) -> None:
        """Append what waited, but the runs whose on_done `dropped` names (their owner fails them)."""
        held, self._held = self._held or [], None
        for entries, num_messages, on_done in held:
            if not dropped(on_done):
                self.publish(entries, num_messages, on_done)

    def _hidden(self, entry: Entry) -> bool:
        """Never given to consumers: a transaction marker, an aborted transaction's entry."""
        buffer = self.transaction_buffer
        return buffer is not None and buffer.hides_entry(entry)

    def holds_data(self) -> bool:
        return self.ledger.total_size > 0

    # -- termination ------------------------------------------------------------------------

    @property
    def terminated(self) -> bool:
        return self.ledger.terminated

    async def terminate(self) -> Position:
        """End the topic for good at its last message (as Pulsar's terminate): its producers
        are closed (they fail when they come back), those waiting for exclusive access fail,
        and subscriptions that have consumed everything are told so. Idempotent.

        The producers take no SENDs from the start: one arriving after the end would get
        TopicTerminatedError, which the Go client answers by forgetting the producer without
        failing the message (it then times out); dropped, it is failed as terminated when the
        client comes back."""
        for producer in self.producers:
            producer.connection.detach_producer(producer)
        end = await self.ledger.terminate()
        self.access.evict_all(TopicTerminated("Topic was already terminated"))
        for subscription in self.subscriptions.values():
            subscription.notify_if_end_reached()
        return end

    # -- consuming --------------------------------------------------------------------------

    async def subscribe(self, connection: "ClientConnection", command: pb.CommandSubscribe) -> Consumer:
        """In Pulsar's order: the subscribe rate, a durable subscription that may not be
        auto-created, a disabled subscription type, one subscription too many, one consumer too many."""
        if self.rate_limits is not None:
            self.rate_limits.check_subscribe(connection.host, command.consumer_name, command.consumer_id)
        async with _SUBSCRIBING.held(self):
            subscription = self.subscriptions.get(command.subscription)
            if subscription is None and command.durable and not await self._auto_subscription_creation_allowed():
                raise SubscriptionNotFound("Subscription does not exist")
            check_subscription_type(self, command.subType)
            if subscription is None:
                subscription = await self._create_subscription(command)
            if command.read_compacted:
                subscription.read_compacted(self.ledger, command.subType)
            if self.broker.config.transaction_coordinator_enabled and subscription.durable:
                await subscription.pending_acks.ready()   # what transactions hold stays undelivered
        check_consumer_room(self)
        consumer = self.new_consumer(connection, command, subscription)
        subscription.add_consumer(consumer)
        return consumer

    async def _create_subscription(self, command: pb.CommandSubscribe) -> Subscription:
        name = command.subscription   # one string for the subscription, its cursor and the dicts keyed by it
        check_new_subscription(self, name)
        if command.durable:
            initial = (
                InitialPosition.EARLIEST
                if command.initialPosition == pb.CommandSubscribe.Earliest
                else InitialPosition.LATEST
            )
            try:
                cursor = await self.ledger.open_cursor(name, initial)
            except ManagedLedgerStorageError as exc:   # as Pulsar: the client gets a PersistenceError
                raise PersistenceError(f"Failed to create subscription {name}: {exc}") from exc
        else:
            cursor = self.ledger.new_non_durable_cursor(name, self._reader_start(command))
        subscription = Subscription(self, name, cursor)
        self.subscriptions[name] = subscription
        return subscription

    async def _auto_subscription_creation_allowed(self) -> bool:
        return auto_subscription_creation_allowed(self.policies, self.broker.config.allow_auto_subscription_creation)

    async def create_initial_subscription(self, name: str) -> None:
        """A producer's initial_subscription_name (a dead-letter producer's, say): a durable
        subscription from the earliest message, made before the producer is confirmed so
        nothing it publishes is missed, as Pulsar does (when subscriptions may be auto-created)."""
        if name not in self.subscriptions and not await self._auto_subscription_creation_allowed():
            raise NotAllowed("Could not create the initial subscription: auto subscription creation"
                             " is not allowed")
        await self.add_subscription(name, EARLIEST)

    async def add_subscription(self, name: str, start: Position) -> bool:
        """A durable subscription whose first message is at start (EARLIEST / LATEST sentinels
        accepted), made without a consumer; False when it exists already."""
        async with _SUBSCRIBING.held(self):
            if name in self.subscriptions:
                return False
            check_new_subscription(self, name)
            initial = InitialPosition.EARLIEST if start == EARLIEST else InitialPosition.LATEST
            cursor = await self.ledger.open_cursor(name, initial)
            if start not in (EARLIEST, LATEST):
                await cursor.reset(start)
            self.subscriptions[name] = Subscription(self, name, cursor)
        return True

    async def remove_subscription(self, name: str, force: bool) -> None:
        """Delete a subscription; with force its consumers are disconnected first."""
        subscription = self.subscriptions.get(name)
        if subscription is None:
            raise SubscriptionNotFound("Subscription not found")
        if subscription.consumers and not force:
            raise ConsumerBusy("Subscription has active connected consumers")
        for consumer in subscription.consumers:
            consumer.close_by_broker()
            subscription.remove_consumer(consumer, resetting=True)
        await self._delete_subscription(subscription)

    @staticmethod
    def _reader_start(command: pb.CommandSubscribe) -> Position:
        """Readers start inclusively at start_message_id; the client drops what it must."""
        if not command.HasField("start_message_id"):
            return EARLIEST if command.initialPosition == pb.CommandSubscribe.Earliest else LATEST
        start = position_of(command.start_message_id)
        if start.ledger_id < 0 or start.entry_id < 0:
            return EARLIEST
        return start

    # -- compaction -------------------------------------------------------------------------

    @property
    def compaction(self) -> TopicCompaction:
        if self._compaction is None:
            self._compaction = TopicCompaction(self.ledger, self.broker.config.topic_compaction_retain_null_key)
        return self._compaction

    async def compact(self) -> None:
        """Start compacting in the background (CompactionInProgress if running already)."""
        self.compaction.start(self._hidden)

    def compaction_status(self) -> dict[str, str]:
        """{"status": NOT_RUN | RUNNING | SUCCESS | ERROR, "lastError": ...}, as Pulsar."""
        return self.compaction.report()

    async def unsubscribe(self, subscription: Subscription, consumer: Consumer) -> None:
        self.check_sole_consumer(subscription, consumer)
        subscription.remove_consumer(consumer)
        await self._delete_subscription(subscription)

    async def _delete_subscription(self, subscription: Subscription) -> None:
        """Its cursor and, with transactions on, its pending-ack log go."""
        subscription.close()
        self.subscriptions.pop(subscription.name, None)
        if subscription.durable:
            await self.ledger.delete_cursor(subscription.name)
            if self.broker.config.transaction_coordinator_enabled:
                await subscription.pending_acks.delete()

    # -- queries ----------------------------------------------------------------------------

    async def last_message_id(self) -> tuple[Position, int]:
        """(last entry, its largest batch index or -1): what GET_LAST_MESSAGE_ID answers."""
        buffer = self.transaction_buffer
        if buffer is not None:   # the last one consumers may get: no marker, nothing aborted or open
            found = await buffer.last_dispatchable()
            if found is None:   # as for an empty topic
                return Position(self.ledger.readable_end.ledger_id, -1), -1
            return found.position, largest_batch_index(found)
        last = self.ledger.last_confirmed_entry
        if last.entry_id < 0:
            return last, -1
        entry = await self.ledger.read_entry(last)
        return last, (largest_batch_index(entry) if entry is not None else -1)

    async def find_position_by_publish_time(self, timestamp_ms: int) -> Position:
        """The first entry published at timestamp_ms or later (where a seek by time resumes)."""
        newest = await self.ledger.find_newest_matching(lambda e: publish_time(e) < timestamp_ms)
        return self.ledger.first_position() if newest is None else self.ledger.next_position(newest)

    def storage_fenced(self) -> None:
        """Another broker wrote this topic's managed ledger: unload it here (its clients
        reconnect, and a later load opens the log afresh), as Pulsar closes a topic whose
        managed ledger is fenced."""
        if self._unloading is None:
            log.warning("topic %s: its managed ledger was written by another broker; unloading", self.name)
            self._unloading = asyncio.get_running_loop().create_task(self.broker.unload_topic(self.name))

    async def close(self) -> None:
        """Every part, whatever the others do: after a lost ZooKeeper session the snapshot and
        cursor writes fail, yet the managed ledger must still close (and leave the factory's
        cache), or a later load here would reuse it, stale. One line per failed part."""
        self.access.close_all()
        for subscription in self.subscriptions.values():
            subscription.close()
        await self._switcher().stop()   # (a later policy change then switches nothing)
        parts = [("transaction buffer", self.transaction_buffer.close) if self.transaction_buffer else None,
                 ("deduplication snapshot", self.deduplication.close) if self.deduplication else None,
                 *((f"pending acks of {s.name}", s.close_pending_acks) for s in self.subscriptions.values()),
                 ("compaction", self._compaction.close) if self._compaction else None,
                 ("managed ledger", self.ledger.close)]
        for part, close in filter(None, parts):
            try:
                await close()
            except Exception as exc:  # noqa: BLE001 - the next part closes all the same
                log.warning("closing topic %s: its %s failed: %s", self.name, part, exc)


def _state_path(name: TopicName, item: str) -> str:
    return f"{TOPIC_STATE}/{quote(str(name), safe='')}/{item}"


def _new_deduplication(broker: "TopicBroker", name: TopicName, ledger: ManagedLedger) -> MessageDeduplication:
    config = broker.config
    return MessageDeduplication(ledger, broker.metadata, _state_path(name, "deduplication"),
                                config.broker_deduplication_entries_interval,
                                config.broker_deduplication_max_number_of_producers)


async def delete_topic_state(store: MetadataStore, name: TopicName) -> None:
    """Forget a deleted topic's epoch and deduplication snapshot."""
    root = f"{TOPIC_STATE}/{quote(str(name), safe='')}"
    for item in await store.children(root):
        await store.delete(f"{root}/{item}")


def publish_time(entry: Entry) -> int:
    return read_metadata(entry.data).publish_time


def largest_batch_index(entry: Entry) -> int:
    metadata = read_metadata(entry.data)
    return metadata.num_messages_in_batch - 1 if metadata.HasField("num_messages_in_batch") else -1

