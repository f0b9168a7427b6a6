"""Key_Shared selectors: hash slots, auto-split ranges, the consistent-hash ring, sticky ranges."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from protocol import pulsar_api_pb2 as pb
from server.config import BrokerConfig
from server.errors import ConsumerAssignError
from server.topics.subscriptions.key_shared_selector import (AutoSplitSelector, ConsistentHashSelector,
                                                             StickySelector, policy_conflict, selector_for,
                                                             sticky_key_hash)


@dataclass(eq=False)
class FakeConsumer:
    name: str
    key_shared_meta: pb.KeySharedMeta | None = None


def sticky(name: str, *ranges: tuple[int, int]) -> FakeConsumer:
    meta = pb.KeySharedMeta(keySharedMode=pb.STICKY,
                            hashRanges=[pb.IntRange(start=s, end=e) for s, e in ranges])
    return FakeConsumer(name, meta)


def owners(selector, slots) -> list[str | None]:
    return [getattr(selector.select(s), "name", None) for s in slots]


def test_hash_is_murmur3_of_the_key_masked_and_taken_modulo_65536():
    # Murmur3 x86_32 seed 0: "hello" -> 0x248BFA47 (a published test vector); & 0x7fffffff; % 65536
    assert sticky_key_hash(b"hello") == (0x248BFA47 & 0x7FFFFFFF) % 65536
    assert all(0 <= sticky_key_hash(f"k{i}".encode()) < 65536 for i in range(1000))


def test_auto_split_halves_the_largest_range_lowest_first():
    selector = AutoSplitSelector()
    c0, c1, c2 = FakeConsumer("c0"), FakeConsumer("c1"), FakeConsumer("c2")
    assert selector.select(5) is None
    selector.add_consumer(c0)
    assert owners(selector, [0, 65535]) == ["c0", "c0"]
    selector.add_consumer(c1)
    assert owners(selector, [0, 32768, 32769, 65535]) == ["c1", "c1", "c0", "c0"]
    selector.add_consumer(c2)
    assert owners(selector, [0, 16384, 16385, 32768, 32769]) == ["c2", "c2", "c1", "c1", "c0"]


def test_auto_split_leaving_range_merges_right_and_the_last_merges_left():
    selector = AutoSplitSelector()
    c0, c1, c2 = FakeConsumer("c0"), FakeConsumer("c1"), FakeConsumer("c2")
    for consumer in (c0, c1, c2):
        selector.add_consumer(consumer)
    selector.remove_consumer(c2)              # 0..16384 joins c1's range on its right
    assert owners(selector, [0, 32768, 32769]) == ["c1", "c1", "c0"]
    selector.remove_consumer(c0)              # the last range goes to its left neighbour
    assert owners(selector, [0, 65535]) == ["c1", "c1"]
    selector.remove_consumer(c1)
    assert selector.select(0) is None


def test_auto_split_refuses_when_no_range_can_be_split():
    selector = AutoSplitSelector(range_size=4)     # ends 4, then 2, 1, 3: four ranges of one slot
    for i in range(4):
        selector.add_consumer(FakeConsumer(f"c{i}"))
    assert owners(selector, [0, 1, 2, 3, 4]) == ["c2", "c2", "c1", "c3", "c0"]
    with pytest.raises(ConsumerAssignError):
        selector.add_consumer(FakeConsumer("c4"))


def test_consistent_hashing_selects_the_next_ring_point_and_wraps():
    selector = ConsistentHashSelector(replica_points=5)
    a, b = FakeConsumer("a"), FakeConsumer("b")
    selector.add_consumer(a)
    selector.add_consumer(b)
    ring = sorted((sticky_key_hash(f"{c.name}\0{0}\0{i}".encode()), c.name) for c in (a, b) for i in range(5))
    for point, name in ring:
        assert selector.select(point).name == name
    for (previous, _), (point, name) in zip(ring, ring[1:]):
        assert selector.select(previous + 1).name == name       # between points: the next one
    assert selector.select(ring[-1][0] + 1).name == ring[0][1]      # wrap-around
    selector.remove_consumer(a)
    assert {selector.select(s).name for s in range(0, 65536, 997)} == {"b"}


def test_consistent_hashing_keeps_same_named_consumers_apart():
    selector = ConsistentHashSelector(replica_points=50)
    first, second = FakeConsumer("same"), FakeConsumer("same")
    selector.add_consumer(first)
    selector.add_consumer(second)
    chosen = {id(selector.select(s)) for s in range(0, 65536, 61)}
    assert chosen == {id(first), id(second)}
    selector.remove_consumer(first)
    assert {id(selector.select(s)) for s in range(0, 65536, 61)} == {id(second)}


def test_sticky_ranges_select_inside_and_leave_gaps_unowned():
    selector = StickySelector()
    selector.add_consumer(sticky("low", (0, 99), (200, 299)))
    selector.add_consumer(sticky("high", (100, 150)))
    assert owners(selector, [0, 99, 100, 150, 151, 199, 200, 299, 300]) == \
        ["low", "low", "high", "high", None, None, "low", "low", None]


@pytest.mark.parametrize("ranges", [(), ((10, 5),), ((0, 65536),), ((-1, 3),), ((0, 10), (5, 20))])
def test_sticky_refuses_invalid_ranges(ranges):
    with pytest.raises(ConsumerAssignError):
        StickySelector().add_consumer(sticky("bad", *ranges))


@pytest.mark.parametrize("taken", [(50, 60), (0, 100), (100, 140), (0, 0), (10, 10)])
def test_sticky_refuses_overlaps_and_keeps_the_owner(taken):
    selector = StickySelector()
    owner = sticky("owner", (0, 100), (200, 300))
    selector.add_consumer(owner)
    with pytest.raises(ConsumerAssignError, match="owner"):
        selector.add_consumer(sticky("late", (150, 160), taken))
    assert selector.select(155) is None       # a refused consumer gets no range at all
    selector.remove_consumer(owner)
    selector.add_consumer(sticky("late", taken))


def test_selector_for_picks_by_mode_and_config():
    auto = pb.KeySharedMeta(keySharedMode=pb.AUTO_SPLIT)
    ring = BrokerConfig(subscription_key_shared_use_consistent_hashing=True)
    assert isinstance(selector_for(auto, BrokerConfig()), AutoSplitSelector)
    assert isinstance(selector_for(auto, ring), ConsistentHashSelector)
    assert isinstance(selector_for(pb.KeySharedMeta(keySharedMode=pb.STICKY), ring), StickySelector)


def test_policy_conflict_names_mode_and_out_of_order_mismatches():
    auto, sticky_meta = pb.KeySharedMeta(keySharedMode=pb.AUTO_SPLIT), pb.KeySharedMeta(keySharedMode=pb.STICKY)
    loose = pb.KeySharedMeta(keySharedMode=pb.AUTO_SPLIT, allowOutOfOrderDelivery=True)
    assert policy_conflict(auto, pb.KeySharedMeta(keySharedMode=pb.AUTO_SPLIT)) is None
    assert "key_shared mode of 'AUTO_SPLIT'" in policy_conflict(auto, sticky_meta)
    assert "does not allow out of order delivery" in policy_conflict(auto, loose)
    assert "Active subscription allows out of order delivery" in policy_conflict(loose, auto)
