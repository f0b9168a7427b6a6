"""Wire message ids as positions: MessageIdData carries uint64 fields, in which clients send
-1 ("before the first entry", the earliest sentinel) as 2**64-1; positions are signed."""

from __future__ import annotations

from managed_ledger.interfaces import ManagedLedger
from managed_ledger.position import Position
from protocol import pulsar_api_pb2 as pb
from protocol.commands import to_signed


def position_of(message_id: pb.MessageIdData) -> Position:
    return Position(to_signed(message_id.ledgerId), to_signed(message_id.entryId))


def seek_position(ledger: ManagedLedger, message_id: pb.MessageIdData) -> Position:
    """A seek target: earliest and latest sentinels, or the entry itself (redelivered)."""
    position = position_of(message_id)
    if position.ledger_id < 0 or position.entry_id < 0:
        return ledger.first_position()
    if position.ledger_id == (1 << 63) - 1:
        return ledger.next_position(ledger.last_confirmed_entry)
    return position
