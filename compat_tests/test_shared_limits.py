"""Shared dispatch stops at maxUnackedMessagesPerConsumer / maxUnackedMessagesPerSubscription
unacknowledged messages and resumes once acknowledgements bring the count below half the limit,
as Pulsar 3.0.7 counts: a consumer is unblocked by an ack that finds it at half or less before
that ack is taken off, a subscription once the count after an ack is below half. The limit in
force is the topic's policy, else the namespace's, else the broker's key, read at every change of
the counts, so a new value applies to connected consumers too."""

from __future__ import annotations

import itertools
import time
import uuid

import pulsar
import pytest

from compat_tests.admin_http import AdminHttp
from compat_tests.conftest import _broker_fixture
from compat_tests.helpers import data_of, expect_nothing, payloads, receive_exactly, receive_n, send_all, unique_topic
from compat_tests.test_subscription_types import drain

LIMIT = 10
SETTLE_S = 10.0
_probes = itertools.count()


@pytest.fixture(scope="module")
def consumer_limit_broker(tmp_path_factory):
    yield from _broker_fixture(tmp_path_factory, "consumer-limit", {"maxUnackedMessagesPerConsumer": LIMIT})


@pytest.fixture(scope="module")
def subscription_limit_broker(tmp_path_factory):
    yield from _broker_fixture(tmp_path_factory, "sub-limit", {"maxUnackedMessagesPerSubscription": LIMIT})


def shared(client, topic, name="c", subscription="limited", **options):
    options.setdefault("receiver_queue_size", 100)
    return client.subscribe(topic, subscription, consumer_type=pulsar.ConsumerType.Shared, consumer_name=name,
                            initial_position=pulsar.InitialPosition.Earliest, **options)


def ack_all(consumer, messages) -> None:
    for msg in messages:
        consumer.acknowledge(msg)


def test_consumer_is_blocked_at_its_unacked_limit_until_below_half(consumer_limit_broker, connect):
    client = connect(consumer_limit_broker)
    topic = unique_topic()
    consumer = shared(client, topic)
    contents = payloads(30)
    send_all(client.create_producer(topic), contents)

    first = receive_n(consumer, LIMIT)
    assert data_of(first) == contents[:LIMIT]
    expect_nothing(consumer)
    stats = AdminHttp(consumer_limit_broker.web_url).get(f"/admin/v2/persistent/public/default/{topic}/stats")
    assert stats.json()["subscriptions"]["limited"]["consumers"][0]["blockedConsumerOnUnackedMsgs"] is True
    ack_all(consumer, first[:5])                 # each found 10..6 unacked before it: above half
    expect_nothing(consumer)
    consumer.acknowledge(first[5])               # finds 5 = half: dispatch resumes up to the limit

    receive_exactly(consumer, contents[LIMIT:LIMIT + 6])


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


def test_subscription_stops_reading_at_its_unacked_limit_until_below_half(subscription_limit_broker, connect):
    """Published one at a time, so that every read brings one message: Pulsar sends all of a
    read it has made; the limit stops the next read."""
    client = connect(subscription_limit_broker)
    topic = unique_topic()
    consumers = [shared(client, topic, f"c{i}") for i in range(2)]
    producer = client.create_producer(topic)
    contents = payloads(LIMIT + 1)
    held = []
    for content in contents[:LIMIT]:
        producer.send(content)
        shares = drain(consumers, 1, ack=False)
        held += [(consumer, msg) for consumer, share in zip(consumers, shares) for msg in share]
    assert sorted(data_of(msg for _, msg in held)) == sorted(contents[:LIMIT])
    producer.send(contents[LIMIT])
    for consumer in consumers:
        expect_nothing(consumer)
    stats = AdminHttp(subscription_limit_broker.web_url).get(f"/admin/v2/persistent/public/default/{topic}/stats")
    assert stats.json()["subscriptions"]["limited"]["blockedSubscriptionOnUnackedMsgs"] is True

    for consumer, msg in held[:5]:               # 5 unacked on the subscription: not below half
        consumer.acknowledge(msg)
    for consumer in consumers:
        expect_nothing(consumer)
    consumer, msg = held[5]
    consumer.acknowledge(msg)                    # 4: reading resumes
    resumed = drain(consumers, 1, ack=False)
    assert data_of(resumed[0] + resumed[1]) == contents[LIMIT:]


# -- the limit in force: topic policy, namespace policy, broker key ------------------------------
@pytest.mark.parametrize("namespace_path, topic_path, broker_default", [
    ("maxUnackedMessagesPerConsumer", "maxUnackedMessagesOnConsumer", 50000),
    ("maxUnackedMessagesPerSubscription", "maxUnackedMessagesOnSubscription", 200000),
])
def test_the_unacked_limit_in_force_applies_to_a_connected_consumer(broker, connect, namespace_path, topic_path,
                                                                    broker_default):
    """A Shared consumer taking one message per read (receiver queue of 1) holds as many
    unacknowledged messages as the limit in force lets it; a change reaches it at its next
    acknowledgement. Each change is awaited by a probe: a new subscription's consumer."""
    client = connect(broker)
    http = AdminHttp(broker.web_url)
    namespace = f"public/unacked-{uuid.uuid4().hex[:8]}"
    assert http.put(f"/admin/v2/namespaces/{namespace}").status_code == 204
    topic = f"persistent://{namespace}/t"
    topic_policy = f"/admin/v2/persistent/{namespace}/t/{topic_path}"
    namespace_policy = f"/admin/v2/namespaces/{namespace}/{namespace_path}"
    contents = payloads(30)
    send_all(client.create_producer(topic), contents)   # the topic is loaded

    assert http.post(namespace_policy, json=4).status_code == 204
    await_limit(client, topic, 4)
    consumer = shared(client, topic, receiver_queue_size=1)
    held = receive_exactly(consumer, contents[:4])

    assert http.post(topic_policy, json=6).status_code == 204   # the topic's own, over its namespace's
    await_limit(client, topic, 6)
    consumer.acknowledge(held.pop(0))            # 3 left: not below 6 / 2
    expect_nothing(consumer)
    consumer.acknowledge(held.pop(0))            # 2: resumes up to 6
    held += receive_exactly(consumer, contents[4:8])

    assert http.delete(topic_policy).status_code == 204   # the namespace's 4 again, with 6 held
    await_limit(client, topic, 4)
    ack_all(consumer, [held.pop(0) for _ in range(4)])   # 2 left: not below 4 / 2
    expect_nothing(consumer)
    consumer.acknowledge(held.pop(0))            # 1: resumes up to 4
    held += receive_exactly(consumer, contents[8:11])

    assert http.delete(namespace_policy).status_code == 204   # the broker's key
    await_limit(client, topic, len(contents))
    consumer.acknowledge(held.pop(0))
    receive_exactly(consumer, contents[11:])
    answer = http.get(topic_policy, applied="true")
    assert answer.status_code == 200 and answer.json() == broker_default


def await_limit(client, topic: str, expected: int) -> None:
    """Until a new subscription's consumer, taking one message per read, holds `expected`
    unacknowledged messages (Pulsar applies a policy asynchronously)."""
    deadline = time.monotonic() + SETTLE_S
    while True:
        probe = shared(client, topic, subscription=f"probe-{next(_probes)}", receiver_queue_size=1)
        held = 0
        try:
            while True:
                probe.receive(500)
                held += 1
        except pulsar.Timeout:
            pass
        probe.unsubscribe()
        if held == expected:
            return
        assert time.monotonic() < deadline, f"the limit in force lets {held} through, expected {expected}"
