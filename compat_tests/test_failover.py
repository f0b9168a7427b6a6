"""Failover: one active consumer (priority level, then name); its unacknowledged messages are
rewound to the next one; on a partitioned topic partition i goes to sorted consumer i % n."""

from __future__ import annotations

from collections import defaultdict

import pulsar

from compat_tests.helpers import (
    data_of, expect_nothing, payloads, receive_exactly, receive_n, send_all, send_all_async,
    unique_topic,
)
from compat_tests.test_subscription_types import drain


def failover(client, topic, name, **options):
    return client.subscribe(topic, "fo", consumer_type=pulsar.ConsumerType.Failover, consumer_name=name,
                            initial_position=pulsar.InitialPosition.Earliest, **options)


def first_or_none(consumer, timeout_ms=2000):
    try:
        return consumer.receive(timeout_ms)
    except pulsar.Timeout:
        return None


def test_failover_has_one_active_consumer_and_the_standby_takes_over(client):
    topic = unique_topic()
    consumers = [failover(client, topic, f"c{i}") for i in range(2)]
    contents = payloads(10)
    send_all(client.create_producer(topic), contents)

    firsts = [first_or_none(c) for c in consumers]
    active = [i for i, msg in enumerate(firsts) if msg is not None]
    assert active == [0], "c0 sorts first, so it is the active consumer"
    active_consumer, standby = consumers[0], consumers[1]
    received = [firsts[0]] + receive_n(active_consumer, 4)
    assert data_of(received) == contents[:5]
    for msg in received:
        active_consumer.acknowledge(msg)

    active_consumer.close()   # its prefetched but unacked messages go to the standby

    receive_exactly(standby, contents[5:])


def test_a_consumer_that_sorts_first_takes_over_and_gets_the_unacked_messages(client):
    topic = unique_topic()
    producer = client.create_producer(topic)
    late = failover(client, topic, "b")
    contents = payloads(5)
    send_all(producer, contents)
    assert data_of(receive_n(late, 5)) == contents      # b was alone: active; nothing acked

    early = failover(client, topic, "a")                 # "a" < "b": the active consumer changes

    assert data_of(receive_n(early, 5)) == contents      # rewound from mark-delete to the new owner
    more = payloads(3, "more")
    send_all(producer, more)
    receive_exactly(early, more)
    expect_nothing(late)


def test_partitions_are_spread_over_sorted_consumers_by_index_modulo(partitioned_broker, connect):
    client = connect(partitioned_broker)
    topic = unique_topic("fo-part")
    consumers = [failover(client, topic, name) for name in ("c1", "c0")]   # join order is irrelevant
    producer = client.create_producer(
        topic, message_routing_mode=pulsar.PartitionsRoutingMode.RoundRobinDistribution, batching_enabled=False)
    contents = payloads(30)
    ids = send_all_async(producer, contents)
    assert sorted({i.partition() for i in ids}) == [0, 1, 2]

    shares = drain(consumers, len(contents))

    expected_owner = {0: "c0", 1: "c1", 2: "c0"}
    partitions_of: dict[str, set[int]] = defaultdict(set)
    for consumer_name, share in zip(("c1", "c0"), shares):
        for msg in share:
            partitions_of[consumer_name].add(msg.message_id().partition())
    assert {p: name for name, parts in partitions_of.items() for p in parts} == expected_owner
    everything = sorted(m.data() for share in shares for m in share)
    assert everything == sorted(contents)
    for consumer in consumers:
        expect_nothing(consumer)
