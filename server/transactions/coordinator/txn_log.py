"""One coordinator's transaction log: a managed ledger of small JSON records, as Pulsar's
MLTransactionLogImpl keeps `persistent://pulsar/system/__transaction_log_{tc}`.

A record is durable when append() returns (the coordinator answers only then). A transaction
that ends has its records acknowledged on the log's cursor, so the ledgers that hold only ended
transactions are trimmed (the managed ledger does so as the cursor persists); replay reads what the cursor has not acknowledged.

Transaction ids are never reused, even after every record that named them was trimmed: ids are
reserved in blocks in the metadata store (one write per BLOCK transactions), and a restart
continues after the last reserved block, as Pulsar keeps its max_local_txn_id in the ledger's
properties.
"""

from __future__ import annotations

import asyncio
from typing import AsyncIterator, Iterable, Protocol

from managed_ledger.interfaces import ManagedCursor, ManagedLedger, MetadataStore
from managed_ledger.position import InitialPosition, Position
from server.transactions.record_log import Record, append_record, unacknowledged_records

LOG_PREFIX = "persistent://pulsar/system/__transaction_log_"
#: Pulsar's MLTransactionLogImpl.TRANSACTION_SUBSCRIPTION_NAME
CURSOR_NAME = "transaction.subscription"
SEQUENCE_PATH = "/transactions/coordinators/{tc}/reserved-sequence"
#: Ids reserved per metadata write.
BLOCK = 1000


class LedgerOpener(Protocol):
    async def open_ledger(self, name: str) -> ManagedLedger: ...


def log_name(tc_id: int) -> str:
    return f"{LOG_PREFIX}{tc_id}"


def is_transaction_log(name: object) -> bool:
    return str(name).startswith(LOG_PREFIX)


class TransactionLog:
    def __init__(self, tc_id: int, ledger: ManagedLedger, cursor: ManagedCursor, metadata: MetadataStore) -> None:
        self.tc_id = tc_id
        self.ledger = ledger
        self._cursor = cursor
        self._metadata = metadata
        self._path = SEQUENCE_PATH.format(tc=tc_id)
        self._reserved = -1    # none yet: the first id is 0, as Pulsar's
        self._reserved_version = -1
        self._reserving = asyncio.Lock()
        #: Records appended since start (pulsar_txn_append_log_total).
        self.appended = 0

    @classmethod
    async def open(cls, tc_id: int, storage: LedgerOpener, metadata: MetadataStore) -> "TransactionLog":
        ledger = await storage.open_ledger(log_name(tc_id))
        cursor = await ledger.open_cursor(CURSOR_NAME, InitialPosition.EARLIEST)
        log = cls(tc_id, ledger, cursor, metadata)
        stored = await metadata.get(log._path)
        if stored is not None:
            log._reserved, log._reserved_version = int(stored[0]), stored[1]
        return log

    @property
    def reserved_sequence(self) -> int:
        """Every id up to this one may have been handed out by an earlier run."""
        return self._reserved

    async def replay(self) -> AsyncIterator[tuple[Position, Record]]:
        """The records not acknowledged yet, in log order."""
        async for item in unacknowledged_records(self.ledger, self._cursor):
            yield item

    async def append(self, record: Record) -> Position:
        position = await append_record(self.ledger, record)
        self.appended += 1
        return position

    def acknowledge(self, positions: Iterable[Position]) -> None:
        """The records of an ended transaction: the ledgers holding only such records go."""
        self._cursor.delete(positions)

    async def reserve(self, sequence: int) -> None:
        """Make sure `sequence` is reserved (durably) before it is handed out."""
        if sequence <= self._reserved:
            return
        async with self._reserving:
            if sequence <= self._reserved:
                return
            target = sequence + BLOCK
            # MetadataBadVersionError: another broker runs this coordinator now
            self._reserved_version = await self._metadata.put(self._path, str(target).encode(),
                                                              self._reserved_version)
            self._reserved = target

    async def close(self) -> None:
        await self._cursor.flush()
        await self.ledger.close()
