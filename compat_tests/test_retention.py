"""Retention: consumed ledgers are deleted only beyond retention (Pulsar's -1 / 0 / >0 table),
unconsumed ones never, and a topic without subscriptions keeps only what retention says.

Ledgers hold 5 entries here (batching off: one message = one entry), so "the first ledger was
deleted" shows as a reader from the earliest position starting at message 5.
"""

from __future__ import annotations

import time

import pytest

from compat_tests.helpers import (
    create_namespace, data_of, payloads, read_all, receive_n, send_all, set_namespace_policy,
    subscribe_earliest, unique_topic,
)

SMALL_LEDGERS = {
    "managedLedgerMaxEntriesPerLedger": 5,
    "managedLedgerMinLedgerRolloverTimeMinutes": 0,
    "retentionCheckIntervalInSeconds": 1,
}
WAIT_S = 10.0


def wait_for_log(client, topic: str, expected: list[bytes]) -> None:
    """Poll (bounded) until a reader from the earliest position reads exactly `expected`."""
    deadline = time.monotonic() + WAIT_S
    while True:
        got = read_all(client, topic)
        if got == expected or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert got == expected


def produce(client, topic: str, count: int, tag: str = "m") -> list[bytes]:
    producer = client.create_producer(topic, batching_enabled=False)
    contents = payloads(count, tag)
    send_all(producer, contents)
    producer.close()
    return contents


@pytest.fixture
def small_ledgers(make_broker):
    return make_broker(SMALL_LEDGERS)


def test_consumed_ledgers_are_deleted_but_never_the_current_one(small_ledgers, connect):
    client = connect(small_ledgers)
    topic = unique_topic("consumed")
    consumer = subscribe_earliest(client, topic)
    sent = produce(client, topic, 7)
    assert data_of(receive_n(consumer, 7, ack=True)) == sent
    wait_for_log(client, topic, sent[5:])


def test_a_subscription_behind_keeps_its_backlog(small_ledgers, connect):
    client = connect(small_ledgers)
    topic = unique_topic("behind")
    fast = subscribe_earliest(client, topic, "fast")
    slow = subscribe_earliest(client, topic, "slow")
    sent = produce(client, topic, 12)
    receive_n(fast, 12, ack=True)
    assert data_of(receive_n(slow, 6, ack=True)) == sent[:6]   # slow is inside the 2nd ledger
    wait_for_log(client, topic, sent[5:])


def test_without_subscriptions_default_retention_keeps_only_the_current_ledger(small_ledgers, connect):
    client = connect(small_ledgers)
    topic = unique_topic("nosub")
    sent = produce(client, topic, 12)
    wait_for_log(client, topic, sent[10:])


def test_infinite_namespace_retention_keeps_everything(make_broker, connect):
    broker = make_broker(SMALL_LEDGERS)
    create_namespace(broker, "public/forever",
                     'retention_policies={"retentionTimeInMinutes": -1, "retentionSizeInMB": -1}')
    client = connect(broker)
    topic = f"persistent://public/forever/{unique_topic()}"
    consumer = subscribe_earliest(client, topic)
    sent = produce(client, topic, 12)
    receive_n(consumer, 12, ack=True)
    time.sleep(1.5)                                   # a retention check and cursor flushes pass
    assert read_all(client, topic) == sent


def test_size_retention_keeps_the_newest_data(make_broker, connect):
    """4 entries of 100 kB a ledger; 1 MB kept: the oldest ledgers go while what remains after
    deleting them still reaches 1 MB."""
    broker = make_broker({**SMALL_LEDGERS, "managedLedgerMaxEntriesPerLedger": 4})
    create_namespace(broker, "public/sized",
                     'retention_policies={"retentionTimeInMinutes": -1, "retentionSizeInMB": 1}')
    client = connect(broker)
    topic = f"persistent://public/sized/{unique_topic()}"
    producer = client.create_producer(topic, batching_enabled=False)
    sent = [bytes([i]) * 100_000 for i in range(16)]
    send_all(producer, sent)
    wait_for_log(client, topic, sent[4:])


def test_changed_policy_applies_to_a_loaded_topic(make_broker, connect):
    namespace = "public/changing"
    broker = make_broker(SMALL_LEDGERS)
    create_namespace(broker, namespace, 'retention_policies={"retentionTimeInMinutes": -1, "retentionSizeInMB": -1}')
    client = connect(broker)
    topic = f"persistent://{namespace}/{unique_topic()}"
    sent = produce(client, topic, 12)
    assert read_all(client, topic) == sent
    set_namespace_policy(broker.data_dir, namespace,
                         'retention_policies={"retentionTimeInMinutes": 0, "retentionSizeInMB": 0}')
    wait_for_log(client, topic, sent[10:])


def test_an_idle_topic_rolls_over_so_retention_can_act(make_broker, connect):
    broker = make_broker({**SMALL_LEDGERS, "managedLedgerMaxEntriesPerLedger": 50000,
                          "managedLedgerMaxLedgerRolloverTimeMinutes": 0.02})
    client = connect(broker)
    topic = unique_topic("idle")
    consumer = subscribe_earliest(client, topic)
    sent = produce(client, topic, 3)
    assert data_of(receive_n(consumer, 3, ack=True)) == sent
    wait_for_log(client, topic, [])                   # sealed after 1.2 s idle, then deleted
    later = produce(client, topic, 2, "later")
    assert data_of(receive_n(consumer, 2)) == later
