"""Delayed delivery (deliver_after / deliver_at): held by the broker on Shared subscriptions
until due, never early; immediate on Exclusive and Failover and when delayed delivery is off
(the topic's policy, else its namespace's, else delayedDeliveryEnabled); held messages stay
unacknowledged, so they survive a kill -9 restart."""

from __future__ import annotations

import time
from datetime import timedelta

import pulsar
import pytest

from compat_tests.admin_http import AdminHttp
from compat_tests.conftest import _broker_fixture
from compat_tests.helpers import data_of, expect_nothing, now_ms, receive_n, unique_topic
from compat_tests.test_durability import ACK_PERSIST_WAIT_S, crash_and_restart
from compat_tests.test_topic_policies import settles, topic_path

DELAY_MS = 1500
CLOCK_TOLERANCE_MS = 50      # client and broker share this host's clock; allow for rounding
TICK_MS = 1000               # delayedDeliveryTickTimeMillis: at most this late after the due time


@pytest.fixture(scope="module")
def no_delay_broker(tmp_path_factory):
    yield from _broker_fixture(tmp_path_factory, "no-delay", {"delayedDeliveryEnabled": "false"})


def shared(client, topic, subscription="delayed"):
    return client.subscribe(topic, subscription, consumer_type=pulsar.ConsumerType.Shared)


def test_delayed_message_on_shared_arrives_after_its_delay(client):
    topic = unique_topic()
    consumer = shared(client, topic)
    producer = client.create_producer(topic)
    sent_at = now_ms()
    producer.send(b"later", deliver_after=timedelta(milliseconds=DELAY_MS))
    producer.send(b"now")

    first = consumer.receive(5000)
    assert first.data() == b"now"
    consumer.acknowledge(first)
    second = consumer.receive(DELAY_MS + 5000)
    assert second.data() == b"later"
    assert now_ms() >= sent_at + DELAY_MS - CLOCK_TOLERANCE_MS
    consumer.acknowledge(second)
    expect_nothing(consumer)


def test_messages_with_deliver_at_arrive_in_due_order_never_early(client):
    topic = unique_topic()
    consumer = shared(client, topic)
    producer = client.create_producer(topic)
    start = now_ms()
    due = {b"third": start + 2400, b"first": start + 600, b"second": start + 1500}
    for body, at in due.items():
        producer.send(body, deliver_at=at)

    arrivals = []
    for _ in range(3):
        (msg,) = receive_n(consumer, 1, timeout_ms=4000)
        arrivals.append((msg.data(), now_ms()))
        consumer.acknowledge(msg)
    assert [body for body, _ in arrivals] == [b"first", b"second", b"third"]
    for body, arrived in arrivals:
        assert due[body] - CLOCK_TOLERANCE_MS <= arrived <= due[body] + TICK_MS + 1000
    expect_nothing(consumer)


def test_a_delay_already_past_is_delivered_at_once(client):
    topic = unique_topic()
    consumer = shared(client, topic)
    client.create_producer(topic).send(b"overdue", deliver_at=now_ms() - 10_000)
    assert data_of(receive_n(consumer, 1, timeout_ms=500)) == [b"overdue"]


@pytest.mark.parametrize("kind", [pulsar.ConsumerType.Exclusive, pulsar.ConsumerType.Failover])
def test_delay_is_ignored_on_single_active_subscriptions(client, kind):
    topic = unique_topic()
    consumer = client.subscribe(topic, "not-delayed", consumer_type=kind)
    producer = client.create_producer(topic)
    producer.send(b"later", deliver_after=timedelta(seconds=30))
    producer.send(b"now")

    assert data_of(receive_n(consumer, 2)) == [b"later", b"now"]


def test_delay_is_ignored_when_delayed_delivery_is_disabled(no_delay_broker, connect):
    client = connect(no_delay_broker)
    topic = unique_topic()
    consumer = shared(client, topic)
    producer = client.create_producer(topic)
    producer.send(b"later", deliver_after=timedelta(seconds=30))
    producer.send(b"now")

    assert data_of(receive_n(consumer, 2)) == [b"later", b"now"]


def test_delayed_messages_survive_kill9_and_arrive_when_due(fresh_broker, connect):
    topic = unique_topic()
    client = connect(fresh_broker)
    consumer = shared(client, topic, "durable-delay")
    producer = client.create_producer(topic)
    due_at = now_ms() + 4000
    producer.send(b"delayed", deliver_at=due_at)
    producer.send(b"now")
    (now,) = receive_n(consumer, 1)
    assert now.data() == b"now"
    consumer.acknowledge(now)
    time.sleep(ACK_PERSIST_WAIT_S)

    crash_and_restart(fresh_broker, client)

    client = connect(fresh_broker)
    consumer = shared(client, topic, "durable-delay")
    (delayed,) = receive_n(consumer, 1, timeout_ms=due_at - now_ms() + TICK_MS + 5000)
    assert delayed.data() == b"delayed"
    assert now_ms() >= due_at - CLOCK_TOLERANCE_MS
    consumer.acknowledge(delayed)
    expect_nothing(consumer)


def delay_is_honoured(client, topic: str) -> bool:
    """Whether a message sent with a 30 s delay is held (True) or delivered at once (False), to
    a subscription of its own."""
    consumer = shared(client, topic, unique_topic("sub"))
    producer = client.create_producer(topic)
    producer.send(b"later", deliver_after=timedelta(seconds=30))
    producer.send(b"now")
    first = consumer.receive(5000).data()
    try:
        second = consumer.receive(1500).data()
    except pulsar.Timeout:
        second = None
    consumer.close()
    producer.close()
    if first == b"later":
        return False
    assert (first, second) == (b"now", None)
    return True


def test_a_topic_policy_turns_delayed_delivery_off_for_that_topic_only(broker, connect):
    client, http = connect(broker), AdminHttp(broker.web_url)
    off, other = unique_topic("delay-off"), unique_topic("delay-on")
    shared(client, off).close()
    policy = {"active": False, "tickTime": 1000}
    assert http.post(topic_path(off) + "/delayedDelivery", json=policy).status_code == 204
    assert settles(http, topic_path(off) + "/delayedDelivery", policy)

    assert not delay_is_honoured(client, off)
    assert delay_is_honoured(client, other)

    assert http.delete(topic_path(off) + "/delayedDelivery").status_code == 204   # back to the broker's
    assert settles(http, topic_path(off) + "/delayedDelivery", {"active": True, "tickTime": 1000}, applied="true")
    assert delay_is_honoured(client, off)


def test_the_namespace_policy_applies_and_a_topic_policy_overrides_it(broker, connect):
    client, http = connect(broker), AdminHttp(broker.web_url)
    namespace = f"public/{unique_topic('ns')}"
    assert http.put(f"/admin/v2/namespaces/{namespace}").status_code == 204
    policy = {"active": False, "tickTime": 1000}
    assert http.post(f"/admin/v2/namespaces/{namespace}/delayedDelivery", json=policy).status_code == 204
    plain, overriding = (f"persistent://{namespace}/{unique_topic()}" for _ in range(2))
    shared(client, overriding).close()
    own = f"/admin/v2/persistent/{namespace}/{overriding.rsplit('/', 1)[1]}/delayedDelivery"
    assert http.post(own, json={"active": True, "tickTime": 1000}).status_code == 204
    assert settles(http, own, {"active": True, "tickTime": 1000}, applied="true")

    assert not delay_is_honoured(client, plain)
    assert delay_is_honoured(client, overriding)


def test_the_tick_time_of_a_topic_policy_spaces_deliveries(broker, connect):
    """pulsard's tick: delayed messages never come early, and the tracker fires at most once a
    tick, so one due 0.3 s after another comes a whole tick after it. (Pulsar, whose
    isDelayedDeliveryDeliverAtTimeStrict is false by default, instead delivers at once what is
    due within one tick.)"""
    client, http = connect(broker), AdminHttp(broker.web_url)
    topic, tick_ms = unique_topic("tick"), 3000
    consumer = shared(client, topic)
    assert http.post(topic_path(topic) + "/delayedDelivery", json={"active": True, "tickTime": tick_ms}).status_code == 204
    assert settles(http, topic_path(topic) + "/delayedDelivery", {"active": True, "tickTime": tick_ms})
    producer = client.create_producer(topic)
    start = now_ms()
    producer.send(b"first", deliver_at=start + 500)
    producer.send(b"second", deliver_at=start + 800)

    (first,) = receive_n(consumer, 1, timeout_ms=tick_ms + 5000)
    first_at = now_ms()
    (second,) = receive_n(consumer, 1, timeout_ms=tick_ms + 5000)
    assert data_of([first, second]) == [b"first", b"second"]
    assert now_ms() - first_at >= tick_ms - CLOCK_TOLERANCE_MS
