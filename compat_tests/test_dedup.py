"""Message deduplication: by producer name and sequence id, across reconnects, restarts and kill -9;
turned on and off by the broker, namespace and topic policies, also on a loaded topic."""

from __future__ import annotations

import time

import pulsar
import pytest

from compat_tests.admin_http import AdminHttp
from compat_tests.test_topic_policies import settles, topic_path
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


def deduplication_status(http: AdminHttp, topic: str) -> str:
    return http.get(topic_path(topic) + "/stats").json()["deduplicationStatus"]


def status_becomes(http: AdminHttp, topic: str, expected: str) -> bool:
    """Pulsar switches a loaded topic over in the background: wait for its stats to say so."""
    deadline = time.monotonic() + 10
    while deduplication_status(http, topic) != expected:
        assert time.monotonic() < deadline, f"deduplication of {topic} never became {expected}"
        time.sleep(0.1)
    return True


@pytest.mark.parametrize("turn_on", [True, False])
def test_a_topic_policy_switches_a_loaded_topic_without_reconnecting(make_broker, connect, turn_on):
    """The producer stays connected throughout (no unload); only that topic changes."""
    broker = make_broker({} if turn_on else DEDUP_CONFIG)
    client, http = connect(broker), AdminHttp(broker.web_url)
    topic, other = unique_topic("switched"), unique_topic("unchanged")
    consumer, unchanged = subscribe_earliest(client, topic), subscribe_earliest(client, other)
    producer = client.create_producer(topic, producer_name="kept", batching_enabled=False)
    other_producer = client.create_producer(other, producer_name="kept", batching_enabled=False)
    send_with_ids(producer, [b"before"])
    assert status_becomes(http, topic, "Disabled" if turn_on else "Enabled")

    assert http.post(topic_path(topic) + "/deduplicationEnabled", json=turn_on).status_code == 204
    assert settles(http, topic_path(topic) + "/deduplicationEnabled", turn_on)
    assert status_becomes(http, topic, "Enabled" if turn_on else "Disabled")
    send_with_ids(producer, [b"a", b"b"], first_id=10)
    resent = producer.send(b"a again", sequence_id=10)
    send_with_ids(other_producer, [b"x"], first_id=10)
    other_resent = other_producer.send(b"x again", sequence_id=10)

    assert producer.is_connected()
    expected = [b"before", b"a", b"b"] + ([] if turn_on else [b"a again"])
    assert data_of(receive_n(consumer, len(expected))) == expected
    expect_nothing(consumer)
    assert (entry_of(resent) == DUPLICATE_ID) is turn_on
    assert (entry_of(other_resent) == DUPLICATE_ID) is not turn_on   # the broker's setting
    assert data_of(receive_n(unchanged, 2 if turn_on else 1))[0] == b"x"
    internal = http.get(topic_path(topic) + "/internalStats").json()
    assert ("pulsar.dedup" in internal["cursors"]) is turn_on


def test_a_namespace_policy_switches_its_loaded_topics(make_broker, connect):
    broker = make_broker({})
    create_namespace(broker, "public/switched")
    client, http = connect(broker), AdminHttp(broker.web_url)
    topic = f"persistent://public/switched/{unique_topic()}"
    local = topic.rsplit("/", 1)[1]
    stats = f"/admin/v2/persistent/public/switched/{local}/stats"
    producer = client.create_producer(topic, producer_name="kept", batching_enabled=False)
    assert http.get(stats).json()["deduplicationStatus"] == "Disabled"

    assert http.post("/admin/v2/namespaces/public/switched/deduplication", json=True).status_code == 204
    deadline = time.monotonic() + 10
    while http.get(stats).json()["deduplicationStatus"] != "Enabled":
        assert time.monotonic() < deadline, "the namespace policy never reached the loaded topic"
        time.sleep(0.1)
    send_with_ids(producer, [b"a"], first_id=5)
    assert entry_of(producer.send(b"a again", sequence_id=5)) == DUPLICATE_ID


def test_a_snapshot_is_taken_by_time_where_the_topic_policy_says(make_broker, connect):
    """With 1000 entries between snapshots, a topic whose deduplicationSnapshotInterval is 1 s
    is snapshotted after its few entries (its deduplication cursor moves up to them), while a
    topic under the broker's 0 (by entries only) is not."""
    broker = make_broker({**DEDUP_CONFIG, "brokerDeduplicationEntriesInterval": 1000,
                          "brokerDeduplicationSnapshotIntervalSeconds": 0,
                          "brokerDeduplicationSnapshotFrequencyInSeconds": 1})
    client, http = connect(broker), AdminHttp(broker.web_url)
    timed, by_entries = unique_topic("timed"), unique_topic("by-entries")
    producers = [client.create_producer(t, producer_name="p", batching_enabled=False) for t in (timed, by_entries)]
    assert http.post(topic_path(timed) + "/deduplicationSnapshotInterval", json=1).status_code == 204
    assert settles(http, topic_path(timed) + "/deduplicationSnapshotInterval", 1)
    for producer in producers:
        send_with_ids(producer, payloads(3))

    def dedup_cursor(topic: str) -> tuple[str, str]:
        internal = http.get(topic_path(topic) + "/internalStats").json()
        return internal["cursors"]["pulsar.dedup"]["markDeletePosition"], internal["lastConfirmedEntry"]

    deadline = time.monotonic() + 10
    while (found := dedup_cursor(timed))[0] != found[1]:
        assert time.monotonic() < deadline, f"no snapshot by time: {found}"
        time.sleep(0.2)
    mark_delete, last = dedup_cursor(by_entries)
    assert mark_delete != last
