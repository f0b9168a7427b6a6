"""Key_Shared consumer selectors: which consumer owns a sticky-key hash.

Hashes are Murmur3 x86_32 (seed 0) of the sticky key, & 0x7fffffff, % 65536: the "slot" every
selector works on, as Pulsar's. Three selectors, as Pulsar's broker has them:

- AutoSplitSelector (AUTO_SPLIT, the default): contiguous hash ranges. A joining consumer takes
  the lower half of the largest range (the lowest one on a tie); a leaving one's range merges
  into its right neighbour (the last range into its left one).
- ConsistentHashSelector (AUTO_SPLIT with subscriptionKeySharedUseConsistentHashing=true):
  `replica_points` points per consumer on a ring; a hash belongs to the first point at or
  after it, wrapping around.
- StickySelector (STICKY): each consumer declares its own ranges; overlaps are refused.
"""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING, Protocol

import mmh3

from protocol import pulsar_api_pb2 as pb
from server.errors import ConsumerAssignError

if TYPE_CHECKING:
    from server.config import BrokerConfig

    from .consumer import Consumer

HASH_RANGE_SIZE = 65536
NONE_KEY = b"NONE_KEY"


def sticky_key_hash(key: bytes) -> int:
    """The hash slot of a sticky key, in [0, 65536)."""
    return (mmh3.hash(key, 0, signed=False) & 0x7FFFFFFF) % HASH_RANGE_SIZE


class ConsumerSelector(Protocol):
    def add_consumer(self, consumer: "Consumer") -> None:
        """Give the consumer its share of hashes, or raise ConsumerAssignError."""

    def remove_consumer(self, consumer: "Consumer") -> None: ...

    def select(self, key_hash: int) -> "Consumer | None": ...


class _RangeEnds:
    """Sorted inclusive range ends, each owned by a consumer: the shape two selectors share."""

    def __init__(self) -> None:
        self.ends: list[int] = []
        self.owners: list["Consumer"] = []

    def put(self, end: int, owner: "Consumer") -> None:
        index = bisect.bisect_left(self.ends, end)
        if index < len(self.ends) and self.ends[index] == end:
            self.owners[index] = owner
        else:
            self.ends.insert(index, end)
            self.owners.insert(index, owner)

    def remove_at(self, index: int) -> None:
        del self.ends[index]
        del self.owners[index]

    def ceiling(self, key_hash: int) -> int:
        """Index of the first range end >= key_hash (len(ends) when none)."""
        return bisect.bisect_left(self.ends, key_hash)


class AutoSplitSelector:
    """Range ends as Pulsar keeps them: the first consumer's end is 65536 (the range size), a
    range's size is its end minus the previous end (0 for the first), and a split puts the new
    consumer's end at end - size // 2, so it takes the lower half."""

    def __init__(self, range_size: int = HASH_RANGE_SIZE) -> None:
        self._range_size = range_size
        self._ranges = _RangeEnds()

    def add_consumer(self, consumer: "Consumer") -> None:
        if not self._ranges.ends:
            self._ranges.put(self._range_size, consumer)
            return
        index = self._largest_range()
        end = self._ranges.ends[index]
        size = end - (self._ranges.ends[index - 1] if index > 0 else 0)
        if size <= 1:
            raise ConsumerAssignError(
                f"No more range can be assigned to a new consumer, assigned consumers {len(self._ranges.ends)}")
        self._ranges.put(end - (size >> 1), consumer)

    def _largest_range(self) -> int:
        """The first (lowest) of the largest ranges."""
        ends = self._ranges.ends
        sizes = [end - (ends[i - 1] if i > 0 else 0) for i, end in enumerate(ends)]
        return sizes.index(max(sizes))

    def remove_consumer(self, consumer: "Consumer") -> None:
        if consumer not in self._ranges.owners:
            return
        index = self._ranges.owners.index(consumer)
        last = len(self._ranges.ends) - 1
        if index == last and last > 0:
            left_owner = self._ranges.owners[index - 1]
            self._ranges.remove_at(index - 1)
            self._ranges.owners[index - 1] = left_owner
        else:
            self._ranges.remove_at(index)

    def select(self, key_hash: int) -> "Consumer | None":
        index = self._ranges.ceiling(key_hash)
        return self._ranges.owners[index] if index < len(self._ranges.owners) else None


class ConsistentHashSelector:
    def __init__(self, replica_points: int) -> None:
        if replica_points <= 0:
            raise ValueError("subscriptionKeySharedConsistentHashingReplicaPoints must be positive")
        self._replica_points = replica_points
        self._points: list[int] = []
        #: ring point -> consumers placed there; the first is selected, the rest wait (collisions).
        self._owners: dict[int, list["Consumer"]] = {}
        #: consumer -> the name index it was placed with (same-named consumers get distinct points).
        self._name_index: dict["Consumer", int] = {}

    def _point_hashes(self, consumer: "Consumer", name_index: int) -> list[int]:
        return [sticky_key_hash(f"{consumer.name}\0{name_index}\0{i}".encode())
                for i in range(self._replica_points)]

    def add_consumer(self, consumer: "Consumer") -> None:
        used = {i for c, i in self._name_index.items() if c.name == consumer.name}
        name_index = next(i for i in range(len(used) + 1) if i not in used)
        self._name_index[consumer] = name_index
        for point in self._point_hashes(consumer, name_index):
            owners = self._owners.get(point)
            if owners is None:
                self._owners[point] = [consumer]
                bisect.insort(self._points, point)
            elif consumer not in owners:
                owners.append(consumer)

    def remove_consumer(self, consumer: "Consumer") -> None:
        name_index = self._name_index.pop(consumer, None)
        if name_index is None:
            return
        for point in set(self._point_hashes(consumer, name_index)):
            owners = self._owners[point]
            owners.remove(consumer)
            if not owners:
                del self._owners[point]
                self._points.pop(bisect.bisect_left(self._points, point))

    def select(self, key_hash: int) -> "Consumer | None":
        if not self._points:
            return None
        index = bisect.bisect_left(self._points, key_hash)
        point = self._points[index] if index < len(self._points) else self._points[0]
        return self._owners[point][0]


class StickySelector:
    def __init__(self) -> None:
        self._ranges = _RangeEnds()
        self._starts: dict[int, int] = {}   # range end -> range start

    def add_consumer(self, consumer: "Consumer") -> None:
        declared = self._declared_ranges(consumer)
        for start, end in declared:
            self._check_free(start, end)
        for start, end in declared:
            self._ranges.put(end, consumer)
            self._starts[end] = start

    @staticmethod
    def _declared_ranges(consumer: "Consumer") -> list[tuple[int, int]]:
        meta = consumer.key_shared_meta
        ranges = sorted((r.start, r.end) for r in meta.hashRanges) if meta is not None else []
        if not ranges:
            raise ConsumerAssignError("Ranges for KeyShared policy must not be empty.")
        for start, end in ranges:
            if start > end:
                raise ConsumerAssignError(f"Fixed hash range start > end: [{start}, {end}]")
            if start < 0 or end >= HASH_RANGE_SIZE:
                raise ConsumerAssignError(f"Hash range [{start}, {end}] is outside [0, {HASH_RANGE_SIZE - 1}]")
        for (_, previous_end), (start, end) in zip(ranges, ranges[1:]):
            if start <= previous_end:
                raise ConsumerAssignError(f"The consumer's own ranges overlap at [{start}, {end}]")
        return ranges

    def _check_free(self, start: int, end: int) -> None:
        index = self._ranges.ceiling(start)
        if index < len(self._ranges.ends) and self._starts[self._ranges.ends[index]] <= end:
            owner = self._ranges.owners[index]
            raise ConsumerAssignError(f"Range conflict with consumer {owner.name} for range [{start}, {end}]")

    def remove_consumer(self, consumer: "Consumer") -> None:
        for index in reversed(range(len(self._ranges.owners))):
            if self._ranges.owners[index] is consumer:
                del self._starts[self._ranges.ends[index]]
                self._ranges.remove_at(index)

    def select(self, key_hash: int) -> "Consumer | None":
        index = self._ranges.ceiling(key_hash)
        if index < len(self._ranges.ends) and self._starts[self._ranges.ends[index]] <= key_hash:
            return self._ranges.owners[index]
        return None


def selector_for(meta: pb.KeySharedMeta, config: "BrokerConfig") -> ConsumerSelector:
    """The selector a Key_Shared subscription with this policy uses under this broker config."""
    if meta.keySharedMode == pb.STICKY:
        return StickySelector()
    if config.subscription_key_shared_use_consistent_hashing:
        return ConsistentHashSelector(config.subscription_key_shared_consistent_hashing_replica_points)
    return AutoSplitSelector()


def policy_conflict(active: pb.KeySharedMeta, joining: pb.KeySharedMeta) -> str | None:
    """Why a consumer with policy `joining` cannot join consumers with policy `active`, in
    Pulsar's words (the client gets ConsumerBusy), or None when they agree."""
    if joining.keySharedMode != active.keySharedMode:
        return (f"Subscription is of different type. Active subscription key_shared mode of "
                f"'{pb.KeySharedMode.Name(active.keySharedMode)}' is different than the connecting consumer's "
                f"key_shared mode '{pb.KeySharedMode.Name(joining.keySharedMode)}'.")
    if joining.allowOutOfOrderDelivery != active.allowOutOfOrderDelivery:
        allowed, refused = ("allows", "does not allow") if active.allowOutOfOrderDelivery else ("does not allow", "allows")
        return (f"Subscription is of different type. Active subscription {allowed} out of order delivery "
                f"while the connecting consumer {refused} it.")
    return None
