"""Producing and consuming: sync and async sends, batching, compression, message fields, names."""

from __future__ import annotations

import os

import pulsar
import pytest

from compat_tests.helpers import (
    BATCHES_OF_10, data_of, entry_of, full_name, id_tuple, now_ms, payloads, receive_exactly,
    receive_n, send_all, send_all_async, subscribe_earliest, unique_topic,
)

COMPRESSIONS = [pulsar.CompressionType.LZ4, pulsar.CompressionType.ZLib,
                pulsar.CompressionType.ZSTD, pulsar.CompressionType.SNAPPY]


def assert_one_entry_per_message(ids) -> None:
    """Unbatched ids on a fresh topic: one ledger, entries 0..n-1, no batch index, no partition."""
    ledger = ids[0].ledger_id()
    assert [id_tuple(i) for i in ids] == [(ledger, e, -1, -1) for e in range(len(ids))]


def assert_same_ids(messages, sent_ids) -> None:
    assert [id_tuple(m.message_id()) for m in messages] == [id_tuple(i) for i in sent_ids]


def test_sync_send_round_trip(client):
    topic = unique_topic()
    consumer = subscribe_earliest(client, topic)
    producer = client.create_producer(topic)
    contents = payloads(20)

    ids = send_all(producer, contents)

    assert_one_entry_per_message(ids)
    receive_exactly(consumer, contents, ids=ids)


def test_async_send_receipts_all_arrive_in_order(client):
    topic = unique_topic()
    consumer = subscribe_earliest(client, topic)
    producer = client.create_producer(topic, block_if_queue_full=True)
    contents = payloads(300)

    ids = send_all_async(producer, contents)

    assert len(ids) == 300
    assert all(a < b for a, b in zip(ids, ids[1:])), "receipted ids must increase in send order"
    assert_one_entry_per_message(ids)
    receive_exactly(consumer, contents, ids=ids)


def test_batched_messages_share_one_entry_with_batch_indexes(client):
    topic = unique_topic()
    consumer = subscribe_earliest(client, topic)
    # Batches close on count only: a long publish delay and a count of 10.
    producer = client.create_producer(topic, **BATCHES_OF_10)
    contents = payloads(30)

    ids = send_all_async(producer, contents)

    entries = [entry_of(i) for i in ids]
    assert len(set(entries)) == 3, f"30 messages in batches of 10 must make 3 entries: {entries}"
    for batch in range(3):
        chunk = ids[batch * 10:(batch + 1) * 10]
        assert {entry_of(i) for i in chunk} == {entries[batch * 10]}
        assert [i.batch_index() for i in chunk] == list(range(10))
    assert entries[0] < entries[10] < entries[20]
    receive_exactly(consumer, contents, ids=ids)


def test_batching_disabled_gives_one_entry_per_async_send(client):
    topic = unique_topic()
    consumer = subscribe_earliest(client, topic)
    producer = client.create_producer(topic, batching_enabled=False, block_if_queue_full=True)
    contents = payloads(50)

    ids = send_all_async(producer, contents)

    assert_one_entry_per_message(ids)
    assert data_of(receive_n(consumer, 50)) == contents


@pytest.mark.parametrize("batching", [False, True], ids=["unbatched", "batched"])
@pytest.mark.parametrize("compression", COMPRESSIONS, ids=lambda c: c.name)
def test_compressed_payloads_round_trip_exactly(client, compression, batching):
    topic = unique_topic()
    consumer = subscribe_earliest(client, topic)
    producer = client.create_producer(topic, compression_type=compression,
                                      batching_enabled=batching, batching_max_messages=5)
    contents = [b"compressible " * 500 + bytes([i]) for i in range(5)]
    contents += [os.urandom(2000) for _ in range(5)]  # incompressible
    contents += [b"x"]   # (no empty payload: the C++ client cannot inflate an empty ZLib body)

    send_all_async(producer, contents)

    receive_exactly(consumer, contents)


@pytest.mark.parametrize("batching", [False, True], ids=["unbatched", "batched"])
def test_keys_properties_and_timestamps_round_trip(client, batching):
    topic = unique_topic()
    consumer = subscribe_earliest(client, topic)
    producer = client.create_producer(topic, batching_enabled=batching)
    event_base = 1_600_000_000_000
    before = now_ms()

    send_all_async(producer, [f"v{i}".encode() for i in range(5)], fields_for=lambda i: dict(
        partition_key=f"key-{i}", ordering_key=f"order-{i}",
        properties={"index": str(i), "kind": "fields"}, event_timestamp=event_base + i))

    received = receive_n(consumer, 5)
    after = now_ms()
    assert data_of(received) == [f"v{i}".encode() for i in range(5)]
    for i, msg in enumerate(received):
        assert msg.partition_key() == f"key-{i}"
        assert msg.ordering_key() == f"order-{i}"
        assert msg.properties() == {"index": str(i), "kind": "fields"}
        assert msg.event_timestamp() == event_base + i
        assert before - 1000 <= msg.publish_timestamp() <= after + 1000
        assert msg.producer_name() == producer.producer_name()
        assert msg.topic_name() == full_name(topic)
        assert msg.redelivery_count() == 0
    publish_times = [m.publish_timestamp() for m in received]
    assert publish_times == sorted(publish_times)


def test_message_without_key_or_properties_has_empty_fields(client):
    topic = unique_topic()
    consumer = subscribe_earliest(client, topic)
    producer = client.create_producer(topic)
    producer.send(b"plain")
    producer.send(b"")

    msg, empty = receive_n(consumer, 2)
    assert (msg.data(), empty.data()) == (b"plain", b"")
    assert msg.partition_key() == ""
    assert msg.properties() == {}
    assert msg.event_timestamp() == 0


def test_producer_names_generated_unique_or_as_given(client):
    topic = unique_topic()
    first = client.create_producer(topic)
    second = client.create_producer(topic)
    named = client.create_producer(topic, producer_name=f"named-{topic}")

    assert first.producer_name() and second.producer_name()
    assert first.producer_name() != second.producer_name()
    assert named.producer_name() == f"named-{topic}"
    assert first.topic() == full_name(topic)


def test_a_producer_name_in_use_is_refused(client):
    topic = unique_topic()
    name = f"busy-{topic}"
    first = client.create_producer(topic, producer_name=name)
    with pytest.raises(pulsar.ProducerBusy):
        client.create_producer(topic, producer_name=name)

    first.close()   # once the first one is gone, the name is free again
    assert client.create_producer(topic, producer_name=name).producer_name() == name


def test_last_sequence_id_follows_receipts(client):
    topic = unique_topic()
    producer = client.create_producer(topic)
    assert producer.last_sequence_id() == -1

    send_all(producer, payloads(3))
    assert producer.last_sequence_id() == 2

    custom = client.create_producer(topic)
    for seq in (100, 101, 105):
        custom.send(f"s{seq}".encode(), sequence_id=seq)
    assert custom.last_sequence_id() == 105


@pytest.mark.parametrize("produce_form,consume_form", [("short", "full"), ("full", "short")])
def test_short_and_full_topic_names_are_the_same_topic(client, produce_form, consume_form):
    short = unique_topic()
    name = {"short": short, "full": full_name(short)}
    consumer = subscribe_earliest(client, name[consume_form])
    producer = client.create_producer(name[produce_form])

    ids = send_all(producer, payloads(3))

    received = receive_n(consumer, 3)
    assert data_of(received) == payloads(3)
    assert_same_ids(received, ids)
    assert {m.topic_name() for m in received} == {full_name(short)}
