"""Topic compaction: read_compacted readers and consumers get the latest value per key up to
the compaction horizon (tombstones delete keys, batches are looked into whatever their codec),
then the log after it. Compaction is triggered here by the threshold check (every second, any
data past the horizon); the on-demand trigger is the admin API's."""

from __future__ import annotations

import time

import pulsar
import pytest

from compat_tests.admin_http import AdminHttp
from compat_tests.helpers import (
    BATCHES_OF_10, data_of, expect_nothing, read_all, receive_n, send_all_async, unique_topic,
)

COMPACT_ALWAYS = {
    "brokerServiceCompactionThresholdInBytes": 1,
    "brokerServiceCompactionMonitorIntervalInSeconds": 1,
}
WAIT_S = 15.0

KEYED = [("k1", b"k1-v1"), ("k2", b"k2-v1"), ("k1", b"k1-v2"), ("k3", b"k3-v1"), ("k2", b""),
         (None, b"no-key")]
COMPACTED = [b"k1-v2", b"k3-v1"]


@pytest.fixture
def compacting_broker(make_broker):
    return make_broker(COMPACT_ALWAYS)


def read_compacted(client, topic: str) -> list[bytes]:
    return read_all(client, topic, is_read_compacted=True)


def wait_for_compacted(client, topic: str, expected: list[bytes]) -> None:
    deadline = time.monotonic() + WAIT_S
    while (got := read_compacted(client, topic)) != expected and time.monotonic() < deadline:
        time.sleep(0.3)
    assert got == expected


def send_keyed(producer, messages) -> None:
    for key, value in messages:
        if key is None:
            producer.send(value)
        else:
            producer.send(value, partition_key=key)


def test_compacted_reader_gets_latest_value_per_key(compacting_broker, connect):
    client = connect(compacting_broker)
    topic = unique_topic("compact")
    send_keyed(client.create_producer(topic, batching_enabled=False), KEYED)
    wait_for_compacted(client, topic, COMPACTED)
    assert read_all(client, topic) == [value for _, value in KEYED]   # the log is unchanged


def test_messages_after_the_horizon_follow_the_compacted_view(compacting_broker, connect):
    client = connect(compacting_broker)
    topic = unique_topic("tail")
    producer = client.create_producer(topic, batching_enabled=False)
    send_keyed(producer, KEYED)
    wait_for_compacted(client, topic, COMPACTED)
    consumer = client.subscribe(topic, "compacted", is_read_compacted=True,
                                initial_position=pulsar.InitialPosition.Earliest)
    assert data_of(receive_n(consumer, 2)) == COMPACTED
    send_keyed(producer, [("k3", b"k3-v2")])
    assert data_of(receive_n(consumer, 1)) == [b"k3-v2"]
    expect_nothing(consumer)
    wait_for_compacted(client, topic, [b"k1-v2", b"k3-v2"])            # compacted again


@pytest.mark.parametrize("codec", ["LZ4", "ZLib", "ZSTD", "SNAPPY"])
def test_compaction_looks_inside_compressed_batches(compacting_broker, connect, codec):
    client = connect(compacting_broker)
    topic = unique_topic(f"batch-{codec.lower()}")
    producer = client.create_producer(topic, compression_type=getattr(pulsar.CompressionType, codec),
                                      **BATCHES_OF_10)
    values = [f"v{i}".encode() for i in range(20)]
    send_all_async(producer, values[:10], fields_for=lambda i: {"partition_key": f"k{i % 5}"})
    send_all_async(producer, values[10:], fields_for=lambda i: {"partition_key": f"k{i % 3}"})
    # keys k0..k2 last written in the second batch (v17, v18, v19), k3 and k4 in the first (v8, v9)
    wait_for_compacted(client, topic, [b"v8", b"v9", b"v17", b"v18", b"v19"])


def test_keyless_messages_stay_with_retain_null_key(make_broker, connect):
    broker = make_broker({**COMPACT_ALWAYS, "topicCompactionRetainNullKey": "true"})
    client = connect(broker)
    topic = unique_topic("nullkey")
    send_keyed(client.create_producer(topic, batching_enabled=False), KEYED)
    batched = client.create_producer(topic, **BATCHES_OF_10)
    send_all_async(batched, [b"k1-v3", b"in-batch", b"k3-v2"],
                   fields_for=lambda i: [{"partition_key": "k1"}, {}, {"partition_key": "k3"}][i])
    wait_for_compacted(client, topic, [b"no-key", b"k1-v3", b"in-batch", b"k3-v2"])


def test_compacted_view_survives_a_restart(compacting_broker, connect):
    client = connect(compacting_broker)
    topic = unique_topic("durable")
    send_keyed(client.create_producer(topic, batching_enabled=False), KEYED)
    wait_for_compacted(client, topic, COMPACTED)
    client.close()
    compacting_broker.restart()
    client = connect(compacting_broker)
    assert read_compacted(client, topic) == COMPACTED


def test_on_demand_compaction_through_the_admin_api(make_broker, connect):
    broker = make_broker({})                              # no threshold: only on demand
    client = connect(broker)
    topic = unique_topic("on-demand")
    send_keyed(client.create_producer(topic, batching_enabled=False), KEYED)
    admin = AdminHttp(broker.web_url)
    path = f"/admin/v2/persistent/public/default/{topic}/compaction"
    assert admin.get(path).json() == {"status": "NOT_RUN", "lastError": ""}
    assert read_compacted(client, topic) == [value for _, value in KEYED]   # no view yet: the log
    assert admin.put(path).status_code == 204
    deadline = time.monotonic() + WAIT_S
    while (status := admin.get(path).json())["status"] == "RUNNING" and time.monotonic() < deadline:
        time.sleep(0.1)
    assert status == {"status": "SUCCESS", "lastError": ""}
    assert read_compacted(client, topic) == COMPACTED


def test_a_reader_from_the_start_gets_kept_entries_of_trimmed_ledgers(make_broker, connect):
    """Without subscriptions the first ledger is trimmed once the unload seals it; a compacted
    reader from the earliest message still gets its kept entries from the compacted view."""
    broker = make_broker({})
    client, http = connect(broker), AdminHttp(broker.web_url)
    topic = f"persistent://public/default/{unique_topic('trimmed')}"
    path = "/admin/v2/" + topic.replace("://", "/")
    producer = client.create_producer(topic, batching_enabled=False)
    send_keyed(producer, [("a", b"a-0"), ("b", b"b-1"), ("a", b"a-2")])
    assert http.put(f"{path}/unload").status_code == 204
    send_keyed(producer, [("b", b"b-3")])
    assert http.put(f"{path}/compaction").status_code == 204
    deadline = time.monotonic() + WAIT_S
    while http.get(f"{path}/compaction").json()["status"] != "SUCCESS" and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(http.get(f"{path}/internalStats").json()["ledgers"]) == 1   # the first one is gone
    assert read_compacted(client, topic) == [b"a-2", b"b-3"]
