"""Subscription types: Shared spreads messages over consumers; Exclusive admits only one."""

from __future__ import annotations

import time

import pulsar
import pytest

from compat_tests.helpers import payloads, send_all_async, unique_topic

SPREAD_DEADLINE_S = 20.0


def drain(consumers, expected: int) -> dict[int, list[bytes]]:
    """Receive from all consumers in turn (acking) until ``expected`` messages or a deadline."""
    got: dict[int, list[bytes]] = {i: [] for i in range(len(consumers))}
    deadline = time.monotonic() + SPREAD_DEADLINE_S
    while sum(map(len, got.values())) < expected and time.monotonic() < deadline:
        for i, consumer in enumerate(consumers):
            try:
                msg = consumer.receive(50)
            except pulsar.Timeout:
                continue
            got[i].append(msg.data())
            consumer.acknowledge(msg)
    return got


def test_shared_subscription_spreads_messages_over_two_consumers(client):
    topic = unique_topic()
    options = dict(consumer_type=pulsar.ConsumerType.Shared, receiver_queue_size=10)
    first = client.subscribe(topic, "shared", consumer_name="c1", **options)
    second = client.subscribe(topic, "shared", consumer_name="c2", **options)
    contents = payloads(200)

    send_all_async(client.create_producer(topic, block_if_queue_full=True), contents)
    got = drain([first, second], len(contents))

    everything = got[0] + got[1]
    assert len(everything) == len(contents), f"received {len(everything)} of {len(contents)}"
    assert len(set(everything)) == len(everything), "a message was delivered twice"
    assert set(everything) == set(contents)
    assert got[0] and got[1], f"both consumers must get some: {len(got[0])} / {len(got[1])}"
    for share in got.values():   # each consumer still sees its share in publish order
        assert share == sorted(share, key=contents.index)


def test_exclusive_subscription_refuses_a_second_consumer(client):
    topic = unique_topic()
    client.subscribe(topic, "only-one", consumer_type=pulsar.ConsumerType.Exclusive)
    with pytest.raises(pulsar.ConsumerBusy):
        client.subscribe(topic, "only-one", consumer_type=pulsar.ConsumerType.Exclusive)
    # another subscription on the same topic is fine
    client.subscribe(topic, "another", consumer_type=pulsar.ConsumerType.Exclusive)
