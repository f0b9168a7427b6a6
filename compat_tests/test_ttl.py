"""Message TTL: messages older than the TTL are acknowledged for every subscription by the
broker's periodic expiry check; fresher ones are still delivered, exactly and in order."""

from __future__ import annotations

import time

from compat_tests.helpers import (
    BATCHES_OF_10, create_namespace, data_of, expect_nothing, payloads, receive_n, send_all,
    send_all_async, subscribe_earliest, unique_topic,
)

TTL_S = 3
FAST_CHECK = {"messageExpiryCheckIntervalInMinutes": 0.01}   # every 0.6 s


def _expire_then_consume(client, topic: str, **producer_options) -> list[bytes]:
    """Two subscriptions made, closed; old messages age past the TTL; fresh ones follow."""
    for name in ("a", "b"):
        subscribe_earliest(client, topic, name).close()
    producer = client.create_producer(topic, **producer_options)
    send_all_async(producer, payloads(20, "old"))
    time.sleep(TTL_S + 1.5)
    fresh = payloads(3, "fresh")
    send_all_async(producer, fresh)
    for name in ("a", "b"):
        consumer = subscribe_earliest(client, topic, name)
        assert data_of(receive_n(consumer, 3)) == fresh
        expect_nothing(consumer)
        consumer.close()
    return fresh


def test_namespace_ttl_expires_old_messages_on_every_subscription(make_broker, connect):
    broker = make_broker(FAST_CHECK)
    create_namespace(broker, "public/ttl", f"message_ttl_in_seconds={TTL_S}")
    client = connect(broker)
    _expire_then_consume(client, f"persistent://public/ttl/{unique_topic()}", batching_enabled=False)


def test_broker_default_ttl_expires_whole_batches(make_broker, connect):
    broker = make_broker({**FAST_CHECK, "ttlDurationDefaultInSeconds": TTL_S})
    client = connect(broker)
    _expire_then_consume(client, unique_topic("ttl-batch"), **BATCHES_OF_10)


def test_namespace_ttl_zero_overrides_the_broker_default(make_broker, connect):
    broker = make_broker({**FAST_CHECK, "ttlDurationDefaultInSeconds": 1})
    create_namespace(broker, "public/keep", "message_ttl_in_seconds=0")
    client = connect(broker)
    topic = f"persistent://public/keep/{unique_topic()}"
    subscribe_earliest(client, topic).close()
    sent = payloads(5)
    send_all(client.create_producer(topic, batching_enabled=False), sent)
    time.sleep(2.5)
    consumer = subscribe_earliest(client, topic)
    assert data_of(receive_n(consumer, 5)) == sent
    expect_nothing(consumer)
