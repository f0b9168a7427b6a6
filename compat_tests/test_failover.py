"""Failover: one active consumer, picked as Pulsar picks it (priority level, then on a
non-partitioned topic consistent hashing of the consumer names, on a partitioned topic sorted
consumer partition % n); a new active consumer waits activeConsumerFailoverDelayTimeMillis, then
gets the unacknowledged messages again."""

from __future__ import annotations

from collections import defaultdict

import pulsar

from compat_tests.failover_rule import failover_pick, topic_where
from compat_tests.helpers import (
    data_of, expect_nothing, full_name, payloads, receive_exactly, receive_n, send_all, send_all_async,
    unique_topic,
)
from compat_tests.test_subscription_types import drain

NAMES = ["orders-eu-1", "orders-us-2", "billing", "c0", "zeta"]


def failover(client, topic, name, **options):
    return client.subscribe(topic, "fo", consumer_type=pulsar.ConsumerType.Failover, consumer_name=name,
                            initial_position=pulsar.InitialPosition.Earliest, **options)


def test_the_active_consumer_is_picked_by_hashing_names_not_by_arrival(client):
    for rotation in range(3):   # three topics, consumers joining in different orders
        topic = full_name(unique_topic())
        joining = NAMES[rotation:] + NAMES[:rotation]
        consumers = {name: failover(client, topic, name) for name in joining}
        send_all(client.create_producer(topic), [b"only"])
        active = failover_pick(NAMES, topic)
        assert data_of(receive_n(consumers[active], 1)) == [b"only"]
        for name, consumer in consumers.items():
            if name != active:
                expect_nothing(consumer)
        for consumer in consumers.values():
            consumer.close()


def test_failover_has_one_active_consumer_and_the_standby_takes_over(client):
    topic = full_name(unique_topic())
    consumers = {name: failover(client, topic, name) for name in ("c0", "c1")}
    active_name = failover_pick(["c0", "c1"], topic)
    active = consumers.pop(active_name)
    [standby] = consumers.values()
    contents = payloads(10)
    send_all(client.create_producer(topic), contents)

    received = receive_n(active, 5)
    assert data_of(received) == contents[:5]
    expect_nothing(standby)
    for msg in received:
        active.acknowledge(msg)

    active.close()   # its prefetched but unacked messages go to the standby

    receive_exactly(standby, contents[5:])


def test_a_consumer_that_takes_over_gets_the_unacked_messages(client):
    topic = topic_where(lambda pick: pick(["a", "b"]) == "a")
    producer = client.create_producer(topic)
    late = failover(client, topic, "b")
    contents = payloads(5)
    send_all(producer, contents)
    assert data_of(receive_n(late, 5)) == contents      # b was alone: active; nothing acked

    early = failover(client, topic, "a")                 # Pulsar's pick among a and b: takes over

    assert data_of(receive_n(early, 5)) == contents      # rewound from mark-delete to the new owner
    more = payloads(3, "more")
    send_all(producer, more)
    receive_exactly(early, more)
    expect_nothing(late)


def test_the_new_active_consumer_waits_the_failover_delay(make_broker, connect):
    """activeConsumerFailoverDelayTimeMillis: the standby gets nothing until the delay has passed
    since the active consumer left (long here, so the quiet period stays inside it)."""
    client = connect(make_broker({"activeConsumerFailoverDelayTimeMillis": "6000"}))
    topic = full_name(unique_topic())
    consumers = {name: failover(client, topic, name) for name in ("c0", "c1")}
    active = consumers.pop(failover_pick(["c0", "c1"], topic))
    [standby] = consumers.values()
    contents = payloads(3)
    send_all(client.create_producer(topic), contents)
    assert data_of(receive_n(active, 3, timeout_ms=15000)) == contents

    active.close()

    expect_nothing(standby, quiet_ms=1500)
    assert data_of(receive_n(standby, 3, timeout_ms=15000)) == contents


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
