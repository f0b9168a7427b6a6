"""Non-persistent topics: nothing stored, messages go to the consumers connected now."""

from __future__ import annotations

import re

import pulsar
import pytest

from compat_tests.failover_rule import failover_pick
from compat_tests.helpers import data_of, expect_nothing, id_tuple, payloads, receive_n, send_all, unique_topic

NON_PERSISTENT_ID = (0, 0, -1, -1)   # Pulsar receipts every non-persistent message as 0:0


def np_topic(prefix: str = "np") -> str:
    return f"non-persistent://public/default/{unique_topic(prefix)}"


def test_messages_reach_the_connected_consumer_and_are_receipted_as_0_0(client):
    topic = np_topic()
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic, batching_enabled=False)

    ids = send_all(producer, payloads(10))

    assert [id_tuple(i) for i in ids] == [NON_PERSISTENT_ID] * 10
    assert data_of(receive_n(consumer, 10, ack=True)) == payloads(10)
    expect_nothing(consumer)


def test_messages_published_before_the_subscription_are_gone(client):
    topic = np_topic("before")
    producer = client.create_producer(topic, batching_enabled=False)
    send_all(producer, payloads(3, "early"))
    consumer = client.subscribe(topic, "late", initial_position=pulsar.InitialPosition.Earliest)
    send_all(producer, payloads(3, "late"))

    assert data_of(receive_n(consumer, 3)) == payloads(3, "late")
    expect_nothing(consumer)


def test_a_consumer_without_permits_loses_messages(client):
    topic = np_topic("permits")
    consumer = client.subscribe(topic, "slow", receiver_queue_size=5)
    producer = client.create_producer(topic, batching_enabled=False)

    send_all(producer, payloads(20))   # permits for the first 5 only; the rest are dropped

    assert data_of(receive_n(consumer, 5)) == payloads(5)
    expect_nothing(consumer)
    send_all(producer, [b"later"])      # reading gave permits back
    assert data_of(receive_n(consumer, 1)) == [b"later"]


def test_shared_subscription_spreads_messages_without_duplicates(client):
    topic = np_topic("shared")
    consumers = [client.subscribe(topic, "shared", consumer_type=pulsar.ConsumerType.Shared) for _ in range(2)]
    producer = client.create_producer(topic, batching_enabled=False)

    send_all(producer, payloads(10))

    first, second = (data_of(receive_n(c, 5)) for c in consumers)
    assert sorted(first + second) == sorted(payloads(10))
    for consumer in consumers:
        expect_nothing(consumer)


def test_every_subscription_gets_every_message(client):
    topic = np_topic("fanout")
    exclusive = client.subscribe(topic, "a", consumer_type=pulsar.ConsumerType.Exclusive)
    failover = [client.subscribe(topic, "b", consumer_type=pulsar.ConsumerType.Failover,
                                 consumer_name=name) for name in ("b0", "b1")]
    producer = client.create_producer(topic, batching_enabled=False)

    send_all(producer, payloads(6))

    assert data_of(receive_n(exclusive, 6)) == payloads(6)
    active = failover_pick(["b0", "b1"], topic)                # Pulsar's pick by the names
    assert data_of(receive_n(failover[active == "b1"], 6)) == payloads(6)
    expect_nothing(failover[active == "b0"])


def test_exclusive_subscription_refuses_a_second_consumer(client):
    topic = np_topic("busy")
    client.subscribe(topic, "only")
    with pytest.raises(pulsar.ConsumerBusy):
        client.subscribe(topic, "only")


def test_batches_are_delivered_whole(client):
    topic = np_topic("batch")
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=4,
                                      batching_max_publish_delay_ms=50)
    for content in payloads(8):
        producer.send_async(content, None)
    producer.flush()

    assert data_of(receive_n(consumer, 8)) == payloads(8)
    expect_nothing(consumer)


def test_seek_is_refused(client):
    topic = np_topic("seek")
    consumer = client.subscribe(topic, "sub")
    with pytest.raises(pulsar.PulsarException):
        consumer.seek(pulsar.MessageId.earliest)


def test_partitioned_non_persistent_topic(partitioned_broker, connect):
    client = connect(partitioned_broker)
    topic = np_topic("parts")
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic, batching_enabled=False,
                                      message_router=lambda msg, n: int(msg.data().split(b"-")[1]) % n)

    send_all(producer, payloads(9))

    assert client.get_topic_partitions(topic) == [f"{topic}-partition-{p}" for p in range(3)]
    received = receive_n(consumer, 9)
    assert sorted(data_of(received)) == sorted(payloads(9))
    for msg in received:
        index = int(msg.data().split(b"-")[1])
        assert msg.topic_name() == f"{topic}-partition-{index % 3}"
    expect_nothing(consumer)


def test_regex_subscription_finds_live_non_persistent_topics(client):
    prefix = unique_topic("npregex")
    topics = [f"non-persistent://public/default/{prefix}-{s}" for s in ("a", "b")]
    persistent_twin = f"persistent://public/default/{prefix}-c"
    holders = [client.subscribe(t, "holder") for t in topics]   # keeps the topics live
    client.create_producer(persistent_twin)

    consumer = client.subscribe(re.compile(f"non-persistent://public/default/{prefix}-.*"), "regex",
                                regex_subscription_mode=pulsar.RegexSubscriptionMode.NonPersistentOnly)
    for topic in topics:
        send_all(client.create_producer(topic, batching_enabled=False), [topic.encode()])

    assert sorted(data_of(receive_n(consumer, 2))) == sorted(t.encode() for t in topics)
    expect_nothing(consumer)
    assert all(data_of(receive_n(h, 1)) for h in holders)
