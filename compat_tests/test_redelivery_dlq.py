"""Redelivery counts and dead-letter topics: negative acks and ack timeouts on Shared bump the
count carried in MESSAGE; past max_redeliver_count the client moves the message to the DLQ,
whose producer's initial subscription the broker creates before confirming it."""

from __future__ import annotations

import pulsar

from compat_tests.helpers import (
    data_of, expect_nothing, full_name, payloads, receive_exactly, receive_n, send_all,
    subscribe_earliest, unique_topic,
)

NACK_DELAY_MS = 100
MAX_REDELIVER = 3
ACK_TIMEOUT_MS = 10000   # the smallest ack timeout the C++ client accepts


def nacking_consumer(client, topic, subscription, **options):
    return subscribe_earliest(client, topic, subscription, consumer_type=pulsar.ConsumerType.Shared,
                              negative_ack_redelivery_delay_ms=NACK_DELAY_MS, **options)


def test_each_negative_ack_increments_the_redelivery_count(client):
    topic = unique_topic()
    consumer = nacking_consumer(client, topic, "counts")
    contents = payloads(3)
    send_all(client.create_producer(topic), contents)

    first = receive_n(consumer, 3)
    assert [m.redelivery_count() for m in first] == [0, 0, 0]
    consumer.acknowledge(first[0])
    consumer.acknowledge(first[2])
    counts = [0]
    consumer.negative_acknowledge(first[1])
    for _ in range(4):
        (again,) = receive_n(consumer, 1)
        assert again.data() == contents[1] and again.message_id() == first[1].message_id()
        counts.append(again.redelivery_count())
        consumer.negative_acknowledge(again)
    assert counts == [0, 1, 2, 3, 4]


def test_redelivery_counts_start_again_when_the_last_consumer_leaves(client):
    """As in Pulsar, whose in-memory redelivery tracker is cleared with the last consumer."""
    topic = unique_topic()
    consumer = nacking_consumer(client, topic, "restart")
    client.create_producer(topic).send(b"again")
    consumer.negative_acknowledge(receive_n(consumer, 1)[0])
    (second,) = receive_n(consumer, 1)
    assert second.redelivery_count() == 1
    consumer.close()

    consumer = nacking_consumer(client, topic, "restart")
    (third,) = receive_n(consumer, 1)
    assert third.data() == b"again" and third.redelivery_count() == 0


def test_message_nacked_past_max_redeliver_count_lands_in_the_dead_letter_topic(client):
    topic = unique_topic()
    dlq = full_name(f"{topic}-dead")
    policy = pulsar.ConsumerDeadLetterPolicy(MAX_REDELIVER, dlq, "dlq-sub")
    consumer = nacking_consumer(client, topic, "work", dead_letter_policy=policy)
    producer = client.create_producer(topic)
    producer.send(b"poison", properties={"kind": "bad", "n": "1"})
    producer.send(b"fine")

    seen = []
    while True:
        msg = consumer.receive(5000)
        if msg.data() == b"fine":
            consumer.acknowledge(msg)
            continue
        seen.append(msg.redelivery_count())
        consumer.negative_acknowledge(msg)
        if len(seen) == MAX_REDELIVER + 1:
            break
    assert seen == list(range(MAX_REDELIVER + 1))
    expect_nothing(consumer, quiet_ms=5 * NACK_DELAY_MS + 1000)

    # The broker created "dlq-sub" from the earliest entry when the client's DLQ producer
    # connected, so a consumer joining now (even at Latest) finds the dead letter there.
    dead_consumer = client.subscribe(dlq, "dlq-sub", initial_position=pulsar.InitialPosition.Latest)
    (dead,) = receive_n(dead_consumer, 1)
    assert dead.data() == b"poison"
    assert {"kind": "bad", "n": "1"}.items() <= dead.properties().items()
    assert dead.properties().get("REAL_TOPIC") == full_name(topic)
    expect_nothing(dead_consumer)

    consumer.close()   # the poison message was acknowledged on the source subscription
    again = nacking_consumer(client, topic, "work")
    expect_nothing(again)


def test_default_dead_letter_topic_is_topic_dash_subscription_dash_dlq(client):
    topic = unique_topic()
    default_dlq = full_name(f"{topic}-work-DLQ")
    dead_consumer = subscribe_earliest(client, default_dlq, "watch")
    consumer = nacking_consumer(client, topic, "work",
                                dead_letter_policy=pulsar.ConsumerDeadLetterPolicy(1))
    client.create_producer(topic).send(b"poison")

    assert [m.redelivery_count() for m in _nack_until_gone(consumer, 2)] == [0, 1]
    receive_exactly(dead_consumer, [b"poison"])


def _nack_until_gone(consumer, expected: int) -> list:
    received = receive_n(consumer, 1)
    for _ in range(expected - 1):
        consumer.negative_acknowledge(received[-1])
        received += receive_n(consumer, 1)
    consumer.negative_acknowledge(received[-1])
    expect_nothing(consumer, quiet_ms=5 * NACK_DELAY_MS + 1000)
    return received


def test_producer_initial_subscription_exists_before_the_producer_is_confirmed(client):
    """The C++ client sends initial_subscription_name only for DLQ producers; the broker side is
    checked through what a dead letter producer leaves behind: a subscription that kept every
    message published after it, even with no consumer attached at the time."""
    topic = unique_topic()
    dlq = full_name(f"{topic}-dead")
    policy = pulsar.ConsumerDeadLetterPolicy(1, dlq, "kept")
    consumer = nacking_consumer(client, topic, "work", dead_letter_policy=policy)
    send_all(client.create_producer(topic), payloads(3))
    for msg in receive_n(consumer, 3):
        consumer.negative_acknowledge(msg)
    for msg in receive_n(consumer, 3):
        assert msg.redelivery_count() == 1
        consumer.negative_acknowledge(msg)
    expect_nothing(consumer, quiet_ms=5 * NACK_DELAY_MS + 1000)

    kept = client.subscribe(dlq, "kept", initial_position=pulsar.InitialPosition.Latest)
    assert sorted(data_of(receive_n(kept, 3))) == payloads(3)
    expect_nothing(kept)


def test_ack_timeout_redelivers_with_a_redelivery_count(client):
    topic = unique_topic()
    consumer = subscribe_earliest(client, topic, "timeout", consumer_type=pulsar.ConsumerType.Shared,
                                  unacked_messages_timeout_ms=ACK_TIMEOUT_MS)
    contents = payloads(2)
    send_all(client.create_producer(topic), contents)
    first, second = receive_n(consumer, 2)
    consumer.acknowledge(first)

    (again,) = receive_n(consumer, 1, timeout_ms=ACK_TIMEOUT_MS + 5000)
    assert again.data() == contents[1] and again.message_id() == second.message_id()
    assert again.redelivery_count() == 1
    consumer.acknowledge(again)
    expect_nothing(consumer)


def test_exclusive_redelivery_carries_no_count_as_in_pulsar(client):
    """Pulsar's single-active-consumer dispatchers keep no redelivery tracker."""
    topic = unique_topic()
    consumer = subscribe_earliest(client, topic, "excl", negative_ack_redelivery_delay_ms=NACK_DELAY_MS)
    contents = payloads(2)
    send_all(client.create_producer(topic), contents)
    first, second = receive_n(consumer, 2)
    consumer.acknowledge(first)
    consumer.negative_acknowledge(second)

    (again,) = receive_n(consumer, 1)
    assert again.data() == contents[1] and again.redelivery_count() == 0
    consumer.acknowledge(again)
    expect_nothing(consumer)


def test_unacked_messages_of_a_departing_shared_consumer_go_to_the_others(client):
    topic = unique_topic()
    leaving = subscribe_earliest(client, topic, "share", consumer_type=pulsar.ConsumerType.Shared,
                                 receiver_queue_size=5, consumer_name="leaving")
    contents = payloads(5)
    send_all(client.create_producer(topic), contents)
    received = receive_n(leaving, 5)
    leaving.acknowledge(received[0])
    staying = subscribe_earliest(client, topic, "share", consumer_type=pulsar.ConsumerType.Shared,
                                 consumer_name="staying")
    expect_nothing(staying)

    leaving.close()

    redelivered = receive_n(staying, 4)
    assert data_of(redelivered) == contents[1:]
    assert [m.redelivery_count() for m in redelivered] == [0, 0, 0, 0]
    expect_nothing(staying)
