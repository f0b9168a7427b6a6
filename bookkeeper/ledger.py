"""Ledgers over the embedded bookie: the LedgerClient of bookkeeper/interfaces.py.

A ledger's metadata (state, last entry id, length) lives in the metadata store under
``/ledgers/<id>``; ids come from a counter node. The entries themselves live in the Bookie.
Deletion removes the metadata first: a crash right after leaves entries without metadata,
which the bookie drops at its next start (so nothing is ever half deleted).
"""

from __future__ import annotations

import asyncio
import enum
import json
import logging
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from .bookie import Bookie, future_callback
from .config import BookieConfig
from .errors import (LedgerClosedError, LedgerFencedError, MetadataBadVersionError,
                     MetadataNotFoundError, NoSuchEntryError, NoSuchLedgerError)
from .journal import AddCallback
from .metadata_store import SqliteMetadataStore

logger = logging.getLogger(__name__)

LEDGERS_PATH = "/ledgers"
LEDGER_ID_COUNTER_PATH = "/ledger-id-counter"
#: Ledger ids are reserved this many at a time (one metadata write per block, not per ledger);
#: those a stop or a crash leaves unused are never used.
LEDGER_ID_BLOCK = 1000


class LedgerState(enum.Enum):
    """OPEN -> CLOSED by its writer, or OPEN -> IN_RECOVERY -> CLOSED by a recovery open."""

    OPEN = "OPEN"
    IN_RECOVERY = "IN_RECOVERY"
    CLOSED = "CLOSED"


@dataclass(frozen=True, slots=True)
class LedgerMetadata:
    ledger_id: int
    state: LedgerState
    last_entry_id: int = -1
    length: int = 0
    created_ms: int = 0

    def encode(self) -> bytes:
        fields = asdict(self)
        fields["state"] = self.state.value
        return json.dumps(fields).encode()

    @classmethod
    def decode(cls, raw: bytes) -> LedgerMetadata:
        fields = json.loads(raw)
        fields["state"] = LedgerState(fields["state"])
        return cls(**fields)


def ledger_path(ledger_id: int) -> str:
    return f"{LEDGERS_PATH}/{ledger_id}"


class LedgerReader:
    """ReadHandle: a sealed ledger, or a peek at an open one without fencing it."""

    def __init__(self, bookie: Bookie, metadata: LedgerMetadata) -> None:
        self._bookie = bookie
        self._metadata = metadata

    @property
    def ledger_id(self) -> int:
        return self._metadata.ledger_id

    @property
    def is_closed(self) -> bool:
        return self._metadata.state is LedgerState.CLOSED

    @property
    def last_add_confirmed(self) -> int:
        if self.is_closed:
            return self._metadata.last_entry_id
        return self._bookie.last_entry_id(self.ledger_id)

    @property
    def length(self) -> int:
        if self.is_closed:
            return self._metadata.length
        return self._bookie.ledger_size(self.ledger_id)

    async def read_entries(self, first: int, last: int) -> list[bytes]:
        if last > self.last_add_confirmed:
            raise NoSuchEntryError(f"ledger {self.ledger_id}: entry {last} is beyond "
                                   f"last add confirmed {self.last_add_confirmed}")
        return await self._bookie.read_entries(self.ledger_id, first, last)


class LedgerWriter(LedgerReader):
    """WriteHandle: the single writer of a ledger it created."""

    def __init__(self, client: BookKeeper, metadata: LedgerMetadata, version: int) -> None:
        super().__init__(client.bookie, metadata)
        self._client = client
        self._version = version
        self._next_entry_id = 0
        self._closing = False

    def add_entry(self, data: bytes) -> asyncio.Future[int]:
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self.add_entries_with_callback([data], future_callback(future))
        return future

    def add_entries_with_callback(self, entries: list[bytes], on_done: AddCallback) -> None:
        if self._closing:
            raise LedgerClosedError(f"ledger {self.ledger_id} is closed")
        self._bookie.add_entries(self.ledger_id, self._next_entry_id, entries, on_done)
        self._next_entry_id += len(entries)

    async def write_lac(self) -> None:
        """Nothing to send: readers of this bookie see every entry it holds."""

    async def close(self) -> None:
        if self._closing:
            return
        self._closing = True
        last_entry_id = await self._bookie.fence(self.ledger_id)
        sealed = replace(self._metadata, state=LedgerState.CLOSED, last_entry_id=last_entry_id,
                         length=self._bookie.ledger_size(self.ledger_id))
        try:
            await self._client.store.put(ledger_path(self.ledger_id), sealed.encode(),
                                         self._version)
        except MetadataBadVersionError:
            raise LedgerFencedError(f"ledger {self.ledger_id} was recovered by another opener") \
                from None
        self._metadata = sealed


class BookKeeper:
    """LedgerClient over one embedded Bookie and the metadata store."""

    def __init__(self, store: SqliteMetadataStore, bookie: Bookie) -> None:
        self.store = store
        self.bookie = bookie
        self._ids = iter(range(0))   # the reserved block's ids not yet given
        self._reserving: asyncio.Future[None] | None = None

    @classmethod
    async def open(cls, directory: Path, config: BookieConfig, store: SqliteMetadataStore) -> BookKeeper:
        live = [int(name) for name in await store.children(LEDGERS_PATH)]
        bookie = await Bookie.start(directory, config, live)
        return cls(store, bookie)

    async def create_ledger(self, custom: dict[str, bytes] | None = None, ensemble_size: int | None = None,
                            write_quorum: int | None = None, ack_quorum: int | None = None) -> LedgerWriter:
        """custom is not kept: this broker is the only user of its embedded bookie's ledgers;
        nor are the ensemble and quorums: one bookie, one copy."""
        ledger_id = await self._next_ledger_id()
        metadata = LedgerMetadata(ledger_id, LedgerState.OPEN, created_ms=int(time.time() * 1000))
        version = await self.store.put(ledger_path(ledger_id), metadata.encode(), -1)
        logger.debug("created ledger %d", ledger_id)
        return LedgerWriter(self, metadata, version)

    async def open_ledger(self, ledger_id: int, recovery: bool = True) -> LedgerReader:
        metadata, version = await self._read_metadata(ledger_id)
        if recovery and metadata.state is not LedgerState.CLOSED:
            metadata = await self._recover(metadata, version)
        return LedgerReader(self.bookie, metadata)

    async def delete_ledger(self, ledger_id: int) -> None:
        try:
            await self.store.delete(ledger_path(ledger_id))
        except MetadataNotFoundError:
            raise NoSuchLedgerError(f"ledger {ledger_id} does not exist") from None
        await self.bookie.delete_ledger(ledger_id)
        logger.debug("deleted ledger %d", ledger_id)

    async def list_ledgers(self) -> list[int]:
        return sorted(int(name) for name in await self.store.children(LEDGERS_PATH))

    async def close(self) -> None:
        await self.bookie.close()

    async def _recover(self, metadata: LedgerMetadata, version: int) -> LedgerMetadata:
        """Fence (in the metadata, then in the bookie), find the last entry, seal."""
        if metadata.state is LedgerState.OPEN:
            metadata = replace(metadata, state=LedgerState.IN_RECOVERY)
            version = await self.store.put(ledger_path(metadata.ledger_id), metadata.encode(),
                                           version)
        last_entry_id = await self.bookie.fence(metadata.ledger_id)
        sealed = replace(metadata, state=LedgerState.CLOSED, last_entry_id=last_entry_id,
                         length=self.bookie.ledger_size(metadata.ledger_id))
        await self.store.put(ledger_path(metadata.ledger_id), sealed.encode(), version)
        logger.info("recovered ledger %d: last entry %d", metadata.ledger_id, last_entry_id)
        return sealed

    async def _read_metadata(self, ledger_id: int) -> tuple[LedgerMetadata, int]:
        found = await self.store.get(ledger_path(ledger_id))
        if found is None:
            raise NoSuchLedgerError(f"ledger {ledger_id} does not exist")
        raw, version = found
        return LedgerMetadata.decode(raw), version

    async def _next_ledger_id(self) -> int:
        """The next id of the reserved block, reserving a block (one at a time) when it runs out."""
        while (ledger_id := next(self._ids, None)) is None:
            if self._reserving is None:
                self._reserving = asyncio.ensure_future(self._reserve_block())
            reserving = self._reserving
            try:
                await asyncio.shield(reserving)
            finally:
                if self._reserving is reserving and reserving.done():
                    self._reserving = None
        return ledger_id

    async def _reserve_block(self) -> None:
        while True:
            found = await self.store.get(LEDGER_ID_COUNTER_PATH)
            first, version = (int(found[0]), found[1]) if found is not None else (0, -1)
            try:
                await self.store.put(LEDGER_ID_COUNTER_PATH, str(first + LEDGER_ID_BLOCK).encode(), version)
            except MetadataBadVersionError:
                continue
            self._ids = iter(range(first, first + LEDGER_ID_BLOCK))
            return
