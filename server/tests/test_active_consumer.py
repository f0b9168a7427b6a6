"""Exclusive and Failover: which consumer is active (Pulsar's pick), and the failover delay
before a new active consumer is sent anything."""

from __future__ import annotations

import asyncio
import itertools
from types import SimpleNamespace

from protocol import pulsar_api_pb2 as pb
from server.topics.subscriptions.active_consumer import murmur3, pick_active
from server.topics.subscriptions.consumer import Consumer
from server.topics.subscriptions.dispatcher import ReadLimits
from server.topics.subscriptions.dispatcher_single_active import SingleActiveConsumerDispatcher

from .test_dispatcher_key_shared import FakeSubscription, RecordingConnection, settle
from .test_dispatcher_reads import CountingCursor

FAILOVER, EXCLUSIVE = pb.CommandSubscribe.Failover, pb.CommandSubscribe.Exclusive
TOPIC = "persistent://public/default/orders"


def named(*names: str, priority: dict[str, int] | None = None) -> list[SimpleNamespace]:
    return [SimpleNamespace(name=n, priority_level=(priority or {}).get(n, 0)) for n in names]


def test_murmur3_is_pulsars_hash_with_the_sign_bit_cleared():
    assert murmur3("hello") == 0x248BFA47 & 0x7FFFFFFF   # a published Murmur3 x86_32 seed 0 vector
    assert murmur3("") == 0


def test_non_partitioned_pick_depends_on_the_names_not_their_order():
    consumers = named("a", "b", "c", "d")
    picks = {pick_active(list(order), -1, TOPIC).name for order in itertools.permutations(consumers)}
    assert len(picks) == 1


def test_non_partitioned_pick_varies_with_the_topic():
    consumers = named("a", "b", "c", "d")
    picks = {pick_active(consumers, -1, f"{TOPIC}-{i}").name for i in range(40)}
    assert len(picks) > 1


def test_best_priority_level_wins_whatever_the_hash():
    consumers = named("a", "b", "c", priority={"a": 1, "b": 1, "c": 0})
    assert all(pick_active(consumers, -1, f"{TOPIC}-{i}").name == "c" for i in range(20))


def test_partitions_go_round_the_best_level_sorted_by_name():
    consumers = named("c1", "c0", "low", priority={"low": 5})
    assert [pick_active(consumers, i, TOPIC).name for i in range(4)] == ["c0", "c1", "c0", "c1"]
    assert pick_active([], -1, TOPIC) is None


def single_active(sub_type: int, delay_s: float) -> tuple[SingleActiveConsumerDispatcher, CountingCursor]:
    cursor = CountingCursor([1, 1, 1])
    return SingleActiveConsumerDispatcher(FakeSubscription(cursor), ReadLimits(), sub_type, -1, delay_s), cursor


def join(dispatcher: SingleActiveConsumerDispatcher, name: str, sub_type: int) -> Consumer:
    consumer = Consumer(len(dispatcher.consumers), name, dispatcher.subscription, RecordingConnection(), sub_type)
    dispatcher.add_consumer(consumer)
    dispatcher.flow(consumer, 10)
    return consumer


async def test_failover_sends_nothing_until_the_delay_has_passed():
    dispatcher, _ = single_active(FAILOVER, 0.05)
    first = join(dispatcher, "a", FAILOVER)
    await settle()
    second = join(dispatcher, "b", FAILOVER)   # during the wait: the same wait covers it
    await settle()
    assert first.connection.bodies == [] and second.connection.bodies == []
    await asyncio.sleep(0.1)                   # the delay's timer fires first
    await settle()
    active = dispatcher.active
    assert len(active.connection.bodies) == 3
    assert [c for c in (first, second) if c is not active][0].connection.bodies == []
    dispatcher.close()


async def test_exclusive_sends_at_once():
    dispatcher, _ = single_active(EXCLUSIVE, 0.05)
    consumer = join(dispatcher, "a", EXCLUSIVE)
    await settle()
    assert len(consumer.connection.bodies) == 3
    dispatcher.close()
