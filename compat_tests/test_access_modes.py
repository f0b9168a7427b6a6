"""Producer access modes: Shared, Exclusive, ExclusiveWithFencing, WaitForExclusive."""

from __future__ import annotations

import threading

import pulsar
import pytest

from compat_tests.helpers import data_of, expect_nothing, payloads, receive_n, send_all, subscribe_earliest, unique_topic

Mode = pulsar.ProducerAccessMode
WAIT_S = 10


def wait_for_exclusive_in_background(client, topic: str):
    """Start creating a WaitForExclusive producer in a thread (the call blocks while it waits);
    return the thread and the list the producer lands in."""
    created: list = []
    waiter = threading.Thread(
        target=lambda: created.append(client.create_producer(topic, access_mode=Mode.WaitForExclusive)))
    waiter.start()
    return waiter, created


def test_shared_producers_coexist_and_exclusive_is_fenced_by_them(client):
    topic = unique_topic("shared")
    first = client.create_producer(topic, access_mode=Mode.Shared)
    second = client.create_producer(topic, access_mode=Mode.Shared)
    with pytest.raises(pulsar.ProducerFenced):
        client.create_producer(topic, access_mode=Mode.Exclusive)
    consumer = subscribe_earliest(client, topic)
    send_all(first, [b"a"])
    send_all(second, [b"b"])
    assert data_of(receive_n(consumer, 2)) == [b"a", b"b"]


def test_exclusive_producer_keeps_others_out(client):
    topic = unique_topic("excl")
    owner = client.create_producer(topic, access_mode=Mode.Exclusive)
    with pytest.raises(pulsar.ProducerFenced):
        client.create_producer(topic, access_mode=Mode.Exclusive)
    with pytest.raises(pulsar.ProducerBusy):
        client.create_producer(topic, access_mode=Mode.Shared)
    send_all(owner, [b"only"])
    owner.close()
    # once the owner left, the topic is free again
    successor = client.create_producer(topic, access_mode=Mode.Exclusive)
    consumer = subscribe_earliest(client, topic)
    send_all(successor, [b"next"])
    assert data_of(receive_n(consumer, 2)) == [b"only", b"next"]


def test_exclusive_with_fencing_takes_over(client):
    topic = unique_topic("fence")
    consumer = subscribe_earliest(client, topic)
    old = client.create_producer(topic, access_mode=Mode.Exclusive)
    send_all(old, [b"old-1"])

    new = client.create_producer(topic, access_mode=Mode.ExclusiveWithFencing)
    send_all(new, [b"new-1"])
    with pytest.raises(pulsar.PulsarException):
        old.send(b"old-2")          # fenced: it may not come back

    assert data_of(receive_n(consumer, 2)) == [b"old-1", b"new-1"]
    expect_nothing(consumer)


def test_wait_for_exclusive_gets_the_topic_when_the_owner_leaves(client):
    topic = unique_topic("wait")
    consumer = subscribe_earliest(client, topic)
    owner = client.create_producer(topic, access_mode=Mode.Exclusive)
    waiter, created = wait_for_exclusive_in_background(client, topic)
    waiter.join(1.5)
    assert waiter.is_alive(), "WaitForExclusive must wait while the topic has a producer"
    send_all(owner, payloads(2, "owner"))
    owner.close()
    waiter.join(WAIT_S)
    assert not waiter.is_alive() and len(created) == 1
    send_all(created[0], payloads(2, "waiter"))
    assert data_of(receive_n(consumer, 4)) == payloads(2, "owner") + payloads(2, "waiter")
    expect_nothing(consumer)


def test_waiting_producer_blocks_shared_ones_and_exclusive_ones(client):
    topic = unique_topic("queue")
    owner = client.create_producer(topic, access_mode=Mode.Exclusive)
    waiter, created = wait_for_exclusive_in_background(client, topic)
    waiter.join(1.0)
    owner.close()
    waiter.join(WAIT_S)
    assert len(created) == 1
    with pytest.raises(pulsar.ProducerBusy):
        client.create_producer(topic, access_mode=Mode.Shared)
    with pytest.raises(pulsar.ProducerFenced):
        client.create_producer(topic, access_mode=Mode.Exclusive)


def test_same_producer_name_twice_is_busy(client):
    topic = unique_topic("name")
    client.create_producer(topic, producer_name="only-one")
    with pytest.raises(pulsar.ProducerBusy):
        client.create_producer(topic, producer_name="only-one")


def test_exclusive_producer_survives_a_broker_restart(fresh_broker, connect):
    """Reconnecting with its epoch, the exclusive producer is taken back (not fenced)."""
    client = connect(fresh_broker)
    topic = unique_topic("epoch")
    producer = client.create_producer(topic, access_mode=Mode.Exclusive)
    send_all(producer, [b"before"])
    fresh_broker.restart()
    producer.send(b"after")      # the client reconnects and re-creates the producer
    consumer = subscribe_earliest(client, topic)
    assert data_of(receive_n(consumer, 2)) == [b"before", b"after"]
