"""Key_Shared with the official Python client: which consumer gets which key, exactly, and per-key
order when consumers join, leave or negatively acknowledge.

Ownership is predicted here from Pulsar's documented rules, independently of the broker's code:
slot = (Murmur3_x86_32(key, seed 0) & 0x7fffffff) % 65536; AUTO_SPLIT gives the first consumer
range end 65536 and each joiner the lower half of the largest range; consistent hashing puts
`points` ring points per consumer at slot(f"{name}\\0{index}\\0{i}").
"""

from __future__ import annotations

import bisect
import time
from collections import defaultdict
from datetime import timedelta

import mmh3
import pulsar
import pytest

from compat_tests.helpers import (
    data_of, expect_nothing, receive_exactly, receive_n, send_all, send_all_async, unique_topic,
)
from compat_tests.test_subscription_types import drain

KEYS = [f"key-{k}" for k in range(12)]
CONSISTENT_HASHING_CONFIG = {"subscriptionKeySharedUseConsistentHashing": "true",
                             "subscriptionKeySharedConsistentHashingReplicaPoints": 100}


def slot(key: str) -> int:
    return (mmh3.hash(key.encode(), 0, signed=False) & 0x7FFFFFFF) % 65536


def auto_split_owner(key: str, consumers: int) -> int:
    """Index (join order) of the AUTO_SPLIT owner of key among 1..3 consumers."""
    ends = {1: [(65536, 0)], 2: [(32768, 1), (65536, 0)], 3: [(16384, 2), (32768, 1), (65536, 0)]}[consumers]
    return next(owner for end, owner in ends if slot(key) <= end)


def ring_owner(key: str, names: list[str], points: int = 100) -> str:
    ring = sorted((slot(f"{name}\0{0}\0{i}"), name) for name in names for i in range(points))
    index = bisect.bisect_left(ring, (slot(key), ""))
    return ring[index % len(ring)][1]


def keyed(rounds: int, tag: str, keys=KEYS) -> list[tuple[str, bytes]]:
    """(key, payload) pairs, keys in turn: rounds messages per key."""
    return [(key, f"{tag}-{key}-{r}".encode()) for r in range(rounds) for key in keys]


def produce(producer, messages: list[tuple[str, bytes]]) -> None:
    send_all_async(producer, [data for _, data in messages],
                   fields_for=lambda i: {"partition_key": messages[i][0]})


def payloads_for(messages, keys) -> list[bytes]:
    return [data for key, data in messages if key in keys]


def key_shared(client, topic, subscription, name, policy=None, **options):
    return client.subscribe(topic, subscription, consumer_type=pulsar.ConsumerType.KeyShared,
                            consumer_name=name, key_shared_policy=policy, **options)


def receive_exactly_and_ack(consumer, expected: list[bytes]) -> None:
    """As receive_exactly, acking each message on receipt (the quiet wait flushes the acks)."""
    assert data_of(receive_n(consumer, len(expected), ack=True)) == expected
    expect_nothing(consumer)


def unbatched(client, topic):
    return client.create_producer(topic, batching_enabled=False)


def test_three_consumers_each_get_exactly_their_keys_in_order(client):
    topic = unique_topic()
    consumers = [key_shared(client, topic, "ks", f"c{i}", receiver_queue_size=10) for i in range(3)]
    messages = keyed(10, "m")
    owners = {key: auto_split_owner(key, 3) for key in KEYS}
    assert set(owners.values()) == {0, 1, 2}, "the fixed keys must cover all three ranges"

    produce(unbatched(client, topic), messages)

    shares = drain(consumers, len(messages))
    assert sum(map(len, shares)) == len(messages), f"received {[len(s) for s in shares]}"
    for index, share in enumerate(shares):
        mine = {key for key, owner in owners.items() if owner == index}
        assert data_of(share) == payloads_for(messages, mine), f"consumer c{index}"
        assert {m.partition_key() for m in share} == mine
    for consumer in consumers:
        expect_nothing(consumer)


def test_key_based_batches_are_dispatched_by_their_key(client):
    topic = unique_topic()
    consumers = [key_shared(client, topic, "ks", f"c{i}") for i in range(2)]
    producer = client.create_producer(topic, batching_enabled=True, batching_type=pulsar.BatchingType.KeyBased,
                                      batching_max_messages=50, batching_max_publish_delay_ms=20)
    messages = keyed(20, "b")

    produce(producer, messages)

    shares = drain(consumers, len(messages))
    assert sum(map(len, shares)) == len(messages), f"received {[len(s) for s in shares]}"
    for index, share in enumerate(shares):   # batches of different keys may leave in any order
        mine = {key for key in KEYS if auto_split_owner(key, 2) == index}
        assert {m.partition_key() for m in share} == mine, f"consumer c{index}"
        for key in mine:
            assert [m.data() for m in share if m.partition_key() == key] == payloads_for(messages, {key})
    assert any(m.message_id().batch_index() > 0 for share in shares for m in share), "no batch was formed"


def test_a_joining_consumer_gets_a_key_only_after_its_earlier_messages_are_acked(client):
    topic = unique_topic()
    first = key_shared(client, topic, "ks", "c0")
    producer = unbatched(client, topic)
    before = keyed(2, "before")
    produce(producer, before)
    held = receive_n(first, len(before))          # all prefetched and received, none acked
    assert data_of(held) == [data for _, data in before]

    second = key_shared(client, topic, "ks", "c1")   # takes slots 0..32768
    moved = [key for key in KEYS if auto_split_owner(key, 2) == 1]
    stayed = [key for key in KEYS if key not in moved]
    assert moved and stayed
    after = keyed(3, "after")
    produce(producer, after)

    receive_exactly(first, payloads_for(after, stayed))
    expect_nothing(second)            # every moved key still has unacked messages on c0

    released, waiting = moved[0], moved[1:]
    for msg in held:
        if msg.partition_key() == released:
            first.acknowledge(msg)
    receive_exactly(second, payloads_for(after, {released}))

    for msg in held:
        if msg.partition_key() != released:
            first.acknowledge(msg)
    receive_exactly(second, payloads_for(after, waiting))
    expect_nothing(first)


def test_a_leaving_consumer_hands_its_keys_and_unacked_messages_over_in_order(client):
    topic = unique_topic()
    leaving = key_shared(client, topic, "ks", "c0")
    staying = key_shared(client, topic, "ks", "c1")
    leaving_keys = {key for key in KEYS if auto_split_owner(key, 2) == 0}
    staying_keys = set(KEYS) - leaving_keys
    producer = unbatched(client, topic)
    before = keyed(4, "before")
    produce(producer, before)

    receive_exactly(staying, payloads_for(before, staying_keys))
    mine = payloads_for(before, leaving_keys)
    acked = receive_n(leaving, len(mine) // 2, ack=True)
    assert data_of(acked) == mine[:len(mine) // 2]
    time.sleep(0.3)                                # let the grouped acknowledgements reach the broker
    leaving.close()

    after = keyed(2, "after")
    produce(producer, after)
    got = receive_n(staying, len(mine) - len(acked) + len(after), ack=True)
    expect_nothing(staying)
    per_key: dict[str, list[bytes]] = defaultdict(list)
    for msg in got:
        per_key[msg.partition_key()].append(msg.data())
    unacked = set(mine[len(acked):])
    for key in KEYS:
        expected = [d for d in payloads_for(before, {key}) if d in unacked] + payloads_for(after, {key})
        assert per_key[key] == expected, key


def test_negative_ack_is_redelivered_to_the_key_owner(client):
    topic = unique_topic()
    consumers = [key_shared(client, topic, "ks", f"c{i}", negative_ack_redelivery_delay_ms=100)
                 for i in range(2)]
    key = KEYS[0]
    owner, other = consumers[auto_split_owner(key, 2)], consumers[1 - auto_split_owner(key, 2)]
    send_all(unbatched(client, topic), [b"k-0", b"k-1", b"k-2"], partition_key=key)

    first = owner.receive(5000)
    assert first.data() == b"k-0"
    owner.negative_acknowledge(first)
    rest = receive_n(owner, 3, ack=True)
    assert data_of(rest) == [b"k-1", b"k-2", b"k-0"]
    assert rest[-1].redelivery_count() == 1
    expect_nothing(owner)
    expect_nothing(other)


def sticky(*ranges):
    return pulsar.ConsumerKeySharedPolicy(pulsar.KeySharedMode.Sticky, sticky_ranges=list(ranges))


def test_sticky_ranges_serve_exactly_their_hashes_and_refuse_overlaps(client):
    topic = unique_topic()
    low = key_shared(client, topic, "ks", "low", sticky((0, 32767)))
    producer = unbatched(client, topic)
    low_keys = {key for key in KEYS if slot(key) <= 32767}
    assert low_keys and low_keys != set(KEYS)
    messages = keyed(3, "s")
    produce(producer, messages)

    receive_exactly(low, payloads_for(messages, low_keys))   # nobody serves the upper half yet

    with pytest.raises(pulsar.ConsumerAssignError):
        key_shared(client, topic, "ks", "overlap", sticky((30000, 40000)))
    with pytest.raises(pulsar.ConsumerBusy):
        key_shared(client, topic, "ks", "auto")             # AUTO_SPLIT on a STICKY subscription

    high = key_shared(client, topic, "ks", "high", sticky((32768, 65535)))
    receive_exactly(high, payloads_for(messages, set(KEYS) - low_keys))
    expect_nothing(low)


def test_a_sticky_consumer_cannot_join_an_auto_split_subscription(client):
    topic = unique_topic()
    key_shared(client, topic, "ks", "auto")
    with pytest.raises(pulsar.ConsumerBusy):
        key_shared(client, topic, "ks", "sticky", sticky((0, 100)))
    out_of_order = pulsar.ConsumerKeySharedPolicy(allow_out_of_order_delivery=True)
    with pytest.raises(pulsar.ConsumerBusy):
        key_shared(client, topic, "ks", "loose", out_of_order)


def test_consistent_hashing_ring_decides_ownership(make_broker, connect):
    client = connect(make_broker(CONSISTENT_HASHING_CONFIG))
    topic = unique_topic()
    names = ["alpha", "beta", "gamma"]
    consumers = {name: key_shared(client, topic, "ks", name) for name in names}
    keys = [f"ring-{k}" for k in range(24)]
    owners = {key: ring_owner(key, names) for key in keys}
    assert set(owners.values()) == set(names)
    producer = unbatched(client, topic)
    first_round = keyed(2, "r1", keys)
    produce(producer, first_round)

    for name, consumer in consumers.items():
        receive_exactly_and_ack(consumer, payloads_for(first_round, {k for k, o in owners.items() if o == name}))

    consumers.pop("beta").close()
    owners = {key: ring_owner(key, ["alpha", "gamma"]) for key in keys}
    second_round = keyed(2, "r2", keys)
    produce(producer, second_round)
    for name, consumer in consumers.items():
        receive_exactly_and_ack(consumer, payloads_for(second_round, {k for k, o in owners.items() if o == name}))


def test_out_of_order_delivery_moves_keys_to_a_joiner_at_once(client):
    topic = unique_topic()
    policy = pulsar.ConsumerKeySharedPolicy(allow_out_of_order_delivery=True)
    first = key_shared(client, topic, "ks", "c0", policy)
    producer = unbatched(client, topic)
    before = keyed(1, "before")
    produce(producer, before)
    receive_n(first, len(before))                  # held, not acked

    second = key_shared(client, topic, "ks", "c1", policy)
    moved = {key for key in KEYS if auto_split_owner(key, 2) == 1}
    after = keyed(2, "after")
    produce(producer, after)

    receive_exactly(second, payloads_for(after, moved))
    receive_exactly(first, payloads_for(after, set(KEYS) - moved))


def test_consumers_joining_mid_stream_never_interleave_a_key(client):
    topic = unique_topic()
    keys = [f"stream-{k}" for k in range(20)]
    messages = keyed(30, "s", keys)
    consumers = [key_shared(client, topic, "ks", "c0", receiver_queue_size=20)]
    send_all_async(client.create_producer(topic, batching_type=pulsar.BatchingType.KeyBased),
                   [data for _, data in messages], fields_for=lambda i: {"partition_key": messages[i][0]})

    log: list[tuple[int, object]] = []           # (consumer index, message) in receive order
    deadline = time.monotonic() + 30
    while len(log) < len(messages) and time.monotonic() < deadline:
        if len(consumers) < 3 and len(log) >= 150 * len(consumers):
            consumers.append(key_shared(client, topic, "ks", f"c{len(consumers)}", receiver_queue_size=20))
        for index, consumer in enumerate(consumers):
            try:
                msg = consumer.receive(20)
            except pulsar.Timeout:
                continue
            log.append((index, msg))
            consumer.acknowledge(msg)

    assert sorted(m.data() for _, m in log) == sorted(data for _, data in messages)
    for key in keys:
        seen = [(index, m.data()) for index, m in log if m.partition_key() == key]
        assert [data for _, data in seen] == payloads_for(messages, {key}), f"{key} out of order"
        owners = [index for index, _ in seen]
        blocks = [owner for i, owner in enumerate(owners) if i == 0 or owners[i - 1] != owner]
        assert len(blocks) == len(set(blocks)), f"{key} went back and forth: {blocks}"
    assert {index for index, _ in log} == {0, 1, 2}


def test_delayed_message_on_key_shared_arrives_at_its_key_owner_after_its_delay(client):
    topic = unique_topic()
    consumers = [key_shared(client, topic, "ks", f"c{i}") for i in range(2)]
    key = KEYS[0]
    owner, other = consumers[auto_split_owner(key, 2)], consumers[1 - auto_split_owner(key, 2)]
    producer = unbatched(client, topic)
    sent_at = time.monotonic()
    producer.send(b"later", partition_key=key, deliver_after=timedelta(milliseconds=1500))
    producer.send(b"now", partition_key=key)

    assert data_of(receive_n(owner, 1, ack=True)) == [b"now"]
    assert data_of(receive_n(owner, 1, timeout_ms=6000, ack=True)) == [b"later"]
    assert time.monotonic() - sent_at >= 1.4
    expect_nothing(other)


def test_seek_redelivers_every_key_in_order(client):
    topic = unique_topic()
    consumers = [key_shared(client, topic, "ks", f"c{i}") for i in range(2)]
    messages = keyed(2, "seek")
    produce(unbatched(client, topic), messages)
    mine = [payloads_for(messages, {k for k in KEYS if auto_split_owner(k, 2) == i}) for i in range(2)]
    for consumer, expected in zip(consumers, mine):
        receive_exactly_and_ack(consumer, expected)

    consumers[0].seek(pulsar.MessageId.earliest)     # the broker closes both; they re-subscribe

    # The first to re-subscribe holds every key until the other is back (and keeps what it was
    # sent before, as Key_Shared must), so what holds whatever the timing: everything again,
    # each key's messages in order on whichever consumer got them.
    shares = drain(consumers, len(messages))
    assert sorted(m.data() for share in shares for m in share) == sorted(data for _, data in messages)
    for share in shares:
        for key in KEYS:
            got = [m.data() for m in share if m.partition_key() == key]
            assert got == [data for data in payloads_for(messages, {key}) if data in got]


def test_non_persistent_key_shared_gives_each_key_to_its_owner(client):
    topic = f"non-persistent://public/default/{unique_topic()}"
    consumers = [key_shared(client, topic, "ks", f"c{i}") for i in range(2)]
    with pytest.raises(pulsar.ConsumerBusy):
        key_shared(client, topic, "ks", "sticky", sticky((0, 100)))
    messages = keyed(3, "np")

    produce(unbatched(client, topic), messages)

    for index, consumer in enumerate(consumers):
        receive_exactly(consumer, payloads_for(messages, {k for k in KEYS if auto_split_owner(k, 2) == index}))
