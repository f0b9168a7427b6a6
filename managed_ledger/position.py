"""Positions and entries: the coordinates every layer above the bookie speaks in."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import NamedTuple


class Position(NamedTuple):
    """(ledger, entry) of one stored entry; ordered as the topic's log is.

    A named tuple rather than a frozen dataclass: one is made per message on the SEND path
    and hashed by the entry cache, and a tuple is built and hashed several times faster."""

    ledger_id: int
    entry_id: int

    def __str__(self) -> str:
        return f"{self.ledger_id}:{self.entry_id}"


#: Before everything: a cursor whose mark-delete sits here has acknowledged nothing.
EARLIEST = Position(-1, -1)
#: After everything that will ever be written (Pulsar's MessageId.latest).
LATEST = Position(2**63 - 1, 2**63 - 1)


@dataclass(frozen=True, slots=True)
class Entry:
    """One stored entry: the bytes exactly as the producer sent them (magic onward)."""

    position: Position
    data: bytes


class InitialPosition(enum.Enum):
    """Where a new durable cursor starts."""

    LATEST = 0
    EARLIEST = 1
