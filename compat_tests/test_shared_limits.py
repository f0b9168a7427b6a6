"""Shared dispatch stops at maxUnackedMessagesPerConsumer / maxUnackedMessagesPerSubscription
unacknowledged messages and resumes once acknowledgements bring the count down to half."""

from __future__ import annotations

import pulsar
import pytest

from compat_tests.conftest import _broker_fixture
from compat_tests.helpers import (
    data_of, expect_nothing, payloads, receive_exactly, receive_n, send_all, unique_topic,
)
from compat_tests.test_subscription_types import drain

LIMIT = 10


@pytest.fixture(scope="module")
def consumer_limit_broker(tmp_path_factory):
    yield from _broker_fixture(tmp_path_factory, "consumer-limit", {"maxUnackedMessagesPerConsumer": LIMIT})


@pytest.fixture(scope="module")
def subscription_limit_broker(tmp_path_factory):
    yield from _broker_fixture(tmp_path_factory, "sub-limit", {"maxUnackedMessagesPerSubscription": LIMIT})


def shared(client, topic, name="c"):
    return client.subscribe(topic, "limited", consumer_type=pulsar.ConsumerType.Shared, consumer_name=name,
                            receiver_queue_size=100, initial_position=pulsar.InitialPosition.Earliest)


def test_consumer_is_blocked_at_its_unacked_limit_until_half_is_acked(consumer_limit_broker, connect):
    client = connect(consumer_limit_broker)
    topic = unique_topic()
    consumer = shared(client, topic)
    contents = payloads(30)
    send_all(client.create_producer(topic), contents)

    first = receive_n(consumer, LIMIT)
    assert data_of(first) == contents[:LIMIT]
    expect_nothing(consumer)
    for msg in first[:4]:                       # 6 unacked: still above half the limit
        consumer.acknowledge(msg)
    expect_nothing(consumer)
    consumer.acknowledge(first[4])              # 5 unacked = half: dispatch resumes up to the limit

    receive_exactly(consumer, contents[LIMIT:LIMIT + 5])


def test_other_consumers_keep_receiving_while_one_is_blocked(consumer_limit_broker, connect):
    client = connect(consumer_limit_broker)
    topic = unique_topic()
    slow, fast = shared(client, topic, "slow"), shared(client, topic, "fast")
    contents = payloads(40)
    send_all(client.create_producer(topic), contents)

    slow_share = receive_n(slow, LIMIT)
    fast_share = drain([fast], len(contents) - LIMIT)[0]   # acks as it goes

    assert len(fast_share) == len(contents) - LIMIT
    assert sorted(data_of(slow_share + fast_share)) == sorted(contents)
    expect_nothing(slow)


def test_subscription_is_blocked_at_its_unacked_limit_until_half_is_acked(subscription_limit_broker, connect):
    client = connect(subscription_limit_broker)
    topic = unique_topic()
    consumers = [shared(client, topic, f"c{i}") for i in range(2)]
    contents = payloads(30)
    send_all(client.create_producer(topic), contents)

    shares = [receive_n(c, LIMIT // 2) for c in consumers]   # round-robin: half each
    for consumer in consumers:
        expect_nothing(consumer)
    consumers[0].acknowledge(shares[0][0])       # 9 unacked: still blocked
    for consumer in consumers:
        expect_nothing(consumer)
    for msg in shares[0][1:]:                    # 5 unacked = half: resumes up to 10 again
        consumers[0].acknowledge(msg)

    more = drain(consumers, 5, ack=False)
    received = data_of(shares[0] + shares[1] + more[0] + more[1])
    assert sorted(received) == sorted(contents[:LIMIT + 5])
    for consumer in consumers:
        expect_nothing(consumer)
