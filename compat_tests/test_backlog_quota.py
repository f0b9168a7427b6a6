"""Backlog quotas with the three policies, by size and by message age, through the official client.

The subscription's consumer is closed while messages pile up, so the backlog is exactly what
was produced; the broker checks quotas every second here.
"""

from __future__ import annotations

import json
import time

import pulsar
import pytest

from compat_tests.helpers import (
    AsyncSends, create_namespace, data_of, expect_nothing, payloads, receive_n, send_all, set_namespace_policy,
    subscribe_earliest, unique_topic,
)

FAST_CHECK = {"backlogQuotaCheckIntervalInSeconds": 1}
LIMIT = 10_000
BODY = 1000
WAIT_S = 10.0


def _over_quota(make_broker, connect, name: str, count: int = 20, **quotas):
    """A broker whose namespace public/<name> has these quotas, and a topic there holding
    `count` unconsumed messages of BODY bytes: (client, topic, producer, sent)."""
    namespace = f"public/{name}"
    broker = make_broker(FAST_CHECK)
    create_namespace(broker, namespace)
    client = connect(broker)
    topic = f"persistent://{namespace}/{unique_topic()}"
    producer, sent = _fill(client, topic, count)
    # the quota only now: a check during the fill would stop it half-way
    set_namespace_policy(broker.data_dir, namespace, f"backlog_quota_map={json.dumps(quotas)}")
    return client, topic, producer, sent


def _bodies(count: int, tag: str = "m") -> list[bytes]:
    return [f"{tag}-{i:03d}".encode().ljust(BODY, b".") for i in range(count)]


def _fill(client, topic: str, count: int = 20) -> tuple[object, list[bytes]]:
    subscribe_earliest(client, topic).close()
    producer = client.create_producer(topic, batching_enabled=False)
    sent = _bodies(count)
    send_all(producer, sent)
    return producer, sent


def _wait_until(condition, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"not within {WAIT_S}s: {what}"
        time.sleep(0.2)


def _create_fails(client, topic: str, error: type) -> bool:
    try:
        client.create_producer(topic).close()
    except error:
        return True
    return False


def test_producer_exception_fails_new_and_existing_producers(make_broker, connect):
    client, topic, producer, sent = _over_quota(make_broker, connect, "quota-exc", destination_storage={
        "limitSize": LIMIT, "policy": "producer_exception"})
    _wait_until(lambda: _create_fails(client, topic, pulsar.ProducerBlockedQuotaExceededException),
                "a new producer is refused")
    accepted = []   # until the periodic check disconnects the existing producer (<= 1 s)
    with pytest.raises(pulsar.ProducerBlockedQuotaExceededException):
        for i in range(50):
            body = f"late-{i}".encode()
            producer.send(body)
            accepted.append(body)
            time.sleep(0.1)
    assert len(accepted) < 20
    consumer = subscribe_earliest(client, topic)
    assert data_of(receive_n(consumer, 20 + len(accepted), ack=True)) == sent + accepted
    expect_nothing(consumer)


def test_producer_request_hold_holds_sends_until_the_backlog_drains(make_broker, connect):
    client, topic, producer, sent = _over_quota(make_broker, connect, "quota-hold", destination_storage={
        "limitSize": LIMIT, "policy": "producer_request_hold"})
    _wait_until(lambda: _create_fails(client, topic, pulsar.ProducerBlockedQuotaExceededError),
                "a new producer is refused")
    _wait_until(lambda: not producer.is_connected(), "the existing producer is disconnected")
    held = _bodies(3, "held")
    sends = AsyncSends()
    for i, body in enumerate(held):
        producer.send_async(body, sends.callback_for(i))
    time.sleep(1.5)
    assert sends.results == []                       # held, not failed
    consumer = subscribe_earliest(client, topic)
    assert data_of(receive_n(consumer, 20, ack=True)) == sent
    results = sends.wait(3, timeout_s=20)
    assert [r for _, r, _ in results] == [pulsar.Result.Ok] * 3
    assert data_of(receive_n(consumer, 3, ack=True)) == held
    expect_nothing(consumer)


def test_consumer_backlog_eviction_by_size_skips_the_oldest(make_broker, connect):
    client, topic, producer, sent = _over_quota(make_broker, connect, "quota-evict", destination_storage={
        "limitSize": LIMIT, "policy": "consumer_backlog_eviction"})
    time.sleep(2.5)
    assert not _create_fails(client, topic, pulsar.PulsarException)   # producers are not blocked
    consumer = subscribe_earliest(client, topic)
    got = []
    try:
        while True:
            got.append(consumer.receive(1000).data())
    except pulsar.Timeout:
        pass
    kept = len(got)
    assert got == sent[-kept:]                       # the newest ones, in order
    assert 0 < kept and kept * BODY <= LIMIT * 0.9 < (kept + 1) * (BODY + 200)


def test_consumer_backlog_eviction_by_age(make_broker, connect):
    client, topic, producer, _ = _over_quota(make_broker, connect, "quota-age", count=10, message_age={
        "limitTime": 2, "policy": "consumer_backlog_eviction"})
    time.sleep(4)
    fresh = payloads(3, "fresh")
    send_all(producer, fresh)
    consumer = subscribe_earliest(client, topic)
    assert data_of(receive_n(consumer, 3)) == fresh
    expect_nothing(consumer)


def test_broker_default_quota_applies_without_a_namespace_policy(make_broker, connect):
    broker = make_broker({**FAST_CHECK, "backlogQuotaDefaultLimitBytes": LIMIT,
                          "backlogQuotaDefaultRetentionPolicy": "producer_exception"})
    client = connect(broker)
    topic = unique_topic("quota-default")
    _fill(client, topic)
    _wait_until(lambda: _create_fails(client, topic, pulsar.ProducerBlockedQuotaExceededException),
                "a new producer is refused")
    other = unique_topic("under-quota")
    assert not _create_fails(client, other, pulsar.PulsarException)
