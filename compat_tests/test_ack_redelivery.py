"""Acknowledgements and redelivery: individual, cumulative, negative acks, unsubscribe."""

from __future__ import annotations

import pulsar

from compat_tests.admin_http import AdminHttp
from compat_tests.helpers import (
    BATCHES_OF_10, data_of, expect_nothing, full_name, payloads, receive_exactly, receive_n,
    send_all, send_all_async, subscribe_earliest, unique_topic,
)
from compat_tests.raw_consumer import Cmd, RawConsumer
from protocol import pulsar_api_pb2 as pb

NACK_DELAY_MS = 200


def produce(client, topic, n, tag="m"):
    contents = payloads(n, tag)
    send_all(client.create_producer(topic), contents)
    return contents


def test_individual_acks_survive_resubscribe_and_unacked_are_redelivered(client):
    topic = unique_topic()
    consumer = subscribe_earliest(client, topic, "acks")
    contents = produce(client, topic, 10)

    received = receive_n(consumer, 10)
    assert data_of(received) == contents
    for msg in received[::2]:
        consumer.acknowledge(msg)
    consumer.close()

    again = subscribe_earliest(client, topic, "acks")
    receive_exactly(again, contents[1::2], ids=[m.message_id() for m in received[1::2]])


def test_cumulative_ack_covers_everything_up_to_the_message(client):
    topic = unique_topic()
    consumer = subscribe_earliest(client, topic, "cumulative")
    contents = produce(client, topic, 10)

    received = receive_n(consumer, 10)
    consumer.acknowledge_cumulative(received[5])
    consumer.close()

    again = subscribe_earliest(client, topic, "cumulative")
    receive_exactly(again, contents[6:])


def test_fully_acked_batch_is_not_redelivered_but_unacked_batch_is(client):
    topic = unique_topic()
    consumer = subscribe_earliest(client, topic, "batches")
    producer = client.create_producer(topic, **BATCHES_OF_10)
    contents = payloads(20)
    send_all_async(producer, contents)

    received = receive_n(consumer, 20)
    for msg in received[:10]:
        consumer.acknowledge(msg)
    consumer.close()

    again = subscribe_earliest(client, topic, "batches")
    receive_exactly(again, contents[10:])


def test_redeliver_unacknowledged_resends_only_unacked(client):
    topic = unique_topic()
    consumer = subscribe_earliest(client, topic, "redeliver")
    contents = produce(client, topic, 5)

    received = receive_n(consumer, 5)
    consumer.acknowledge(received[0])
    consumer.acknowledge(received[1])
    consumer.redeliver_unacknowledged_messages()

    receive_exactly(consumer, contents[2:])


def test_redelivery_requests_show_in_the_redeliver_rates(broker, client):
    """msgRateRedeliver of the subscription and of its consumer: the messages a consumer asked to
    have again, per second (measured as pulsard's other rates: since load, then per window)."""
    topic = unique_topic()
    consumer = subscribe_earliest(client, topic, "again", consumer_type=pulsar.ConsumerType.Shared)
    other = subscribe_earliest(client, topic, "never")
    produce(client, topic, 5)
    received = receive_n(consumer, 5)
    consumer.acknowledge(received[0])
    consumer.redeliver_unacknowledged_messages()
    receive_n(consumer, 4)
    stats = AdminHttp(broker.web_url).get(f"/admin/v2/persistent/public/default/{topic}/stats").json()
    again = stats["subscriptions"]["again"]
    assert again["msgRateRedeliver"] > 0 and again["consumers"][0]["msgRateRedeliver"] > 0
    never = stats["subscriptions"]["never"]
    assert never["msgRateRedeliver"] == 0 and never["consumers"][0]["msgRateRedeliver"] == 0
    other.close()


def test_negative_ack_redelivers_that_message_with_a_redelivery_count(client):
    topic = unique_topic()
    consumer = subscribe_earliest(client, topic, "nack", consumer_type=pulsar.ConsumerType.Shared,
                                  negative_ack_redelivery_delay_ms=NACK_DELAY_MS)
    contents = produce(client, topic, 3)

    first, second, third = receive_n(consumer, 3)
    consumer.acknowledge(first)
    consumer.negative_acknowledge(second)
    consumer.acknowledge(third)

    (again,) = receive_n(consumer, 1)
    assert again.data() == contents[1]
    assert again.message_id() == second.message_id()
    assert again.redelivery_count() == 1
    consumer.acknowledge(again)
    expect_nothing(consumer, quiet_ms=3 * NACK_DELAY_MS + 500)


def test_unsubscribe_removes_the_subscription(client):
    topic = unique_topic()
    consumer = subscribe_earliest(client, topic, "gone")
    old = produce(client, topic, 5, "old")
    assert data_of(receive_n(consumer, 5)) == old   # received, never acked

    consumer.unsubscribe()

    # Were the subscription still there, this consumer would resume at its backlog (the 5 old
    # messages); a new subscription at Latest must see only what comes next.
    fresh = client.subscribe(topic, "gone", initial_position=pulsar.InitialPosition.Latest)
    expect_nothing(fresh)
    new = produce(client, topic, 2, "new")
    receive_exactly(fresh, new)


def test_cumulative_ack_before_the_first_entry_acknowledges_nothing(broker, client):
    """The Java reader acknowledges (ledger, -1) cumulatively, -1 sent as 2**64-1 on the wire
    (found by the Spark connector): it must not be read as 'everything'."""
    topic = full_name(unique_topic("ack-minus-one"))
    produce(client, topic, 3)
    consumer = RawConsumer(broker, topic, "raw", pb.CommandSubscribe.Exclusive, "c")
    try:
        consumer.flow(1)
        first = consumer.expect(Cmd.MESSAGE).message.message_id
        consumer.ack_cumulative(first.ledgerId, -1)
        consumer.flow(2)
        rest = [consumer.expect(Cmd.MESSAGE).message.message_id.entryId for _ in range(2)]
        assert [first.entryId] + rest == [0, 1, 2]
    finally:
        consumer.close()
