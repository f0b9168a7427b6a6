"""Partitioned topics end to end: routing modes, keyed routing, per-partition consumers and readers.

The partitioned_broker auto-creates topics with 3 partitions (no admin API yet).
"""

from __future__ import annotations

from collections import Counter, defaultdict

import pulsar

from compat_tests.helpers import (
    data_of, expect_nothing, full_name, payloads, receive_n, send_all, subscribe_earliest, unique_topic,
)

PARTITIONS = 3
Routing = pulsar.PartitionsRoutingMode


def partitions_of(topic: str) -> list[str]:
    return [f"{full_name(topic)}-partition-{p}" for p in range(PARTITIONS)]


def partition_counts(ids) -> Counter:
    return Counter(i.partition() for i in ids)


def produce_and_consume(client, topic: str, **producer_options):
    """An unbatched producer (with the given routing) and an earliest consumer on the topic."""
    producer = client.create_producer(topic, batching_enabled=False, **producer_options)
    return producer, subscribe_earliest(client, topic)


def test_round_robin_spreads_unkeyed_messages_over_every_partition(partitioned_broker, connect):
    client = connect(partitioned_broker)
    topic = unique_topic("rr")
    producer, consumer = produce_and_consume(client, topic, message_routing_mode=Routing.RoundRobinDistribution)

    ids = send_all(producer, payloads(9))

    assert partition_counts(ids) == {0: 3, 1: 3, 2: 3}
    assert sorted(data_of(receive_n(consumer, 9))) == sorted(payloads(9))
    expect_nothing(consumer)


def test_single_partition_mode_keeps_unkeyed_messages_on_one_partition(partitioned_broker, connect):
    client = connect(partitioned_broker)
    topic = unique_topic("single")
    producer, consumer = produce_and_consume(client, topic, message_routing_mode=Routing.UseSinglePartition)

    ids = send_all(producer, payloads(10))

    assert len(partition_counts(ids)) == 1
    received = receive_n(consumer, 10)
    assert data_of(received) == payloads(10)      # one partition: publish order kept
    assert {m.topic_name() for m in received} == {partitions_of(topic)[ids[0].partition()]}
    expect_nothing(consumer)


def test_custom_router_decides_the_partition(partitioned_broker, connect):
    client = connect(partitioned_broker)
    topic = unique_topic("custom")
    producer, consumer = produce_and_consume(client, topic, message_router=lambda msg, n: n - 1)

    ids = send_all(producer, payloads(5))

    assert [i.partition() for i in ids] == [PARTITIONS - 1] * 5
    received = receive_n(consumer, 5)
    assert data_of(received) == payloads(5)
    assert {m.topic_name() for m in received} == {partitions_of(topic)[-1]}


def test_same_key_goes_to_the_same_partition(partitioned_broker, connect):
    client = connect(partitioned_broker)
    topic = unique_topic("keyed")
    producer, consumer = produce_and_consume(client, topic)
    keys = [f"key-{k}" for k in range(6)]

    ids = [producer.send(f"{key}-{n}".encode(), partition_key=key) for n in range(4) for key in keys]

    partition_of_key = defaultdict(set)
    for msg_id, (n, key) in zip(ids, [(n, k) for n in range(4) for k in keys]):
        partition_of_key[key].add(msg_id.partition())
    assert all(len(parts) == 1 for parts in partition_of_key.values())
    by_key = defaultdict(list)
    for msg in receive_n(consumer, 24):
        by_key[msg.partition_key()].append(msg.data())
    assert by_key == {key: [f"{key}-{n}".encode() for n in range(4)] for key in keys}   # per-key order
    expect_nothing(consumer)


def test_a_consumer_and_a_reader_on_one_partition_see_only_it(partitioned_broker, connect):
    client = connect(partitioned_broker)
    topic = unique_topic("perpart")
    producer = client.create_producer(topic, message_router=lambda msg, n: int(msg.data().split(b"-")[1]) % n,
                                      batching_enabled=False)
    ids = send_all(producer, payloads(12))
    partition_1 = partitions_of(topic)[1]
    expected = payloads(12)[1::PARTITIONS]

    consumer = subscribe_earliest(client, partition_1, "one-partition")
    reader = client.create_reader(partition_1, pulsar.MessageId.earliest)
    assert data_of(receive_n(consumer, 4)) == expected
    assert data_of(receive_n(reader, 4)) == expected
    expect_nothing(consumer)
    expect_nothing(reader)

    # a reader from a message id of that partition starts there (inclusive of the next one)
    start = [i for i in ids if i.partition() == 1][1]
    later = client.create_reader(partition_1, start)
    assert data_of(receive_n(later, 2)) == expected[2:]
    expect_nothing(later)


def test_reader_on_the_partitioned_topic_reads_every_partition(partitioned_broker, connect):
    client = connect(partitioned_broker)
    topic = unique_topic("reader")
    producer = client.create_producer(topic, batching_enabled=False)
    send_all(producer, payloads(9))
    reader = client.create_reader(topic, pulsar.MessageId.earliest)

    assert sorted(data_of(receive_n(reader, 9))) == sorted(payloads(9))
    expect_nothing(reader)
