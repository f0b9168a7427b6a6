"""Schemas carried in PRODUCER / SUBSCRIBE: String and JSON round-trip through the broker."""

from __future__ import annotations

import json

import requests
from pulsar.schema import Integer, JsonSchema, Record, String, StringSchema

from compat_tests.helpers import expect_nothing, receive_n, subscribe_earliest, unique_topic


class Reading(Record):
    sensor = String()
    value = Integer()


READINGS = [Reading(sensor=f"s{i}", value=i * 10) for i in range(5)]


def test_string_schema_round_trip(client):
    topic = unique_topic("str")
    consumer = subscribe_earliest(client, topic, schema=StringSchema())
    producer = client.create_producer(topic, schema=StringSchema())
    texts = ["plain", "héllo wörld", "日本語", ""]

    for text in texts:
        producer.send(text)

    received = receive_n(consumer, len(texts))
    assert [m.value() for m in received] == texts
    assert [m.data() for m in received] == [t.encode("utf-8") for t in texts]
    expect_nothing(consumer)


def test_json_schema_round_trip(client):
    topic = unique_topic("json")
    consumer = subscribe_earliest(client, topic, schema=JsonSchema(Reading))
    producer = client.create_producer(topic, schema=JsonSchema(Reading))

    for reading in READINGS:
        producer.send(reading)

    values = [m.value() for m in receive_n(consumer, len(READINGS))]
    assert [(v.sensor, v.value) for v in values] == [(r.sensor, r.value) for r in READINGS]
    expect_nothing(consumer)


def test_bytes_consumer_reads_a_json_topic_as_raw_json(client):
    topic = unique_topic("json-raw")
    producer = client.create_producer(topic, schema=JsonSchema(Reading))
    for reading in READINGS:
        producer.send(reading)

    consumer = subscribe_earliest(client, topic)   # no schema: bytes
    raw = [json.loads(m.data()) for m in receive_n(consumer, len(READINGS))]
    assert raw == [{"sensor": r.sensor, "value": r.value} for r in READINGS]


class ReadingView(Record):
    sensor = String()


def schema_versions(broker, topic: str) -> int:
    response = requests.get(f"{broker.web_url}/admin/v2/schemas/public/default/{topic}/schemas", timeout=10)
    return len(response.json()["getSchemaResponses"])


def test_a_consumer_never_adds_a_schema_version(broker, client):
    """As Pulsar: a consumer's schema is checked, not registered, once the topic has one (or has
    producers or data); only an idle topic without a schema adopts a consumer's."""
    topic = unique_topic("consumer-schema")
    client.create_producer(topic, schema=JsonSchema(Reading)).send(READINGS[0])
    view = subscribe_earliest(client, topic, schema=JsonSchema(ReadingView))
    assert view.receive(10_000).value().sensor == "s0"
    assert schema_versions(broker, topic) == 1

    idle = unique_topic("idle")
    subscribe_earliest(client, idle, schema=JsonSchema(ReadingView)).close()
    assert schema_versions(broker, idle) == 1
