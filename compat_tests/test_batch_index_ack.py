"""Batch-index acknowledgement (acknowledgmentAtBatchIndexLevelEnabled=true on the broker,
batch_index_ack_enabled=True on the consumer): a partly acknowledged batch is redelivered with
an ack_set, so the acknowledged messages in it are never seen again, also after kill -9."""

from __future__ import annotations

import time

import pulsar
import pytest

from compat_tests.conftest import _broker_fixture
from compat_tests.helpers import (
    data_of, expect_nothing, payloads, receive_exactly, receive_n, send_all_async, unique_topic,
)
from compat_tests.test_durability import ACK_PERSIST_WAIT_S, crash_and_restart

BATCH_INDEX_ACK = {"acknowledgmentAtBatchIndexLevelEnabled": "true"}
BATCH = 10
NACK_DELAY_MS = 100


@pytest.fixture(scope="module")
def batch_ack_broker(tmp_path_factory):
    yield from _broker_fixture(tmp_path_factory, "batch-ack", BATCH_INDEX_ACK)


@pytest.fixture
def fresh_batch_ack_broker(tmp_path_factory):
    """A broker of the test's own (function scope), for kill -9."""
    yield from _broker_fixture(tmp_path_factory, "fresh-batch-ack", BATCH_INDEX_ACK)


def one_batch(client, topic, n=BATCH) -> list[bytes]:
    """n messages in a single batch entry."""
    producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=n,
                                      batching_max_publish_delay_ms=5000)
    contents = payloads(n)
    ids = send_all_async(producer, contents)
    assert len({(i.ledger_id(), i.entry_id()) for i in ids}) == 1, "expected one batch entry"
    return contents


def subscribe(client, topic, kind=pulsar.ConsumerType.Exclusive, **options):
    return client.subscribe(topic, "batch-ack", consumer_type=kind, batch_index_ack_enabled=True,
                            initial_position=pulsar.InitialPosition.Earliest, **options)


def ack_every_other(consumer, messages) -> None:
    for msg in messages[::2]:
        consumer.acknowledge(msg)


def test_partly_acked_batch_redelivers_only_unacked_indexes(batch_ack_broker, connect):
    client = connect(batch_ack_broker)
    topic = unique_topic()
    consumer = subscribe(client, topic)
    contents = one_batch(client, topic)
    received = receive_n(consumer, BATCH)
    ack_every_other(consumer, received)
    consumer.close()

    again = subscribe(client, topic)
    redelivered = receive_n(again, BATCH // 2)
    assert data_of(redelivered) == contents[1::2]
    assert [m.message_id().batch_index() for m in redelivered] == list(range(1, BATCH, 2))
    expect_nothing(again)


def test_negative_ack_of_one_message_in_a_batch_on_shared(batch_ack_broker, connect):
    client = connect(batch_ack_broker)
    topic = unique_topic()
    consumer = subscribe(client, topic, pulsar.ConsumerType.Shared,
                         negative_ack_redelivery_delay_ms=NACK_DELAY_MS)
    contents = one_batch(client, topic, 5)
    received = receive_n(consumer, 5)
    for msg in received[:4]:
        consumer.acknowledge(msg)
    consumer.negative_acknowledge(received[4])

    (again,) = receive_n(consumer, 1)
    assert again.data() == contents[4] and again.redelivery_count() == 1
    consumer.acknowledge(again)
    expect_nothing(consumer)
    consumer.close()
    expect_nothing(subscribe(client, topic, pulsar.ConsumerType.Shared))


def test_batch_index_acks_survive_kill9(fresh_batch_ack_broker, connect):
    broker = fresh_batch_ack_broker
    client = connect(broker)
    topic = unique_topic()
    consumer = subscribe(client, topic)
    contents = one_batch(client, topic)
    ack_every_other(consumer, receive_n(consumer, BATCH))
    time.sleep(ACK_PERSIST_WAIT_S)

    crash_and_restart(broker, client)

    client = connect(broker)
    again = subscribe(client, topic)
    receive_exactly(again, contents[1::2])


def test_without_the_broker_setting_a_partly_acked_batch_is_delivered_again_whole(client):
    """As in Pulsar: with acknowledgmentAtBatchIndexLevelEnabled off (the default) the broker
    ignores ack sets, so a batch acknowledged in part stays unacknowledged and comes back whole.
    (pulsard used to take the first partial ack for the whole entry: 3 of 10 messages lost.)"""
    topic = unique_topic()
    consumer = subscribe(client, topic)
    contents = one_batch(client, topic)
    received = receive_n(consumer, BATCH)
    for msg in received[:7]:
        consumer.acknowledge(msg)
    consumer.close()

    again = subscribe(client, topic)
    receive_exactly(again, contents)


def test_without_the_broker_setting_a_partial_cumulative_ack_keeps_the_batch(client):
    """A cumulative ack inside a batch moves the mark-delete only up to the entry before it."""
    topic = unique_topic()
    consumer = subscribe(client, topic)
    one_batch(client, topic)
    second = one_batch(client, topic)
    received = receive_n(consumer, 2 * BATCH)
    consumer.acknowledge_cumulative(received[BATCH + 4])
    consumer.close()

    again = subscribe(client, topic)
    receive_exactly(again, second)


def test_without_the_broker_setting_a_fully_acked_batch_is_gone(client):
    """Every index acknowledged one by one: the client's last ack names the whole entry."""
    topic = unique_topic()
    consumer = subscribe(client, topic)
    one_batch(client, topic)
    for msg in receive_n(consumer, BATCH):
        consumer.acknowledge(msg)
    consumer.close()

    expect_nothing(subscribe(client, topic))
