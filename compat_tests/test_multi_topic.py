"""Multi-topic consumers: an explicit list, and a regex that discovers topics created later."""

from __future__ import annotations

import time
from collections import defaultdict

import _pulsar
import pulsar

from compat_tests.helpers import (
    data_of, expect_nothing, full_name, payloads, receive_n, send_all, subscribe_earliest, unique_topic,
)

DISCOVERY_PERIOD_S = 1
DISCOVERY_WAIT_MS = 10000   # a few discovery rounds


def subscribe_pattern(client: pulsar.Client, pattern: str, subscription: str,
                      mode=pulsar.RegexSubscriptionMode.PersistentOnly) -> pulsar.Consumer:
    """A regex consumer from the earliest message that polls for new topics every second.
    pulsar.Client.subscribe drops pattern_auto_discovery_period (the C++ default of 60 s stays:
    apache/pulsar-client-python#171), so the configuration is built here."""
    conf = _pulsar.ConsumerConfiguration()
    conf.pattern_auto_discovery_period(DISCOVERY_PERIOD_S)
    conf.subscription_initial_position(pulsar.InitialPosition.Earliest)
    conf.regex_subscription_mode(mode)
    schema = pulsar.schema.BytesSchema()
    conf.schema(schema.schema_info())
    consumer = pulsar.Consumer()
    consumer._consumer = client._client.subscribe_pattern(pattern, subscription, conf)
    consumer._client = client
    consumer._schema = schema
    schema.attach_client(client._client)
    client._consumers.append(consumer)
    return consumer


def by_topic(messages) -> dict[str, list[bytes]]:
    grouped = defaultdict(list)
    for msg in messages:
        grouped[msg.topic_name()].append(msg.data())
    return dict(grouped)


def test_topic_list_consumer_gets_each_topic_in_order_and_acks_stick(client):
    topics = [unique_topic("list") for _ in range(3)]
    consumer = subscribe_earliest(client, topics, "list-sub")
    for topic in topics:
        send_all(client.create_producer(topic, batching_enabled=False), payloads(5, tag=topic))

    received = receive_n(consumer, 15, ack=True)

    assert by_topic(received) == {full_name(t): payloads(5, tag=t) for t in topics}
    expect_nothing(consumer)
    consumer.close()
    again = subscribe_earliest(client, topics, "list-sub")
    expect_nothing(again)          # every acknowledgement reached its own topic


def test_topic_list_of_partitioned_topics_covers_every_partition(partitioned_broker, connect):
    client = connect(partitioned_broker)
    topics = [unique_topic("lp"), unique_topic("lp")]
    consumer = subscribe_earliest(client, topics, "parts-sub")
    for topic in topics:
        send_all(client.create_producer(topic, batching_enabled=False), payloads(6, tag=topic))

    received = receive_n(consumer, 12)

    assert sorted(data_of(received)) == sorted(payloads(6, topics[0]) + payloads(6, topics[1]))
    assert {m.topic_name() for m in received} == {
        f"{full_name(t)}-partition-{p}" for t in topics for p in range(3)}
    expect_nothing(consumer)


def test_regex_consumer_discovers_topics_created_after_it_subscribed(client):
    prefix = unique_topic("disc")
    existing = f"{prefix}-old"
    send_all(client.create_producer(existing), payloads(2, "old"))
    consumer = subscribe_pattern(client, f"persistent://public/default/{prefix}-.*", "disc-sub")
    assert data_of(receive_n(consumer, 2)) == payloads(2, "old")

    created_later = f"{prefix}-new"
    not_matching = f"{prefix}x-new"
    send_all(client.create_producer(created_later), payloads(3, "new"))
    send_all(client.create_producer(not_matching), payloads(3, "other"))

    received = receive_n(consumer, 3, timeout_ms=DISCOVERY_WAIT_MS)
    assert by_topic(received) == {full_name(created_later): payloads(3, "new")}
    send_all(client.create_producer(existing), [b"old-again"])
    assert data_of(receive_n(consumer, 1)) == [b"old-again"]
    expect_nothing(consumer)


def test_regex_consumer_discovers_a_new_partitioned_topic(partitioned_broker, connect):
    client = connect(partitioned_broker)
    prefix = unique_topic("discp")
    consumer = subscribe_pattern(client, f"persistent://public/default/{prefix}-.*", "discp-sub")
    time.sleep(DISCOVERY_PERIOD_S)
    topic = f"{prefix}-parts"
    producer = client.create_producer(topic, batching_enabled=False,
                                      message_router=lambda msg, n: int(msg.data().split(b"-")[1]) % n)

    send_all(producer, payloads(6))

    received = receive_n(consumer, 6, timeout_ms=DISCOVERY_WAIT_MS)
    assert by_topic(received) == {
        f"{full_name(topic)}-partition-{p}": payloads(6)[p::3] for p in range(3)}
    expect_nothing(consumer)


def test_regex_all_topics_mode_covers_both_domains(client):
    prefix = unique_topic("both")
    persistent = f"persistent://public/default/{prefix}-p"
    non_persistent = f"non-persistent://public/default/{prefix}-n"
    holder = client.subscribe(non_persistent, "holder")    # keeps the non-persistent topic live
    send_all(client.create_producer(persistent), [b"stored"])

    consumer = subscribe_pattern(client, f"persistent://public/default/{prefix}-.*", "both-sub",
                                 pulsar.RegexSubscriptionMode.AllTopics)
    send_all(client.create_producer(non_persistent), [b"live"])

    assert sorted(data_of(receive_n(consumer, 2))) == [b"live", b"stored"]
    expect_nothing(consumer)
    assert data_of(receive_n(holder, 1)) == [b"live"]
