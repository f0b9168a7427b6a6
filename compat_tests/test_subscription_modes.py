"""Subscription modes and initial positions: a durable subscription starts at Earliest or
Latest when created and afterwards resumes where it was acknowledged (also after kill -9); a
non-durable one (a reader) keeps no position and vanishes with its consumer."""

from __future__ import annotations

import time

import pulsar

from compat_tests.helpers import (
    data_of, expect_nothing, payloads, receive_exactly, receive_n, send_all, unique_topic,
)
from compat_tests.test_durability import ACK_PERSIST_WAIT_S, crash_and_restart


def subscribe(client, topic, position, subscription="mode"):
    return client.subscribe(topic, subscription, initial_position=position)


def test_new_durable_subscription_at_earliest_gets_the_existing_messages(client):
    topic = unique_topic()
    old = payloads(3, "old")
    send_all(client.create_producer(topic), old)
    consumer = subscribe(client, topic, pulsar.InitialPosition.Earliest)
    receive_exactly(consumer, old)


def test_new_durable_subscription_at_latest_gets_only_what_follows(client):
    topic = unique_topic()
    producer = client.create_producer(topic)
    send_all(producer, payloads(3, "old"))
    consumer = subscribe(client, topic, pulsar.InitialPosition.Latest)
    expect_nothing(consumer)
    new = payloads(2, "new")
    send_all(producer, new)
    receive_exactly(consumer, new)


def test_an_existing_durable_subscription_ignores_the_initial_position(client):
    topic = unique_topic()
    producer = client.create_producer(topic)
    consumer = subscribe(client, topic, pulsar.InitialPosition.Latest)
    contents = payloads(4)
    send_all(producer, contents)
    received = receive_n(consumer, 4)
    consumer.acknowledge(received[0])
    consumer.acknowledge(received[1])
    consumer.close()
    send_all(producer, [b"while-away"])

    again = subscribe(client, topic, pulsar.InitialPosition.Earliest)   # resumes at its cursor
    receive_exactly(again, contents[2:] + [b"while-away"])


def test_durable_subscription_keeps_its_backlog_across_kill9(fresh_broker, connect):
    client = connect(fresh_broker)
    topic = unique_topic()
    consumer = subscribe(client, topic, pulsar.InitialPosition.Latest)
    contents = payloads(5)
    send_all(client.create_producer(topic), contents)
    consumer.acknowledge(receive_n(consumer, 1)[0])
    time.sleep(ACK_PERSIST_WAIT_S)

    crash_and_restart(fresh_broker, client)

    client = connect(fresh_broker)
    again = subscribe(client, topic, pulsar.InitialPosition.Latest)
    receive_exactly(again, contents[1:])


def test_non_durable_subscription_keeps_no_position(client):
    topic = unique_topic()
    producer = client.create_producer(topic)
    durable = subscribe(client, topic, pulsar.InitialPosition.Earliest)
    first = payloads(3, "first")
    send_all(producer, first)
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    assert data_of(receive_n(reader, 3)) == first
    reader.close()

    send_all(producer, [b"later"])
    # A new reader starts where it is told: nothing of the first one's position was kept.
    again = client.create_reader(topic, pulsar.MessageId.earliest)
    assert data_of(receive_n(again, 4)) == first + [b"later"]
    latest = client.create_reader(topic, pulsar.MessageId.latest)
    expect_nothing(latest)
    send_all(producer, [b"last"])
    assert data_of(receive_n(latest, 1)) == [b"last"]
    # Readers never acknowledge into the durable subscription, which still has it all.
    assert data_of(receive_n(durable, 5)) == first + [b"later", b"last"]
