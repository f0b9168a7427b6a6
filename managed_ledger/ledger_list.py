"""A managed ledger's ledgers, oldest first, and the position arithmetic across them.

The last ledger is the current one (being written). Entry counts are of durable entries only.
Positions may name ledgers that no longer exist (trimmed, or empty ones dropped after a
restart) or sit one past a ledger's end; ``normalize`` maps any of them to the first real
position at or after them, so cursors never trip over a ledger that went away.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from dataclasses import dataclass
from typing import Iterator

from .position import Position


@dataclass(slots=True)
class LedgerInfo:
    ledger_id: int
    entries: int = 0
    size: int = 0
    #: wall-clock ms when the ledger was sealed (0 while it is the one being written);
    #: retention by time counts from here, as Pulsar's LedgerInfo.timestamp.
    closed_at_ms: int = 0


def now_ms() -> int:
    """Wall-clock ms, as closed_at_ms is."""
    return int(time.time() * 1000)


class LedgerList:
    """Ordered ledgers of one managed ledger; never empty once the managed ledger is open."""

    __slots__ = ("_ids", "_infos")

    def __init__(self, infos: list[LedgerInfo] | None = None) -> None:
        self._infos: list[LedgerInfo] = sorted(infos or [], key=lambda info: info.ledger_id)
        self._ids: list[int] = [info.ledger_id for info in self._infos]

    def __iter__(self) -> Iterator[LedgerInfo]:
        return iter(self._infos)

    def __len__(self) -> int:
        return len(self._infos)

    @property
    def current(self) -> LedgerInfo:
        return self._infos[-1]

    def get(self, ledger_id: int) -> LedgerInfo | None:
        index = bisect_left(self._ids, ledger_id)
        if index < len(self._ids) and self._ids[index] == ledger_id:
            return self._infos[index]
        return None

    def append(self, info: LedgerInfo) -> None:
        if self._ids and info.ledger_id <= self._ids[-1]:
            raise ValueError(f"ledger {info.ledger_id} is not newer than {self._ids[-1]}")
        self._infos.append(info)
        self._ids.append(info.ledger_id)

    def remove(self, ledger_ids: set[int]) -> None:
        self._infos = [info for info in self._infos if info.ledger_id not in ledger_ids]
        self._ids = [info.ledger_id for info in self._infos]

    @property
    def total_entries(self) -> int:
        return sum(info.entries for info in self._infos)

    @property
    def total_size(self) -> int:
        return sum(info.size for info in self._infos)

    # ---- positions -----------------------------------------------------------------------

    def last_confirmed(self) -> Position:
        """Last durable entry; (current ledger, -1) when no ledger holds any."""
        for info in reversed(self._infos):
            if info.entries:
                return Position(info.ledger_id, info.entries - 1)
        return Position(self.current.ledger_id, -1)

    def first_position(self) -> Position:
        """The first entry, or the end position when there is none."""
        return self.normalize(Position(self._ids[0], 0))

    def normalize(self, position: Position) -> Position:
        """The first existing position at or after ``position``; the end position when it lies
        past the last entry; positions beyond the current ledger are returned unchanged."""
        ledger_id, entry_id = position.ledger_id, max(position.entry_id, 0)
        last_index = len(self._ids) - 1
        if ledger_id > self._ids[last_index]:
            return position
        index = bisect_left(self._ids, ledger_id)
        if self._ids[index] == ledger_id:
            if entry_id < self._infos[index].entries or index == last_index:
                return Position(ledger_id, entry_id)
            index += 1
        while index < last_index and not self._infos[index].entries:
            index += 1
        return Position(self._ids[index], 0)

    def next_position(self, position: Position) -> Position:
        return self.normalize(Position(position.ledger_id, position.entry_id + 1))

    def count_between(self, after: Position, upto: Position) -> int:
        """Number of entries p with after < p <= upto."""
        total = 0
        for info in self._infos:
            if info.ledger_id < after.ledger_id or info.ledger_id > upto.ledger_id:
                continue
            low = after.entry_id + 1 if info.ledger_id == after.ledger_id else 0
            high = upto.entry_id + 1 if info.ledger_id == upto.ledger_id else info.entries
            total += max(0, min(high, info.entries) - max(low, 0))
        return total

    def size_after(self, position: Position) -> int:
        """Estimated bytes of the entries after position (a ledger's average entry size for
        a partial ledger, as Pulsar's estimated backlog size)."""
        total = 0
        for info in self._infos:
            if info.ledger_id > position.ledger_id:
                total += info.size
            elif info.ledger_id == position.ledger_id and info.entries:
                after = max(0, info.entries - 1 - position.entry_id)
                total += info.size * after // info.entries
        return total

    def position_keeping(self, max_bytes: int) -> Position:
        """The earliest position such that the entries after it estimate at most max_bytes."""
        kept = 0
        for info in reversed(self._infos):
            if not info.entries:
                continue
            if kept + info.size <= max_bytes:
                kept += info.size
                continue
            average = max(1, info.size // info.entries)
            fitting = (max_bytes - kept) // average
            return Position(info.ledger_id, info.entries - 1 - fitting)
        return Position(self._ids[0], -1)

    def position_at(self, index: int) -> Position:
        """The index-th entry (0-based) across all ledgers."""
        for info in self._infos:
            if index < info.entries:
                return Position(info.ledger_id, index)
            index -= info.entries
        raise IndexError("position index beyond the last entry")
