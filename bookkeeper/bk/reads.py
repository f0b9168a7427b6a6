"""Reading entries from bookies: each entry from one bookie of its write set, with a
speculative read to the next one when the first is slow, and a fallback when it fails; a range
gives the entries before the first unreadable one (dead bookies cost the entries they held every
copy of, not the whole range); the last-add-confirmed of an open ledger; and LedgerReadHandle,
the ReadHandle over them."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Callable

from ..errors import (BookieRequestError, BookieUnavailableError, EntryCorruptedError,
                      EntryUnreadableError, NoSuchEntryError)
from .codec import Status, StoredEntry, unpack_entry, unpack_lac
from .ledger_metadata import LedgerMetadata, LedgerState
from .placement import write_set

if TYPE_CHECKING:
    from .client import BookKeeperClient
    from .write_handle import LedgerWriteHandle

logger = logging.getLogger(__name__)

READ_WINDOW = 64
_MISSING = (Status.ENOENTRY, Status.ENOLEDGER)


async def read_from(client: BookKeeperClient, bookie: str, ledger_id: int,
                    entry_id: int) -> StoredEntry:
    connection = await client.pool.get(bookie)
    response = await connection.read(ledger_id, entry_id)
    if response.status in _MISSING:
        raise NoSuchEntryError(f"ledger {ledger_id} entry {entry_id} not on {bookie}")
    if response.status != Status.EOK or response.body is None:
        raise BookieRequestError(f"read {ledger_id}/{entry_id} on {bookie}: "
                                 f"{Status.of(response.status)!r}")
    return unpack_entry(response.body, ledger_id, entry_id)


async def read_entry(client: BookKeeperClient, metadata: LedgerMetadata, ledger_id: int,
                     entry_id: int) -> StoredEntry:
    ensemble = metadata.ensemble_at(entry_id)
    order = [ensemble[i] for i in write_set(entry_id, metadata.ensemble_size, metadata.write_quorum)]
    order.sort(key=client.placement.is_quarantined)  # healthy bookies first, stable otherwise
    loop = asyncio.get_running_loop()
    running: set[asyncio.Task[StoredEntry]] = set()
    asked: dict[asyncio.Task[StoredEntry], str] = {}
    errors: list[BaseException] = []
    next_index = 0

    def launch() -> None:
        nonlocal next_index
        task = loop.create_task(read_from(client, order[next_index], ledger_id, entry_id))
        running.add(task)
        asked[task] = order[next_index]
        next_index += 1

    launch()
    try:
        while running:
            more = next_index < len(order)
            done, running = await asyncio.wait(running, timeout=client.speculative_read_s if more else None,
                                               return_when=asyncio.FIRST_COMPLETED)
            if not done:
                launch()  # speculative: the first is slow, ask the next one too
                continue
            for task in done:
                if task.exception() is None:
                    return task.result()
                errors.append(task.exception())  # type: ignore[arg-type]
                if isinstance(task.exception(), (BookieUnavailableError, EntryCorruptedError)):
                    client.placement.quarantine(asked[task])
            if next_index < len(order) and not running:
                launch()  # fall back at once
    finally:
        for task in running:
            task.cancel()
    # callers ask for confirmed entries only: one that no replica gives (down or missing) is lost
    raise EntryUnreadableError(f"ledger {ledger_id} entry {entry_id}: every replica failed: "
                               f"{'; '.join(map(str, errors))}")


async def read_range(client: BookKeeperClient, metadata: LedgerMetadata, ledger_id: int,
                     first: int, last: int) -> list[bytes]:
    """Entries first..last, or those before the first that cannot be read; that entry's
    error when it is the first."""
    out: list[bytes] = []
    for start in range(first, last + 1, READ_WINDOW):
        stop = min(last, start + READ_WINDOW - 1)
        entries = await asyncio.gather(*[read_entry(client, metadata, ledger_id, e)
                                         for e in range(start, stop + 1)], return_exceptions=True)
        for entry in entries:
            if isinstance(entry, BaseException):
                if out:
                    return out
                raise entry
            out.append(entry.payload)
    return out


async def read_last_confirmed(client: BookKeeperClient, metadata: LedgerMetadata,
                              ledger_id: int, fence: bool = False) -> tuple[int, int]:
    """(LAC, length) as the bookies of the last ensemble see it, fencing them when asked.

    Each bookie answers with the last entry it holds, whose header carries the writer's LAC at
    the time, and (READ_LAC, when not fencing) the explicit LAC an idle writer sent it: without
    that, a reader never sees the writer's last entry until it writes again. Enough answers
    must come back that every write set has Qw - Qa + 1 of them: then no write can still reach
    Qa behind our back (QuorumCoverageSet)."""
    ensemble = metadata.last_ensemble

    async def ask(bookie: str) -> int:
        connection = await client.pool.get(bookie)
        response = None if fence else await connection.read_lac(ledger_id)
        if response is None or response.status not in (Status.EOK, *_MISSING):
            # fencing; or a bookie READ_LAC fails on (one sent the explicit LAC of a ledger
            # none of whose entries it holds answers EIO, not ENOENTRY)
            response = await connection.read_last(ledger_id, client.master_key if fence else None, fence)
        if response.status in _MISSING:
            return -1
        if response.status != Status.EOK or (fence and response.body is None):
            raise BookieRequestError(f"{'fence' if fence else 'read LAC'} {ledger_id} on "
                                     f"{bookie}: {Status.of(response.status)!r}")
        explicit = unpack_lac(response.lac_body, ledger_id) if response.lac_body else -1
        piggybacked = unpack_entry(response.body, ledger_id).lac if response.body else -1
        return max(explicit, piggybacked)

    outcomes = await asyncio.gather(*[ask(b) for b in ensemble], return_exceptions=True)
    answered = {i for i, o in enumerate(outcomes) if not isinstance(o, BaseException)}
    needed = metadata.write_quorum - metadata.ack_quorum + 1
    for start in range(metadata.ensemble_size):
        members = write_set(start, metadata.ensemble_size, metadata.write_quorum)
        if sum(1 for i in members if i in answered) < needed:
            errors = [o for o in outcomes if isinstance(o, BaseException)]
            raise BookieUnavailableError(f"ledger {ledger_id}: too few bookies answered "
                                         f"({len(answered)} of {len(ensemble)}): {errors}")
    lac = max((o for o in outcomes if isinstance(o, int)), default=-1)
    return lac, await length_at(client, metadata, ledger_id, lac)


async def length_at(client: BookKeeperClient, metadata: LedgerMetadata, ledger_id: int,
                    entry_id: int) -> int:
    """The ledger's cumulative length up to entry_id, from that entry's header."""
    if entry_id < 0:
        return 0
    return (await read_entry(client, metadata, ledger_id, entry_id)).length


async def read_confirmed(client: BookKeeperClient, metadata: LedgerMetadata, ledger_id: int, lac: int,
                         first: int, last: int) -> list[bytes]:
    """Entries first..last (a prefix, see read_range), all of them at or before the LAC
    (NoSuchEntryError otherwise)."""
    if first < 0 or last > lac or first > last:
        raise NoSuchEntryError(f"ledger {ledger_id}: entries {first}..{last} outside 0..{lac}")
    return await read_range(client, metadata, ledger_id, first, last)


async def read_confirmed_where_stored(client: BookKeeperClient, metadata: LedgerMetadata, ledger_id: int,
                                      lac: int, first: int, last: int,
                                      adopt: Callable[[LedgerMetadata, int], None]) -> list[bytes]:
    """read_confirmed; when no replica the metadata names gives an entry, the metadata read
    anew may name others (AutoRecovery copied the entries since): adopt() it and read there."""
    try:
        return await read_confirmed(client, metadata, ledger_id, lac, first, last)
    except EntryUnreadableError:
        current, version = await client.read_metadata(ledger_id)
        if current.segments == metadata.segments:
            raise
        adopt(current, version)
        return await read_confirmed(client, current, ledger_id, lac, first, last)


class LedgerReadHandle:
    """ReadHandle: a closed ledger, or a look at an open one (LAC as read at open time)."""

    def __init__(self, client: BookKeeperClient, ledger_id: int, metadata: LedgerMetadata,
                 lac: int, length: int) -> None:
        self._client = client
        self._ledger_id = ledger_id
        self._metadata = metadata
        self._lac = lac
        self._length = length

    @property
    def ledger_id(self) -> int:
        return self._ledger_id

    @property
    def metadata(self) -> LedgerMetadata:
        return self._metadata

    @property
    def last_add_confirmed(self) -> int:
        return self._lac

    @property
    def length(self) -> int:
        return self._length

    @property
    def is_closed(self) -> bool:
        return self._metadata.state is LedgerState.CLOSED

    async def read_entries(self, first: int, last: int) -> list[bytes]:
        if last > self._lac and not self.is_closed and first <= last:
            await self.refresh()  # an open ledger grows: ask the bookies again
        return await read_confirmed_where_stored(self._client, self._metadata, self._ledger_id, self._lac,
                                                 first, last, self._adopt)

    def _adopt(self, metadata: LedgerMetadata, version: int) -> None:
        self._metadata = metadata

    async def refresh(self) -> None:
        """Catch up with a ledger still being written (by another process): its metadata (it
        may have been sealed, or changed ensemble) and the LAC its bookies report."""
        metadata, _ = await self._client.read_metadata(self._ledger_id)
        self._metadata = metadata
        if metadata.state is LedgerState.CLOSED:
            self._lac, self._length = metadata.last_entry_id, metadata.length
            return
        lac, length = await read_last_confirmed(self._client, metadata, self._ledger_id)
        if lac > self._lac:
            self._lac, self._length = lac, length


class LocalWriterView:
    """ReadHandle of a ledger this client is writing: its LAC is the writer's, live."""

    def __init__(self, writer: "LedgerWriteHandle") -> None:
        self._writer = writer

    @property
    def ledger_id(self) -> int:
        return self._writer.ledger_id

    @property
    def last_add_confirmed(self) -> int:
        return self._writer.last_add_confirmed

    @property
    def length(self) -> int:
        return self._writer.length

    @property
    def is_closed(self) -> bool:
        return self._writer.is_closed

    async def read_entries(self, first: int, last: int) -> list[bytes]:
        return await self._writer.read_entries(first, last)
