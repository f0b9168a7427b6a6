"""Non-persistent delivery rules without a network: who gets a message, and what is dropped."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from protocol import pulsar_api_pb2 as pb
from server.config import BrokerConfig
from server.topics.non_persistent_topic import NON_PERSISTENT_POSITION, NonPersistentTopic
from server.topics.topic_name import TopicName

SHARED, EXCLUSIVE = pb.CommandSubscribe.Shared, pb.CommandSubscribe.Exclusive


class RecordingConnection:
    def __init__(self) -> None:
        self.frames: list[tuple[bytes, ...]] = []
        self.writable = True

    def write_parts(self, *parts: bytes) -> None:
        self.frames.append(parts)

    def write(self, command) -> None:
        pass


def subscribe(topic: NonPersistentTopic, subscription: str, sub_type: int, consumer_id: int):
    command = pb.CommandSubscribe(topic=str(topic.name), subscription=subscription, subType=sub_type,
                                  consumer_id=consumer_id, request_id=consumer_id)
    connection = RecordingConnection()
    return asyncio.run(topic.subscribe(connection, command)), connection


def new_topic() -> NonPersistentTopic:
    broker = SimpleNamespace(config=BrokerConfig(cluster_name="test"))
    return NonPersistentTopic(broker, TopicName.parse("non-persistent://public/default/t"))


def publish(topic: NonPersistentTopic, count: int) -> None:
    answers = []
    async def run() -> None:
        for _ in range(count):
            topic.publish([b"entry"], 1, lambda position, error: answers.append((position, error)))
    asyncio.run(run())
    assert answers == [(NON_PERSISTENT_POSITION, None)] * count


def test_messages_without_a_consumer_with_permits_are_dropped_and_counted():
    topic = new_topic()
    consumer, connection = subscribe(topic, "s", EXCLUSIVE, 1)
    topic.subscriptions["s"].flow(consumer, 2)

    publish(topic, 5)

    assert len(connection.frames) == 2
    assert topic.dropped_messages == 3
    assert consumer.permits == 0 and consumer.pending_acks == {}


def test_shared_takes_turns_among_consumers_with_permits():
    topic = new_topic()
    (first, first_conn), (second, second_conn) = (subscribe(topic, "s", SHARED, i) for i in (1, 2))
    topic.subscriptions["s"].flow(first, 10)
    topic.subscriptions["s"].flow(second, 1)

    publish(topic, 4)

    assert (len(first_conn.frames), len(second_conn.frames)) == (3, 1)
    assert topic.dropped_messages == 0


def test_a_subscription_ends_with_its_last_consumer():
    topic = new_topic()
    consumer, _ = subscribe(topic, "s", SHARED, 1)
    topic.subscriptions["s"].remove_consumer(consumer)
    assert topic.subscriptions == {}
