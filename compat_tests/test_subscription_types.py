"""Subscription types: Shared spreads messages, Key_Shared keeps keys together, Exclusive admits
one consumer. Failover and delayed delivery have files of their own."""

from __future__ import annotations

import time
from collections import defaultdict

import pulsar
import pytest

from compat_tests.helpers import data_of, payloads, send_all_async, unique_topic

DRAIN_DEADLINE_S = 20.0


def drain(consumers, expected: int, ack: bool = True) -> list[list]:
    """Receive from all consumers in turn (acking, unless told not to) until ``expected``
    messages or a deadline."""
    got: list[list] = [[] for _ in consumers]
    deadline = time.monotonic() + DRAIN_DEADLINE_S
    while sum(map(len, got)) < expected and time.monotonic() < deadline:
        for share, consumer in zip(got, consumers):
            try:
                msg = consumer.receive(50)
            except pulsar.Timeout:
                continue
            share.append(msg)
            if ack:
                consumer.acknowledge(msg)
    return got


def subscribe_many(client, topic, subscription, kind, count=2, **options):
    return [client.subscribe(topic, subscription, consumer_type=kind, consumer_name=f"c{i}",
                             **options) for i in range(count)]


def assert_exact_union(shares, contents) -> None:
    everything = [m.data() for share in shares for m in share]
    assert len(everything) == len(contents), f"received {len(everything)} of {len(contents)}"
    assert len(set(everything)) == len(everything), "a message was delivered twice"
    assert set(everything) == set(contents)


def test_shared_subscription_spreads_messages_over_two_consumers(client):
    topic = unique_topic()
    consumers = subscribe_many(client, topic, "shared", pulsar.ConsumerType.Shared,
                               receiver_queue_size=10)
    contents = payloads(200)

    send_all_async(client.create_producer(topic, block_if_queue_full=True), contents)
    shares = drain(consumers, len(contents))

    assert_exact_union(shares, contents)
    assert all(shares), f"both consumers must get some: {[len(s) for s in shares]}"
    for share in shares:   # no redelivery happened, so each share is in publish order
        data = data_of(share)
        assert data == sorted(data, key=contents.index)


def test_key_shared_subscription_keeps_each_key_on_one_consumer_in_order(client):
    topic = unique_topic()
    consumers = subscribe_many(client, topic, "key-shared", pulsar.ConsumerType.KeyShared,
                               receiver_queue_size=10)
    keys = [f"key-{k}" for k in range(32)]
    contents = payloads(256)
    key_of = {c: keys[i % len(keys)] for i, c in enumerate(contents)}

    send_all_async(client.create_producer(topic, block_if_queue_full=True), contents,
                   fields_for=lambda i: {"partition_key": keys[i % len(keys)]})
    shares = drain(consumers, len(contents))

    assert_exact_union(shares, contents)
    owner: dict[str, int] = {}
    per_key: dict[str, list[bytes]] = defaultdict(list)
    for index, share in enumerate(shares):
        for msg in share:
            assert msg.partition_key() == key_of[msg.data()]
            assert owner.setdefault(msg.partition_key(), index) == index, \
                f"{msg.partition_key()} went to both consumers"
            per_key[msg.partition_key()].append(msg.data())
    for key, data in per_key.items():
        assert data == [c for c in contents if key_of[c] == key], f"{key} out of order"
    assert len(set(owner.values())) == 2, "32 keys should not all hash to one consumer"


def test_exclusive_subscription_refuses_a_second_consumer(client):
    topic = unique_topic()
    client.subscribe(topic, "only-one", consumer_type=pulsar.ConsumerType.Exclusive)
    with pytest.raises(pulsar.ConsumerBusy):
        client.subscribe(topic, "only-one", consumer_type=pulsar.ConsumerType.Exclusive)
    # another subscription on the same topic is fine
    client.subscribe(topic, "another", consumer_type=pulsar.ConsumerType.Exclusive)
