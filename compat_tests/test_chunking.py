"""Chunked messages (chunking_enabled producer, batching off, payload above maxMessageSize):
each chunk is stored as a plain entry and delivered in order to one consumer, which reassembles
the message; across a kill -9 restart too. On Shared, Pulsar gives chunks no special treatment
(its docs list chunking for Exclusive and Failover only): with a single Shared consumer the
messages arrive whole, which is what is tested here."""

from __future__ import annotations

import os

import pulsar
import pytest

from compat_tests.conftest import SMALL_MESSAGE_CONFIG, _broker_fixture
from compat_tests.helpers import data_of, expect_nothing, receive_n, short, subscribe_earliest, unique_topic
from compat_tests.test_durability import crash_and_restart

MAX_MESSAGE_SIZE = SMALL_MESSAGE_CONFIG["maxMessageSize"]


@pytest.fixture
def fresh_small_message_broker(tmp_path_factory):
    """A broker of the test's own (function scope), for kill -9."""
    yield from _broker_fixture(tmp_path_factory, "fresh-small-msg", SMALL_MESSAGE_CONFIG)


def chunking_producer(client, topic):
    return client.create_producer(topic, chunking_enabled=True, batching_enabled=False)


def mixed_payloads() -> list[bytes]:
    """Large (3 to 4 chunks) and small messages interleaved."""
    big = [os.urandom(3 * MAX_MESSAGE_SIZE + 1000 * i) for i in range(3)]
    return [big[0], b"small-0", big[1], b"small-1", big[2]]


def send_and_count_entries(client, topic, contents) -> int:
    producer = chunking_producer(client, topic)
    ids = [producer.send(c) for c in contents]
    assert ids == sorted(ids)
    return len(ids)


def assert_same(received, contents) -> None:
    got = data_of(received)
    assert [len(g) for g in got] == [len(c) for c in contents]
    assert got == contents, f"first difference at {[short(g) for g in got]}"


@pytest.mark.parametrize("kind", [pulsar.ConsumerType.Exclusive, pulsar.ConsumerType.Failover,
                                  pulsar.ConsumerType.Shared])
def test_large_messages_arrive_whole_and_in_order(small_message_broker, connect, kind):
    client = connect(small_message_broker)
    topic = unique_topic()
    consumer = subscribe_earliest(client, topic, "chunks", consumer_type=kind)
    contents = mixed_payloads()
    send_and_count_entries(client, topic, contents)

    received = receive_n(consumer, len(contents), timeout_ms=10_000)
    assert_same(received, contents)
    for msg in received:
        consumer.acknowledge(msg)
    expect_nothing(consumer)

    consumer.close()   # every chunk of every message was acknowledged
    expect_nothing(subscribe_earliest(client, topic, "chunks", consumer_type=kind))


def test_each_chunk_is_one_entry(small_message_broker, connect):
    client = connect(small_message_broker)
    topic = unique_topic()
    consumer = subscribe_earliest(client, topic, "chunks")
    big = os.urandom(3 * MAX_MESSAGE_SIZE + 10)      # 4 chunks: entries 0..3
    producer = chunking_producer(client, topic)
    producer.send(big)
    small_id = producer.send(b"after")

    assert small_id.entry_id() == 4
    assert data_of(receive_n(consumer, 2, timeout_ms=10_000)) == [big, b"after"]


def test_chunked_messages_survive_kill9(fresh_small_message_broker, connect):
    broker = fresh_small_message_broker
    client = connect(broker)
    topic = unique_topic()
    subscribe_earliest(client, topic, "chunks").close()
    contents = mixed_payloads()
    send_and_count_entries(client, topic, contents)

    crash_and_restart(broker, client)

    client = connect(broker)
    consumer = subscribe_earliest(client, topic, "chunks")
    assert_same(receive_n(consumer, len(contents), timeout_ms=10_000), contents)
    expect_nothing(consumer)
