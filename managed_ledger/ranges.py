"""A cursor's individually acknowledged entries, kept as sorted closed ranges per ledger.

Acks arrive mostly in order, so the set stays a handful of ranges even for millions of acked
entries; membership and insertion are bisections. Ranges never cross ledgers: moving the
mark-delete over a ledger boundary is the cursor's business (it knows the ledgers).
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Iterator

from .position import Position


class _LedgerRanges:
    """Disjoint, non-adjacent [start, end] entry ranges of one ledger, sorted."""

    __slots__ = ("starts", "ends")

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []

    def index_containing(self, entry_id: int) -> int:
        """Index of the range holding entry_id, or -1."""
        index = bisect_right(self.starts, entry_id) - 1
        return index if index >= 0 and self.ends[index] >= entry_id else -1

    def add(self, entry_id: int) -> bool:
        starts, ends = self.starts, self.ends
        index = bisect_right(starts, entry_id) - 1
        if index >= 0 and ends[index] >= entry_id:
            return False
        joins_left = index >= 0 and ends[index] == entry_id - 1
        joins_right = index + 1 < len(starts) and starts[index + 1] == entry_id + 1
        if joins_left and joins_right:
            ends[index] = ends[index + 1]
            del starts[index + 1]
            del ends[index + 1]
        elif joins_left:
            ends[index] = entry_id
        elif joins_right:
            starts[index + 1] = entry_id
        else:
            starts.insert(index + 1, entry_id)
            ends.insert(index + 1, entry_id)
        return True

    def remove_through(self, entry_id: int) -> int:
        """Drop everything <= entry_id; returns how many entries were dropped."""
        starts, ends = self.starts, self.ends
        cut = bisect_right(starts, entry_id)
        dropped = 0
        for index in range(cut):
            dropped += min(ends[index], entry_id) - starts[index] + 1
        keep_partial = cut > 0 and ends[cut - 1] > entry_id
        if keep_partial:
            starts[cut - 1] = entry_id + 1
            cut -= 1
        del starts[:cut]
        del ends[:cut]
        return dropped

    def size(self) -> int:
        return sum(end - start + 1 for start, end in zip(self.starts, self.ends))


class AckedRanges:
    """Individually acknowledged positions; counts entries, not ranges."""

    def __init__(self) -> None:
        self._ledgers: dict[int, _LedgerRanges] = {}
        self._count = 0

    def __len__(self) -> int:
        """Number of acknowledged entries held."""
        return self._count

    @property
    def range_count(self) -> int:
        return sum(len(ranges.starts) for ranges in self._ledgers.values())

    def add(self, position: Position) -> bool:
        """Record one ack; False when it was already there."""
        ranges = self._ledgers.get(position.ledger_id)
        if ranges is None:
            ranges = self._ledgers[position.ledger_id] = _LedgerRanges()
        added = ranges.add(position.entry_id)
        self._count += added
        return added

    def __contains__(self, position: Position) -> bool:
        ranges = self._ledgers.get(position.ledger_id)
        return ranges is not None and ranges.index_containing(position.entry_id) >= 0

    def range_end(self, position: Position) -> int | None:
        """Last entry id of the range holding position, or None when it is not acked."""
        ranges = self._ledgers.get(position.ledger_id)
        if ranges is None:
            return None
        index = ranges.index_containing(position.entry_id)
        return ranges.ends[index] if index >= 0 else None

    def next_start_after(self, position: Position) -> int | None:
        """First acked entry id after position in the same ledger, or None."""
        ranges = self._ledgers.get(position.ledger_id)
        if ranges is None:
            return None
        index = bisect_right(ranges.starts, position.entry_id)
        return ranges.starts[index] if index < len(ranges.starts) else None

    def remove_through(self, position: Position) -> None:
        """Forget every ack at or before position (the mark-delete now covers them)."""
        for ledger_id in [lid for lid in self._ledgers if lid <= position.ledger_id]:
            ranges = self._ledgers[ledger_id]
            if ledger_id < position.ledger_id:
                self._count -= ranges.size()
                del self._ledgers[ledger_id]
            else:
                self._count -= ranges.remove_through(position.entry_id)
                if not ranges.starts:
                    del self._ledgers[ledger_id]

    def clear(self) -> None:
        self._ledgers.clear()
        self._count = 0

    def ranges(self) -> Iterator[tuple[int, int, int]]:
        """(ledger, first entry, last entry) per range, in log order."""
        for ledger_id in sorted(self._ledgers):
            ranges = self._ledgers[ledger_id]
            for start, end in zip(ranges.starts, ranges.ends):
                yield ledger_id, start, end

    @classmethod
    def from_ranges(cls, ranges: list[tuple[int, int, int]]) -> AckedRanges:
        acked = cls()
        for ledger_id, first, last in ranges:
            ledger_ranges = acked._ledgers.setdefault(ledger_id, _LedgerRanges())
            ledger_ranges.starts.append(first)
            ledger_ranges.ends.append(last)
            acked._count += last - first + 1
        return acked
