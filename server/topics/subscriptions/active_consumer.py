"""Which consumer is active on an Exclusive or Failover subscription, as Pulsar picks it
(AbstractDispatcherSingleActiveConsumer.pickAndScheduleActiveConsumer).

Consumers are ordered by priority level, then name (as Java compares strings); only those of
the best level compete. A partition of a partitioned topic goes to the one at its partition
index modulo their count, so partitions spread over them. A non-partitioned topic goes by
consistent hashing: each competing consumer puts RING_REPLICAS points on a ring (the Murmur3 of
its name followed by 0, 1, ... 99) and the topic's full name hashes to the first point at or
after it, wrapping around; so the pick depends on the names, not on who subscribed first.
"""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING, Sequence

import mmh3

if TYPE_CHECKING:
    from .consumer import Consumer

RING_REPLICAS = 100


def murmur3(text: str) -> int:
    """Pulsar's Murmur3_32Hash of the UTF-8 bytes: x86_32, seed 0, sign bit cleared."""
    return mmh3.hash(text.encode(), 0, signed=False) & 0x7FFFFFFF


def pick_active(consumers: Sequence["Consumer"], partition_index: int, topic: str) -> "Consumer | None":
    if len(consumers) <= 1:   # no choice to make (an Exclusive subscription's, usually)
        return consumers[0] if consumers else None
    ordered = sorted(consumers, key=lambda c: (c.priority_level, c.name.encode("utf-16-be")))
    best = [c for c in ordered if c.priority_level == ordered[0].priority_level]
    if partition_index >= 0:
        return best[partition_index % len(best)]
    return best[_ring_owner([c.name for c in best], murmur3(topic))]


def _ring_owner(names: list[str], point: int) -> int:
    """Index of the name owning `point`; on a collision the later name keeps the point."""
    ring = {murmur3(f"{name}{replica}"): index for index, name in enumerate(names) for replica in range(RING_REPLICAS)}
    points = sorted(ring)
    return ring[points[bisect.bisect_left(points, point) % len(points)]]
