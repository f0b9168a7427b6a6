"""A log of small JSON records on a managed ledger with one cursor: what the coordinator's
transaction log and a subscription's pending-ack log are made of. A record is on disk when
append() returns; replay yields, in log order, the records the cursor has not acknowledged."""

from __future__ import annotations

import json
from typing import Any, AsyncIterator

from managed_ledger.interfaces import ManagedCursor, ManagedLedger
from managed_ledger.position import Position

Record = dict[str, Any]
_READ_BATCH = 500


async def append_record(ledger: ManagedLedger, record: Record) -> Position:
    return await ledger.add_entry(json.dumps(record, separators=(",", ":")).encode())


async def unacknowledged_records(ledger: ManagedLedger, cursor: ManagedCursor) -> AsyncIterator[tuple[Position, Record]]:
    position = ledger.next_position(cursor.mark_delete_position)
    last = ledger.last_confirmed_entry
    while position <= last:
        entries = await ledger.read_entries(position, _READ_BATCH)
        if not entries:
            break
        for entry in entries:
            if not cursor.is_deleted(entry.position):
                yield entry.position, json.loads(entry.data)
        position = ledger.next_position(entries[-1].position)
