"""Topic discovery: auto-created partitioned topics, regex and multi-topic consumers."""

from __future__ import annotations

import re
from collections import defaultdict

from compat_tests.helpers import (
    expect_nothing, full_name, payloads, receive_n, send_all, subscribe_earliest, unique_topic,
)

PARTITIONS = 3   # defaultNumPartitions of the partitioned_broker fixture


def route_by_index(msg, num_partitions: int) -> int:
    """Message "m-<i>" goes to partition i % num_partitions."""
    return int(msg.data().split(b"-")[1]) % num_partitions


def by_topic(messages) -> dict[str, list[bytes]]:
    grouped = defaultdict(list)
    for msg in messages:
        grouped[msg.topic_name()].append(msg.data())
    return dict(grouped)


def test_partitioned_topic_is_auto_created_and_consumed_from_all_partitions(
        partitioned_broker, connect):
    client = connect(partitioned_broker)
    topic = unique_topic("part")
    consumer = subscribe_earliest(client, topic)
    producer = client.create_producer(topic, message_router=route_by_index)
    partitions = [f"{full_name(topic)}-partition-{p}" for p in range(PARTITIONS)]
    contents = payloads(30)

    ids = send_all(producer, contents)

    assert client.get_topic_partitions(topic) == partitions
    assert [i.partition() for i in ids] == [n % PARTITIONS for n in range(30)]
    received = receive_n(consumer, 30)
    assert by_topic(received) == {partitions[p]: contents[p::PARTITIONS] for p in range(PARTITIONS)}
    for msg in received:
        assert msg.message_id().partition() == partitions.index(msg.topic_name())
    expect_nothing(consumer)


def test_regex_consumer_picks_up_existing_matching_topics(client):
    prefix = unique_topic("regex")
    matching = [f"{prefix}-a", f"{prefix}-b"]
    others = [f"{prefix}x-c", unique_topic("unrelated")]
    for topic in matching + others:
        send_all(client.create_producer(topic), payloads(3, tag=topic))

    consumer = subscribe_earliest(client, re.compile(f"persistent://public/default/{prefix}-.*"),
                                  "regex-sub")

    received = receive_n(consumer, 6)
    assert by_topic(received) == {full_name(t): payloads(3, tag=t) for t in matching}
    expect_nothing(consumer)


def test_multi_topic_consumer_reads_each_listed_topic(client):
    topics = [unique_topic("multi") for _ in range(3)]
    for topic in topics:
        send_all(client.create_producer(topic), payloads(4, tag=topic))

    consumer = subscribe_earliest(client, topics, "multi-sub")

    assert by_topic(receive_n(consumer, 12)) == {full_name(t): payloads(4, tag=t) for t in topics}
    expect_nothing(consumer)
