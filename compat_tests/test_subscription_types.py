"""Subscription types: Shared spreads messages, Key_Shared keeps keys together, Exclusive admits
one consumer, Failover has one active consumer at a time; delayed delivery on Shared only."""

from __future__ import annotations

from collections import defaultdict
from datetime import timedelta

import pulsar
import pytest

from compat_tests.helpers import (
    data_of, now_ms, payloads, receive_exactly, receive_n, receive_round_robin, send_all, send_all_async,
    unique_topic,
)

DELAY_MS = 1500


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
    shares = receive_round_robin(consumers, len(contents))

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
    shares = receive_round_robin(consumers, len(contents))

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


def test_failover_has_one_active_consumer_and_the_standby_takes_over(client):
    topic = unique_topic()
    consumers = subscribe_many(client, topic, "failover", pulsar.ConsumerType.Failover,
                               initial_position=pulsar.InitialPosition.Earliest)
    contents = payloads(10)
    send_all(client.create_producer(topic), contents)

    shares = [[] for _ in consumers]
    for share, consumer in zip(shares, consumers):
        try:
            share.append(consumer.receive(2000))
        except pulsar.Timeout:
            pass
    active = [i for i, share in enumerate(shares) if share]
    assert len(active) == 1, f"exactly one consumer must be active: {[len(s) for s in shares]}"
    active_consumer, standby = consumers[active[0]], consumers[1 - active[0]]
    received = shares[active[0]] + receive_n(active_consumer, 4)
    assert data_of(received) == contents[:5]
    for msg in received:
        active_consumer.acknowledge(msg)

    active_consumer.close()   # its prefetched but unacked messages go to the standby

    receive_exactly(standby, contents[5:])


def test_delayed_message_on_shared_arrives_after_its_delay(client):
    topic = unique_topic()
    consumer = client.subscribe(topic, "delayed", consumer_type=pulsar.ConsumerType.Shared)
    producer = client.create_producer(topic)
    sent_at = now_ms()
    producer.send(b"later", deliver_after=timedelta(milliseconds=DELAY_MS))
    producer.send(b"now")

    first = consumer.receive(5000)
    assert first.data() == b"now"
    consumer.acknowledge(first)
    second = consumer.receive(DELAY_MS + 5000)
    assert second.data() == b"later"
    assert now_ms() >= sent_at + DELAY_MS - 50


def test_delay_is_ignored_on_exclusive_subscriptions(client):
    topic = unique_topic()
    consumer = client.subscribe(topic, "not-delayed", consumer_type=pulsar.ConsumerType.Exclusive)
    producer = client.create_producer(topic)
    producer.send(b"later", deliver_after=timedelta(seconds=30))
    producer.send(b"now")

    assert data_of(receive_n(consumer, 2)) == [b"later", b"now"]
