"""The ledger API: what managed_ledger/ may ask of bookkeeper/, and nothing more.

Shaped after Apache BookKeeper's client (create / open with or without recovery / add / read /
close / delete) so that a second implementation can talk to a real BookKeeper cluster with
ensembles and quorums while managed_ledger/ stays unchanged.
"""

from __future__ import annotations

import asyncio
from typing import Callable, Protocol

#: (last entry id of the run, None) once all of it is durable, or (that id, error); called on
#: the event loop.
AddCallback = Callable[[int, BaseException | None], None]


class ReadHandle(Protocol):
    """A ledger opened for reading."""

    @property
    def ledger_id(self) -> int: ...

    @property
    def last_add_confirmed(self) -> int:
        """Last entry id readable from this ledger (-1 when it holds none)."""

    @property
    def length(self) -> int:
        """Bytes of entry data up to last_add_confirmed."""

    @property
    def is_closed(self) -> bool:
        """True once the ledger is sealed (its last entry is final)."""

    async def read_entries(self, first: int, last: int) -> list[bytes]:
        """Entries first..last inclusive, within 0..last_add_confirmed; or only those before
        the first entry that cannot be read (that entry's error when it is first)."""


class WriteHandle(ReadHandle, Protocol):
    """A ledger this process created and appends to; the only writer it will ever have."""

    def add_entry(self, data: bytes) -> asyncio.Future[int]:
        """Queue data as the next entry now (so call order is storage order); the future
        resolves to its entry id (contiguous from 0) once it is durable."""

    def add_entries_with_callback(self, entries: list[bytes], on_done: AddCallback) -> None:
        """add_entry for hot paths: a run of entries queued at once, no future, and on_done
        called once for the whole run, straight from the group completion (raises at once
        when the ledger refuses adds)."""

    async def write_lac(self) -> None:
        """Send the last-add-confirmed to the bookies now (an explicit LAC), so that readers in
        other processes see every entry confirmed so far: an open ledger's last entry is
        otherwise only confirmed to them by the next add. Best effort: never raises."""

    async def close(self) -> None:
        """Wait for queued adds, then seal the ledger with its last entry in the metadata."""


class LedgerClient(Protocol):
    """Creates, opens and deletes ledgers."""

    async def create_ledger(self, custom: dict[str, bytes] | None = None, ensemble_size: int | None = None,
                            write_quorum: int | None = None, ack_quorum: int | None = None) -> WriteHandle:
        """custom: who the ledger is for (managed_ledger/ledger_tags.py), kept in its metadata
        where other processes may read it. The ensemble and quorums (None: the client's
        defaults) place the ledger on a BookKeeper cluster; the embedded bookie keeps one copy."""

    async def open_ledger(self, ledger_id: int, recovery: bool = True) -> ReadHandle:
        """With recovery, an unsealed ledger is fenced (its writer's adds are refused from now
        on), its last durable entry found, and sealed there. Without, read what is there."""

    async def delete_ledger(self, ledger_id: int) -> None: ...

    async def close(self) -> None: ...
