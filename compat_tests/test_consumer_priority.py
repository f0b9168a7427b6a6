"""Priority levels on Shared, and ACTIVE_CONSUMER_CHANGE on Failover, seen on the wire (the
Python client offers neither): a bare protocol consumer next to the official producer."""

from __future__ import annotations

from protocol import pulsar_api_pb2 as pb

from compat_tests.failover_rule import topic_where
from compat_tests.helpers import full_name, payloads, send_all, unique_topic
from compat_tests.raw_consumer import RawConsumer

Cmd = pb.BaseCommand
SHARED, FAILOVER = pb.CommandSubscribe.Shared, pb.CommandSubscribe.Failover


def entry_ids(messages: list[Cmd]) -> list[int]:
    return [m.message.message_id.entryId for m in messages]


def test_shared_serves_the_best_priority_level_while_it_has_permits(broker, client):
    topic = full_name(unique_topic())
    low = RawConsumer(broker, topic, "prio", SHARED, "low", priority_level=1)
    high = RawConsumer(broker, topic, "prio", SHARED, "high", priority_level=0)
    try:
        # both hold permits before anything exists, so the broker chooses by priority alone
        for consumer, permits in ((low, 100), (high, 3)):
            consumer.flow(permits)
            consumer.sync()
        send_all(client.create_producer(topic), payloads(10))
        assert entry_ids(high.collect(Cmd.MESSAGE)) == [0, 1, 2]
        assert entry_ids(low.collect(Cmd.MESSAGE)) == list(range(3, 10))
    finally:
        low.close()
        high.close()


def active_flags(consumer: RawConsumer) -> list[bool]:
    """Waits out activeConsumerFailoverDelayTimeMillis (1 s by default), which delays announcements."""
    return [c.active_consumer_change.is_active for c in consumer.collect(Cmd.ACTIVE_CONSUMER_CHANGE, quiet_s=1.5)]


def test_failover_tells_every_consumer_of_each_change_of_active_consumer(broker):
    topic = topic_where(lambda pick: pick(["a", "b"]) == "a" and pick(["a", "b", "c"]) == "a"
                        and pick(["b", "c"]) == "b")
    b = RawConsumer(broker, topic, "fo", FAILOVER, "b")
    assert active_flags(b) == [True]

    a = RawConsumer(broker, topic, "fo", FAILOVER, "a")      # Pulsar's pick among a and b: takes over
    assert active_flags(a) == [True]
    assert active_flags(b) == [False]

    c = RawConsumer(broker, topic, "fo", FAILOVER, "c")      # no change: only c hears who is active
    assert active_flags(c) == [False]
    assert active_flags(a) == [] and active_flags(b) == []

    a.close()                                                # b is the pick among b and c
    assert active_flags(b) == [True]
    assert active_flags(c) == [False]
    b.close()
    c.close()
