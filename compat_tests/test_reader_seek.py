"""Readers (earliest, latest, from a message id), consumer seek, and the last message id.

Start-id semantics are the client's: the broker always starts at the given position and the
C++ client drops the start message itself (or the earlier messages of its batch) unless the
reader/consumer was created with start_message_id_inclusive=True.
"""

from __future__ import annotations

import time

import pulsar
import pytest

from compat_tests.helpers import (
    BATCHES_OF_10, data_of, expect_nothing, id_tuple, now_ms, payloads, receive_exactly, receive_n,
    send_all, send_all_async, subscribe_earliest, unique_topic,
)

ACK_FLUSH_WAIT_S = 0.5   # the client groups acks for 100 ms; let them reach the broker first


def produce(client, topic, n, batched=False, tag="m"):
    """Produce n messages (batches of 10 if batched); return (contents, receipted ids)."""
    contents = payloads(n, tag)
    if batched:
        return contents, send_all_async(client.create_producer(topic, **BATCHES_OF_10), contents)
    return contents, send_all(client.create_producer(topic), contents)


# -- readers ----------------------------------------------------------------------------------
def test_reader_from_earliest_reads_everything_then_has_nothing_available(client):
    topic = unique_topic()
    contents, ids = produce(client, topic, 10)
    reader = client.create_reader(topic, pulsar.MessageId.earliest)

    assert reader.has_message_available()
    received = receive_n(reader, 10)
    assert data_of(received) == contents
    assert [id_tuple(m.message_id()) for m in received] == [id_tuple(i) for i in ids]
    assert not reader.has_message_available()
    expect_nothing(reader)


def test_reader_from_latest_gets_only_new_messages(client):
    topic = unique_topic()
    produce(client, topic, 5, tag="old")
    reader = client.create_reader(topic, pulsar.MessageId.latest)

    assert not reader.has_message_available()
    expect_nothing(reader)
    new, _ = produce(client, topic, 3, tag="new")
    receive_exactly(reader, new)


def test_reader_on_empty_topic_has_nothing_available(client):
    topic = unique_topic()
    client.create_producer(topic).close()   # the topic exists, with no message
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    assert not reader.has_message_available()
    expect_nothing(reader)


@pytest.mark.parametrize("batched", [False, True], ids=["unbatched", "batched"])
@pytest.mark.parametrize("inclusive", [False, True], ids=["exclusive", "inclusive"])
def test_reader_from_a_message_id(client, batched, inclusive):
    topic = unique_topic()
    contents, ids = produce(client, topic, 20, batched)
    start = 13   # in the middle of the second batch when batched

    reader = client.create_reader(topic, ids[start], start_message_id_inclusive=inclusive)

    first = start if inclusive else start + 1
    receive_exactly(reader, contents[first:], ids=ids[first:])


def test_reader_from_a_serialized_message_id(client):
    topic = unique_topic()
    contents, ids = produce(client, topic, 5)
    start = pulsar.MessageId.deserialize(ids[1].serialize())
    reader = client.create_reader(topic, start)
    assert data_of(receive_n(reader, 3)) == contents[2:]


# -- consumer seek ----------------------------------------------------------------------------
def consume_and_ack_all(consumer, n):
    received = receive_n(consumer, n, ack=True)
    time.sleep(ACK_FLUSH_WAIT_S)
    return received


@pytest.mark.parametrize("inclusive", [False, True], ids=["exclusive", "inclusive"])
def test_seek_to_message_id_rewinds_an_acked_subscription(client, inclusive):
    topic = unique_topic()
    consumer = subscribe_earliest(client, topic, "seek", start_message_id_inclusive=inclusive)
    contents, ids = produce(client, topic, 10)
    consume_and_ack_all(consumer, 10)

    consumer.seek(ids[3])

    first = 3 if inclusive else 4
    receive_exactly(consumer, contents[first:])


def test_seek_to_earliest_redelivers_everything(client):
    topic = unique_topic()
    consumer = subscribe_earliest(client, topic, "seek-earliest")
    contents, _ = produce(client, topic, 6)
    consume_and_ack_all(consumer, 6)

    consumer.seek(pulsar.MessageId.earliest)

    receive_exactly(consumer, contents)


def test_seek_to_timestamp_starts_at_first_message_published_since(client):
    topic = unique_topic()
    consumer = subscribe_earliest(client, topic, "seek-time")
    before, _ = produce(client, topic, 5, tag="before")
    time.sleep(0.05)
    boundary = now_ms()
    time.sleep(0.05)
    after, _ = produce(client, topic, 5, tag="after")
    consume_and_ack_all(consumer, 10)

    consumer.seek(boundary)

    received = receive_n(consumer, 5)
    assert data_of(received) == after
    assert all(m.publish_timestamp() >= boundary for m in received)
    expect_nothing(consumer)

    consumer.seek(0)   # a time before every message: the whole topic again
    assert data_of(receive_n(consumer, 10)) == before + after


def test_seek_to_the_exact_publish_time_of_a_message_starts_at_that_message(client):
    """Pulsar resumes at the first message published at the time or later; pulsard used to
    resume after the message published exactly then."""
    topic = unique_topic()
    consumer = subscribe_earliest(client, topic, "seek-exact-time")
    producer = client.create_producer(topic, batching_enabled=False)
    for content in payloads(6):
        producer.send(content)
        time.sleep(0.005)   # a distinct publish millisecond each
    received = receive_n(consumer, 6, ack=True)
    target = received[3]
    assert received[2].publish_timestamp() < target.publish_timestamp()

    consumer.seek(target.publish_timestamp())

    assert data_of(receive_n(consumer, 3)) == data_of(received[3:])
    expect_nothing(consumer)


# -- last message id --------------------------------------------------------------------------
def test_last_message_id_of_an_empty_topic_has_no_entry(client):
    consumer = client.subscribe(unique_topic(), "last-empty")
    assert consumer.get_last_message_id().entry_id() == -1


@pytest.mark.parametrize("batched", [False, True], ids=["unbatched", "batched"])
def test_last_message_id_is_the_last_receipted_one(client, batched):
    topic = unique_topic()
    consumer = client.subscribe(topic, "last")
    _, ids = produce(client, topic, 20, batched)

    last = consumer.get_last_message_id()

    assert id_tuple(last) == id_tuple(ids[-1])
    assert last.batch_index() == (9 if batched else -1)
