"""Entries a cursor cannot read because every copy is gone (NonRecoverableEntryError), or
because their ledger's metadata is gone (LedgerMissingError): what such a read covers, and the
counts /metrics reports for them.

As in Pulsar, without autoSkipNonRecoverableData the cursor is held there (its read fails and is
retried) until the entry can be read again; with it, the entry is acknowledged unread, and for a
missing ledger every entry of it at once (Pulsar's skipNonRecoverableLedger). Operators must
learn of either, not only from the log: hence the counts and each cursor's held_at_lost."""

from __future__ import annotations

from dataclasses import dataclass

from .errors import LedgerMissingError, NonRecoverableEntryError
from .ledger_list import LedgerList
from .position import Position


@dataclass(slots=True)
class LostEntryCounts:
    """One managed ledger's, summed over its cursors (durable and readers)."""
    #: entries a cursor found it could not read, once per cursor each time it is held there
    found: int = 0
    #: of those, acknowledged unread (autoSkipNonRecoverableData)
    skipped: int = 0


def lost_through(ledgers: LedgerList, position: Position, error: NonRecoverableEntryError) -> Position:
    """The last position a read failing at position with error cannot give: position itself,
    or for a missing ledger (still listed) its last entry."""
    info = ledgers.get(position.ledger_id)
    if isinstance(error, LedgerMissingError) and info is not None:
        return Position(position.ledger_id, info.entries - 1)
    return position
