"""Retention: how long, and how much, consumed data a managed ledger keeps.

Pulsar's table, for (time in minutes, size in MB):

    -1 / -1   keep everything forever
    -1 / >0   keep the newest size MB of consumed data
    >0 / -1   keep consumed data for time minutes
     0 /  0   keep nothing once consumed (the default)
    >0 / >0   drop a consumed ledger once either limit is passed
     0 / >0 and >0 / 0 are invalid (the admin API refuses them)

A closed ledger is deleted when every durable cursor has consumed it (or there is no durable
cursor) and it is beyond retention: closed longer ago than the time limit, or the data left
after deleting it still reaches the size limit. Deletion goes oldest first and stops at the
first ledger retention keeps, so what stays is always a suffix of the log.
"""

from __future__ import annotations

from dataclasses import dataclass

from bookkeeper.config import MB

from .ledger_list import LedgerList
from .position import Position


class InvalidRetentionError(ValueError):
    """A retention pair Pulsar refuses."""


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    time_minutes: int = 0
    size_mb: int = 0

    def __post_init__(self) -> None:
        time, size = self.time_minutes, self.size_mb
        if time < -1 or size < -1:
            raise InvalidRetentionError(f"retention time {time} / size {size}: -1 is the least value")
        if (time == 0) != (size == 0):
            raise InvalidRetentionError(
                f"retention time {time} / size {size}: 0 for one limit needs 0 for the other")

    @property
    def infinite(self) -> bool:
        return self.time_minutes == -1 and self.size_mb == -1

    def time_expired(self, closed_at_ms: int, now_ms: int) -> bool:
        return self.time_minutes >= 0 and now_ms - closed_at_ms > self.time_minutes * 60_000

    def over_size_quota(self, total_size: int, size_to_delete: int) -> bool:
        """Deleting size_to_delete bytes (the oldest ledgers) still leaves at least the limit."""
        return self.size_mb >= 0 and total_size - size_to_delete >= self.size_mb * MB

    def may_delete(self, closed_at_ms: int, now_ms: int, total_size: int, size_to_delete: int) -> bool:
        return (self.time_expired(closed_at_ms, now_ms)
                or self.over_size_quota(total_size, size_to_delete))


def ledgers_beyond_retention(ledgers: LedgerList, retention: RetentionPolicy, slowest: Position,
                             now_ms: int) -> set[int]:
    """The ledgers to delete, oldest first: sealed, wholly at or before slowest (the slowest
    durable cursor's persisted mark-delete), and beyond retention; stops at the first one kept,
    so what stays is a suffix of the log. Never the current ledger."""
    if retention.infinite:
        return set()
    current = ledgers.current.ledger_id
    total = ledgers.total_size
    size_to_delete = 0
    doomed: set[int] = set()
    for info in ledgers:
        if info.ledger_id == current or Position(info.ledger_id, info.entries - 1) > slowest:
            break
        size_to_delete += info.size
        if not retention.may_delete(info.closed_at_ms, now_ms, total, size_to_delete):
            break
        doomed.add(info.ledger_id)
    return doomed
