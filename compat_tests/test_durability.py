"""Durability: kill -9 (and SIGTERM) of the broker, restart on the same data dir.

Assumed bounds (pulsard's documented crash guarantees, see ARCHITECTURE.md):
- A SEND_RECEIPT is only sent once the entry is fsynced, so every receipted message survives
  kill -9 at any instant: no wait is needed between the last receipt and the kill.
- Acks are persisted in batches, at most managedLedgerDefaultMarkDeleteRateLimit (1) times a
  second per subscription. We assume an ack that reached the broker is durable within
  CURSOR_FLUSH_BOUND_S; the C++ client itself groups acks for up to 100 ms before sending them.
  So we wait ACK_PERSIST_WAIT_S after the last acknowledge() before killing the broker.
"""

from __future__ import annotations

import time

import pulsar

from compat_tests.helpers import (
    data_of, payloads, receive_exactly, receive_n, send_all, send_all_async, subscribe_earliest,
    unique_topic,
)

CLIENT_ACK_GROUPING_S = 0.1
CURSOR_FLUSH_BOUND_S = 1.2
ACK_PERSIST_WAIT_S = CLIENT_ACK_GROUPING_S + CURSOR_FLUSH_BOUND_S + 0.4


def crash_and_restart(broker, *clients: pulsar.Client) -> None:
    """kill -9 while the clients are still connected, drop the clients, restart the broker."""
    broker.kill9()
    for client in clients:
        client.shutdown()
    broker.restart()


def test_every_receipted_message_survives_kill9(fresh_broker, connect):
    topic = unique_topic()
    client = connect(fresh_broker)
    contents = payloads(200)
    ids = send_all(client.create_producer(topic), contents)

    crash_and_restart(fresh_broker, client)

    client = connect(fresh_broker)
    consumer = subscribe_earliest(client, topic)
    receive_exactly(consumer, contents, ids=ids)

    # the restarted broker appends after what it recovered
    later = client.create_producer(topic).send(b"after-restart")
    assert later > ids[-1]
    assert data_of(receive_n(consumer, 1)) == [b"after-restart"]


def test_batched_async_messages_survive_kill9(fresh_broker, connect):
    topic = unique_topic()
    client = connect(fresh_broker)
    producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=100,
                                      block_if_queue_full=True)
    contents = payloads(2000)
    ids = send_all_async(producer, contents)

    crash_and_restart(fresh_broker, client)

    consumer = subscribe_earliest(connect(fresh_broker), topic)
    receive_exactly(consumer, contents, ids=ids)


def test_ack_state_survives_kill9_after_the_flush_bound(fresh_broker, connect):
    topic = unique_topic()
    client = connect(fresh_broker)
    consumer = subscribe_earliest(client, topic, "durable-sub")
    contents = payloads(20)
    send_all(client.create_producer(topic), contents)
    acked = 10

    for msg in receive_n(consumer, 20)[:acked]:
        consumer.acknowledge(msg)
    time.sleep(ACK_PERSIST_WAIT_S)

    crash_and_restart(fresh_broker, client)

    consumer = subscribe_earliest(connect(fresh_broker), topic, "durable-sub")
    receive_exactly(consumer, contents[acked:])


def test_sigterm_is_a_clean_shutdown_that_keeps_data_and_acks(fresh_broker, connect):
    topic = unique_topic()
    client = connect(fresh_broker)
    consumer = subscribe_earliest(client, topic, "clean")
    contents = payloads(10)
    send_all(client.create_producer(topic), contents)
    received = receive_n(consumer, 10)
    consumer.acknowledge_cumulative(received[3])
    consumer.close()
    client.close()

    # A clean exit within the stop timeout: 0 (or 143, what a JVM such as Pulsar's returns after
    # its shutdown hooks); not None (had to be SIGKILLed) nor -15 (died of the signal unhandled).
    assert fresh_broker.stop() in (0, 143), "SIGTERM must end the broker cleanly"
    fresh_broker.restart()

    client = connect(fresh_broker)
    assert data_of(receive_n(subscribe_earliest(client, topic, "clean"), 6)) == contents[4:]
    assert data_of(receive_n(subscribe_earliest(client, topic, "other"), 10)) == contents
