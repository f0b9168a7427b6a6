"""Keyed records on a namespace's system topics (`__change_events`, `__transaction_buffer_snapshot`):
each record is a message keyed by what it is about, appended to the system topic's managed
ledger like any message (durable, and shown to other brokers' read-only views, before the
append returns), and read back by replaying the log; the newest record of a key wins.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import Callable, Protocol, TypeVar

from managed_ledger.interfaces import ManagedLedger
from managed_ledger.position import Entry, Position
from protocol import pulsar_api_pb2 as pb
from protocol.entry import make_entry, payload_of

_READ_BATCH = 256
Record = TypeVar("Record")


class RecordLedger(Protocol):
    """Where records are read: the topic's managed ledger, or a read-only view of it."""

    @property
    def last_confirmed_entry(self) -> Position: ...

    def first_position(self) -> Position: ...

    def next_position(self, position: Position) -> Position: ...

    async def read_entries(self, start: Position, max_entries: int) -> list[Entry]: ...


class RecordTopic(Protocol):
    """What appending needs of the loaded system topic."""

    ledger: ManagedLedger

    def publish(self, entries: list[bytes], num_messages: int,
                on_done: Callable[[Position | None, BaseException | None], None]) -> None: ...


async def read_records(ledger: RecordLedger, after: Position | None,
                       decode: Callable[[bytes], Record]) -> list[tuple[Position, Record]]:
    """The records after position `after` (from the first one when None) up to the last
    confirmed entry, each decoded from its payload, with its position."""
    position = ledger.first_position() if after is None else ledger.next_position(after)
    records: list[tuple[Position, Record]] = []
    while position <= ledger.last_confirmed_entry:
        entries = await ledger.read_entries(position, _READ_BATCH)
        if not entries:
            break
        records.extend((entry.position, decode(bytes(payload_of(entry.data)))) for entry in entries)
        position = ledger.next_position(entries[-1].position)
    return records


_sequence = itertools.count()


async def append_record(topic: RecordTopic, key: str, payload: bytes, writer: str) -> None:
    """Append one record; returns once it is durable and shown to read-only views."""
    metadata = pb.MessageMetadata(producer_name=writer, sequence_id=next(_sequence),
                                  publish_time=int(time.time() * 1000), partition_key=key)
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def on_done(_position: Position | None, error: BaseException | None) -> None:
        if not done.done():
            done.set_exception(error) if error is not None else done.set_result(None)

    topic.publish([make_entry(metadata, payload)], 1, on_done)
    await done
    await topic.ledger.send_last_confirmed()
