"""KeySharedDispatcher on an in-memory log: who gets which entry, and when a key may move."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from managed_ledger.position import Entry, Position
from protocol import pulsar_api_pb2 as pb
from protocol.entry import make_entry
from server.config import BrokerConfig
from server.topics.stats import TopicStats
from server.topics.subscriptions.consumer import Consumer
from server.topics.subscriptions.delayed_delivery import DelayedDeliveryPolicy
from server.topics.subscriptions.dispatcher import ReadLimits
from server.topics.subscriptions.dispatcher_key_shared import (KeySharedDispatcher, LookAheadLimits,
                                                               keyed_entry)
from server.topics.subscriptions.key_shared_selector import AutoSplitSelector, sticky_key_hash
from server.topics.topic_name import TopicName

LOW = next(f"low-{i}" for i in range(1000) if sticky_key_hash(f"low-{i}".encode()) <= 32768)
HIGH = next(f"high-{i}" for i in range(1000) if sticky_key_hash(f"high-{i}".encode()) > 32768)


class MemoryCursor:
    """Just enough of a ManagedCursor: a list of entries, a read index and acknowledged holes."""

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self.next_index = 0
        self.deleted: set[Position] = set()
        self._listener = None

    def append(self, key: str | None, payload: bytes, **fields) -> Position:
        metadata = pb.MessageMetadata(producer_name="p", sequence_id=len(self.entries), publish_time=1, **fields)
        if key is not None:
            metadata.partition_key = key
        position = Position(1, len(self.entries))
        self.entries.append(Entry(position, make_entry(metadata, payload)))
        self._notify(True)
        return position

    async def read_entries_or_notify(self, max_entries: int, listener) -> list[Entry] | None:
        if self.next_index >= len(self.entries):
            self._listener = listener
            return None
        batch = self.entries[self.next_index:self.next_index + max_entries]
        self.next_index += len(batch)
        return batch

    def _notify(self, more: bool) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.entries_available(more)

    def cancel_pending_read(self) -> None:
        self._notify(False)

    def is_deleted(self, position: Position) -> bool:
        return position in self.deleted

    def rewind(self) -> None:
        self.next_index = 0
        self._notify(True)

    async def read_entry(self, position: Position) -> Entry:
        return self.entries[position.entry_id]


@dataclass
class FakeBroker:
    config: BrokerConfig = field(default_factory=BrokerConfig)


@dataclass
class FakeTopic:
    ledger: MemoryCursor
    stats: TopicStats = field(default_factory=TopicStats)
    broker: FakeBroker = field(default_factory=FakeBroker)
    name: TopicName = TopicName.parse("persistent://public/default/fake")
    policies: dict = field(default_factory=dict)
    delayed_delivery: DelayedDeliveryPolicy = DelayedDeliveryPolicy(active=False, tick_ms=1000)


class FakeSubscription:
    name = "sub"
    durable = True
    held_acks = None   # no transaction holds acks here

    def __init__(self, cursor: MemoryCursor) -> None:
        self.cursor = cursor
        self.topic = FakeTopic(cursor)
        self.redelivery_counts: dict[Position, int] = {}

    def ack_set_for_dispatch(self, position: Position) -> None:
        return None

    def count_redelivery(self, position: Position) -> None:
        self.redelivery_counts[position] = self.redelivery_counts.get(position, 0) + 1

    def dispatched(self, messages: int, size: int) -> None:
        self.topic.stats.dispatched(messages, size)

    def dispatch_throttle(self) -> None:
        return None


class RecordingConnection:
    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.writable = True

    def write_parts(self, header: bytes, body: bytes) -> None:
        self.bodies.append(bytes(body))


class Harness:
    def __init__(self, allow_out_of_order: bool = False, look_ahead: LookAheadLimits = LookAheadLimits()) -> None:
        self.cursor = MemoryCursor()
        self.subscription = FakeSubscription(self.cursor)
        meta = pb.KeySharedMeta(keySharedMode=pb.AUTO_SPLIT, allowOutOfOrderDelivery=allow_out_of_order)
        self.dispatcher = KeySharedDispatcher(self.subscription, ReadLimits(), meta, AutoSplitSelector(), look_ahead)
        self.payload_of = {}

    def consumer(self, name: str, permits: int = 100) -> Consumer:
        consumer = Consumer(len(self.dispatcher.consumers), name, self.subscription, RecordingConnection(), 3)
        self.dispatcher.add_consumer(consumer)
        self.dispatcher.flow(consumer, permits)
        return consumer

    def publish(self, key: str, payload: bytes) -> Position:
        position = self.cursor.append(key, payload)
        self.payload_of[self.cursor.entries[-1].data] = payload
        return position

    def received(self, consumer: Consumer) -> list[bytes]:
        return [self.payload_of[body] for body in consumer.connection.bodies]

    def ack(self, consumer: Consumer, *positions: Position) -> None:
        self.cursor.deleted.update(positions)
        self.dispatcher.acknowledged(consumer, list(positions))


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


def run(scenario, **harness_options) -> None:
    """Run scenario(harness) on a fresh loop with a fresh dispatcher, bounded in time."""
    async def main() -> None:
        harness = Harness(**harness_options)
        try:
            await asyncio.wait_for(scenario(harness), 5)
        finally:
            harness.dispatcher.close()
    asyncio.run(main())


def metadata(**fields) -> pb.MessageMetadata:
    return pb.MessageMetadata(producer_name="p", sequence_id=0, publish_time=1, **fields)


def test_key_is_taken_from_ordering_key_then_partition_key_and_batches_count_their_messages():
    both = keyed_entry(metadata(partition_key="pk", ordering_key=b"ok", num_messages_in_batch=3))
    assert (both.key_hash, both.messages) == (sticky_key_hash(b"ok"), 3)
    encoded = keyed_entry(metadata(partition_key="AAE=", partition_key_b64_encoded=True))
    assert encoded.key_hash == sticky_key_hash(b"\x00\x01")
    assert keyed_entry(metadata(partition_key="not base64!", partition_key_b64_encoded=True)).key_hash == \
        sticky_key_hash(b"NONE_KEY")
    assert keyed_entry(metadata(partition_key="pk")).key_hash == sticky_key_hash(b"pk")
    assert keyed_entry(metadata()).key_hash == sticky_key_hash(b"NONE_KEY")


def test_a_moved_key_waits_until_its_unacked_entries_are_acked():
    async def scenario(h: Harness):
        c0 = h.consumer("c0")
        held = h.publish(LOW, b"low-0")
        h.publish(HIGH, b"high-0")
        await settle()
        c1 = h.consumer("c1")            # takes the low half; c0 still holds low-0
        h.publish(LOW, b"low-1")
        h.publish(HIGH, b"high-1")
        await settle()
        assert h.received(c0) == [b"low-0", b"high-0", b"high-1"]
        assert h.received(c1) == []
        h.ack(c0, held)
        await settle()
        assert h.received(c1) == [b"low-1"]
    run(scenario)


def test_out_of_order_delivery_moves_keys_at_once():
    async def scenario(h: Harness):
        c0 = h.consumer("c0")
        h.publish(LOW, b"low-0")
        await settle()
        c1 = h.consumer("c1")
        h.publish(LOW, b"low-1")
        await settle()
        assert (h.received(c0), h.received(c1)) == ([b"low-0"], [b"low-1"])
    run(scenario, allow_out_of_order=True)


def test_an_owner_without_permits_does_not_hold_up_other_keys():
    async def scenario(h: Harness):
        c0 = h.consumer("c0", permits=1)
        c1 = h.consumer("c1", permits=1)       # c1 owns LOW, c0 owns HIGH
        for i in range(3):
            h.publish(LOW, f"low-{i}".encode())
        h.publish(HIGH, b"high-0")
        await settle()
        assert (h.received(c1), h.received(c0)) == ([b"low-0"], [b"high-0"])
        h.dispatcher.flow(c1, 5)
        await settle()
        assert h.received(c1) == [b"low-0", b"low-1", b"low-2"]
    run(scenario)


def test_a_leaving_consumers_entries_go_first_to_the_new_owner():
    async def scenario(h: Harness):
        c0 = h.consumer("c0")
        c1 = h.consumer("c1")
        h.publish(LOW, b"low-0")
        h.publish(LOW, b"low-1")
        await settle()
        assert h.received(c1) == [b"low-0", b"low-1"]
        h.dispatcher.remove_consumer(c1)
        h.publish(LOW, b"low-2")
        await settle()
        assert h.received(c0) == [b"low-0", b"low-1", b"low-2"]
    run(scenario)


def test_redelivered_entries_keep_newer_ones_of_their_key_behind():
    async def scenario(h: Harness):
        c0 = h.consumer("c0", permits=1)
        first = h.publish(LOW, b"low-0")
        await settle()
        h.dispatcher.redeliver(c0, [first])
        h.publish(LOW, b"low-1")
        await settle()
        assert h.received(c0) == [b"low-0"]        # no permits: low-1 must not overtake low-0
        h.dispatcher.flow(c0, 2)
        await settle()
        assert h.received(c0) == [b"low-0", b"low-0", b"low-1"]
        assert h.subscription.redelivery_counts[first] == 1
    run(scenario)


def test_look_ahead_limit_stops_reading_past_waiting_entries():
    async def scenario(h: Harness):
        c0 = h.consumer("c0", permits=0)
        h.consumer("c1", permits=10)            # c1 owns LOW, c0 (no permits) owns HIGH
        for i in range(5):
            h.publish(HIGH, f"high-{i}".encode())
        await settle()
        h.dispatcher.flow(c0, 0)
        await settle()
        assert h.cursor.next_index == 2         # two entries wait; reading stopped there
        h.dispatcher.flow(c0, 10)
        await settle()
        assert h.received(c0) == [f"high-{i}".encode() for i in range(5)]
    run(scenario, look_ahead=LookAheadLimits(per_consumer=0, per_subscription=2))
