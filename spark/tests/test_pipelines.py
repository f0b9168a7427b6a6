"""The pipelines in spark/pipelines.py with a local Spark session against a real pulsard:
exact rows of a batch range, windowed counts over several micro-batches and a checkpoint
restart, partitioned topics and patterns, schemas mapped to columns, and the sink read back
with the official Python client."""

from __future__ import annotations

import json
import time
from base64 import b64decode
from collections import Counter
from datetime import datetime, timezone

import pulsar
import pytest
import requests
from pyspark.sql import Row

from compat_tests.helpers import unique_topic
from spark.pipelines import Pulsar, export, publish, read_range, windowed_counts

EVENT_TIME_MS = 1_700_000_000_000
KEYS = [f"k{i}" for i in range(5)]


@pytest.fixture
def broker(make_broker):
    return make_broker({})


def pulsar_of(broker) -> Pulsar:
    return Pulsar(broker.service_url, broker.web_url)


def produce(client, topic: str, first: int, count: int, batching: bool = True) -> None:
    producer = client.create_producer(topic, schema=pulsar.schema.StringSchema(),
                                      batching_enabled=batching, block_if_queue_full=True)
    for i in range(first, first + count):
        producer.send_async(f"v{i}", None, partition_key=KEYS[i % len(KEYS)],
                            properties={"i": str(i)}, event_timestamp=EVENT_TIME_MS + i)
    producer.flush()
    producer.close()


def test_batch_range_with_keys_properties_and_event_time(spark, broker, connect, tmp_path):
    client = connect(broker)
    topic = f"persistent://public/default/{unique_topic('batch')}"
    produce(client, topic, 0, 2000)
    rows = read_range(spark, pulsar_of(broker), topic).collect()
    assert sorted(int(r.value[1:]) for r in rows) == list(range(2000))
    row = next(r for r in rows if r.value == "v7")
    assert (bytes(row["__key"]), row["__messageProperties"], row["__topic"]) == (b"k2", {"i": "7"}, topic)
    assert row["__eventTime"] == datetime.fromtimestamp((EVENT_TIME_MS + 7) / 1000, timezone.utc) \
        .astimezone().replace(tzinfo=None)
    assert export(spark, pulsar_of(broker), topic, str(tmp_path / "parquet")) == 2000


def test_batch_range_by_publish_time(spark, broker, connect):
    client = connect(broker)
    topic = f"persistent://public/default/{unique_topic('by-time')}"
    produce(client, topic, 0, 300)
    time.sleep(0.05)
    between = int(time.time() * 1000)
    time.sleep(0.05)
    produce(client, topic, 300, 200, batching=False)
    # (the connector starts at the entry holding the first message at or after the time; a
    # range starting inside the last entry reads nothing, against Pulsar as here)
    rows = read_range(spark, pulsar_of(broker), topic, starting_time=between).collect()
    assert sorted(int(r.value[1:]) for r in rows) == list(range(300, 500))


def test_partitioned_topic_and_pattern(spark, broker, connect):
    client = connect(broker)
    prefix = unique_topic("pattern")
    partitioned = f"persistent://public/default/{prefix}-p"
    assert requests.put(f"{broker.web_url}/admin/v2/persistent/public/default/{prefix}-p/partitions",
                        json=3, timeout=10).status_code == 204
    produce(client, partitioned, 0, 600)
    produce(client, f"persistent://public/default/{prefix}-plain", 600, 100)
    rows = read_range(spark, pulsar_of(broker), partitioned).collect()
    assert sorted(int(r.value[1:]) for r in rows) == list(range(600))
    stats = requests.get(f"{broker.web_url}/admin/v2/persistent/public/default/{prefix}-p"
                         "/partitioned-stats", params={"perPartition": "true"}, timeout=10).json()
    stored = {name: part["msgInCounter"] for name, part in stats["partitions"].items()
              if part["msgInCounter"]}
    assert Counter(r["__topic"] for r in rows) == stored
    matched = read_range(spark, pulsar_of(broker), f"persistent://public/default/{prefix}-.*").collect()
    assert sorted(int(r.value[1:]) for r in matched) == list(range(700))


class Reading(pulsar.schema.Record):
    sensor = pulsar.schema.String()
    value = pulsar.schema.Double()
    count = pulsar.schema.Integer()


def test_avro_schema_maps_to_typed_columns(spark, broker, connect):
    client = connect(broker)
    topic = f"persistent://public/default/{unique_topic('avro')}"
    producer = client.create_producer(topic, schema=pulsar.schema.AvroSchema(Reading))
    for i in range(50):
        producer.send(Reading(sensor=f"s{i % 3}", value=i / 2, count=i))
    frame = read_range(spark, pulsar_of(broker), topic)
    types = dict(frame.dtypes)
    assert (types["sensor"], types["value"], types["count"]) == ("string", "double", "int")
    rows = frame.orderBy("count").select("sensor", "value", "count").collect()
    assert rows == [Row(sensor=f"s{i % 3}", value=i / 2, count=i) for i in range(50)]


def test_streaming_counts_over_micro_batches_and_a_restart(spark, broker, connect, tmp_path):
    client = connect(broker)
    source = f"persistent://public/default/{unique_topic('events')}"
    sink = f"persistent://public/default/{unique_topic('counts')}"
    checkpoint = str(tmp_path / "checkpoint")
    produce(client, source, 0, 1000)
    query = windowed_counts(spark, pulsar_of(broker), source, sink, checkpoint)
    query.processAllAvailable()
    produce(client, source, 1000, 500)        # arrives while the query runs
    query.processAllAvailable()
    query.stop()
    produce(client, source, 1500, 500)        # arrives while it is stopped
    query = windowed_counts(spark, pulsar_of(broker), source, sink, checkpoint)
    query.processAllAvailable()
    query.stop()
    latest = {}
    reader = client.create_reader(sink, pulsar.MessageId.earliest)
    while reader.has_message_available():
        update = json.loads(reader.read_next(10_000).data())
        latest[update["key"]] = update["count"]
    reader.close()
    assert latest == {key: 400 for key in KEYS}   # 2000 events, one window, no loss, no duplicate


def test_publish_writes_key_properties_and_event_time(spark, broker, connect):
    client = connect(broker)
    topic = f"persistent://public/default/{unique_topic('publish')}"
    consumer = client.subscribe(topic, "check", initial_position=pulsar.InitialPosition.Earliest)
    frame = spark.createDataFrame(
        [(f"row-{i}", f"key-{i % 2}", EVENT_TIME_MS + i, {"n": str(i)}) for i in range(100)],
        "value STRING, __key STRING, __eventTime LONG, __messageProperties MAP<STRING,STRING>")
    publish(frame, pulsar_of(broker), topic)
    got = {}
    for _ in range(100):
        message = consumer.receive(10_000)
        # the sink sends keys as bytes: base64 in partition_key, flagged partition_key_b64_encoded
        got[message.data().decode()] = (b64decode(message.partition_key()).decode(),
                                        message.properties(), message.event_timestamp())
    assert got == {f"row-{i}": (f"key-{i % 2}", {"n": str(i)}, EVENT_TIME_MS + i) for i in range(100)}
