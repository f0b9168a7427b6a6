"""Message deduplication: by producer name and sequence id, across reconnects, restarts and kill -9."""

from __future__ import annotations

import pulsar
import pytest

from compat_tests.helpers import (
    create_namespace, data_of, entry_of, expect_nothing, payloads, receive_n, send_all,
    subscribe_earliest, unique_topic,
)

DEDUP_CONFIG = {"brokerDeduplicationEnabled": "true", "brokerDeduplicationEntriesInterval": 5}
DUPLICATE_ID = (-1, -1)   # what Pulsar receipts a duplicate with: it was not stored again


@pytest.fixture
def dedup_broker(make_broker):
    return make_broker(DEDUP_CONFIG)


def send_with_ids(producer, contents, first_id: int = 1) -> list:
    """Explicit sequence ids from 1 (the Python client ignores sequence_id=0 and assigns its own)."""
    return [producer.send(c, sequence_id=first_id + i) for i, c in enumerate(contents)]


def test_duplicate_sequence_ids_are_receipted_but_not_stored(dedup_broker, connect):
    client = connect(dedup_broker)
    topic = unique_topic("dedup")
    consumer = subscribe_earliest(client, topic)
    producer = client.create_producer(topic, producer_name="p1", batching_enabled=False)

    stored = send_with_ids(producer, payloads(3))
    again = [producer.send(b"dup-1", sequence_id=1), producer.send(b"dup-2", sequence_id=2)]

    assert [entry_of(i) for i in again] == [DUPLICATE_ID, DUPLICATE_ID]
    assert len({entry_of(i) for i in stored}) == 3
    assert data_of(receive_n(consumer, 3)) == payloads(3)
    expect_nothing(consumer)


def test_reconnecting_producer_resumes_after_its_last_sequence_id(dedup_broker, connect):
    client = connect(dedup_broker)
    topic = unique_topic("resume")
    consumer = subscribe_earliest(client, topic)
    first = client.create_producer(topic, producer_name="p2")
    send_all(first, payloads(4))
    first.close()

    second = client.create_producer(topic, producer_name="p2")
    assert second.last_sequence_id() == 3
    send_all(second, [b"after"])          # sequence id 4: new
    second.send(b"replay", sequence_id=2)  # already stored: dropped

    assert data_of(receive_n(consumer, 5)) == payloads(4) + [b"after"]
    expect_nothing(consumer)


@pytest.mark.parametrize("stop", ["restart", "kill9"])
def test_deduplication_state_survives_the_broker(dedup_broker, connect, stop):
    """12 entries with a snapshot every 5: the state is the snapshot plus replayed entries."""
    client = connect(dedup_broker)
    topic = unique_topic(stop)
    producer = client.create_producer(topic, producer_name="p3", batching_enabled=False)
    send_with_ids(producer, payloads(12))
    producer.close()
    if stop == "kill9":
        dedup_broker.kill9()
    dedup_broker.restart()

    client = connect(dedup_broker)
    producer = client.create_producer(topic, producer_name="p3", batching_enabled=False)
    assert producer.last_sequence_id() == 12
    resent = send_with_ids(producer, payloads(12, "resent"))
    assert [entry_of(i) for i in resent] == [DUPLICATE_ID] * 12
    send_all(producer, [b"new"])
    consumer = subscribe_earliest(client, topic)
    assert data_of(receive_n(consumer, 13)) == payloads(12) + [b"new"]
    expect_nothing(consumer)


def test_a_batch_is_one_entry_keyed_by_the_sequence_ids_its_send_carries(dedup_broker, connect):
    """The C++ client sends a batch with its first sequence id and no highest_sequence_id;
    the broker (like Pulsar's) records what CommandSend carries."""
    client = connect(dedup_broker)
    topic = unique_topic("batch")
    consumer = subscribe_earliest(client, topic)
    producer = client.create_producer(topic, producer_name="p4", batching_enabled=True,
                                      batching_max_messages=5, batching_max_publish_delay_ms=50)
    for content in payloads(5):
        producer.send_async(content, None)
    producer.flush()
    producer.close()

    again = client.create_producer(topic, producer_name="p4", batching_enabled=False)
    assert again.last_sequence_id() == 0
    send_all(again, [b"after"])
    again.send(b"dup", sequence_id=1)

    assert data_of(receive_n(consumer, 6)) == payloads(5) + [b"after"]
    expect_nothing(consumer)


def test_chunks_sharing_a_sequence_id_are_all_stored(make_broker, connect):
    broker = make_broker({**DEDUP_CONFIG, "maxMessageSize": 10240})
    client = connect(broker)
    topic = unique_topic("chunks")
    consumer = subscribe_earliest(client, topic)
    producer = client.create_producer(topic, producer_name="p5", batching_enabled=False, chunking_enabled=True)
    big = bytes(range(256)) * 120   # 30720 bytes: at least 3 chunks of one sequence id

    send_all(producer, [big, b"small"])

    assert data_of(receive_n(consumer, 2)) == [big, b"small"]
    expect_nothing(consumer)


def _stored_count(client, topic: str, duplicates: int) -> int:
    consumer = subscribe_earliest(client, topic, "count")
    producer = client.create_producer(topic, producer_name="counted", batching_enabled=False)
    send_with_ids(producer, [b"x", b"y"])
    for _ in range(duplicates):
        producer.send(b"dup", sequence_id=1)
    got = []
    while True:
        try:
            got.append(consumer.receive(500).data())
        except pulsar.Timeout:
            return len(got)


def test_namespace_policy_turns_deduplication_on(make_broker, connect):
    broker = make_broker({})
    create_namespace(broker, "public/deduped", "deduplicationEnabled=true")
    client = connect(broker)
    assert _stored_count(client, f"persistent://public/deduped/{unique_topic()}", duplicates=2) == 2
    assert _stored_count(client, unique_topic("plain"), duplicates=2) == 4


def test_namespace_policy_turns_deduplication_off(make_broker, connect):
    broker = make_broker(DEDUP_CONFIG)
    create_namespace(broker, "public/raw", "deduplicationEnabled=false")
    client = connect(broker)
    assert _stored_count(client, f"persistent://public/raw/{unique_topic()}", duplicates=1) == 3
    assert _stored_count(client, unique_topic("deduped"), duplicates=1) == 2
