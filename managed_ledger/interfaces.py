"""The door from server/ into storage: what a topic and a subscription may ask of a managed ledger.

server/ codes against these Protocols only; managed_ledger/ provides the implementations.
Every coroutine runs on the broker's event loop; none of them blocks it (disk work happens on
storage threads and completes loop futures).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, Protocol

from .config import PersistencePolicy
from .errors import NonRecoverableEntryError
from .latency import LatencyHistogram
from .lost_entries import LostEntryCounts
from .position import Entry, InitialPosition, Position
from .retention import RetentionPolicy

if TYPE_CHECKING:
    from .compacted_view import CompactedView


class EntriesListener(Protocol):
    """Who read a cursor to the end (read_entries_or_notify), to be told once when to read
    again: a listener waits without a parked task (some 1.5 KB a subscription)."""

    def entries_available(self, more: bool) -> None:
        """more: an add landed or the read position moved; False: the wait was cancelled
        (cancel_pending_read) or the cursor closed."""


class ManagedCursor(Protocol):
    """A subscription's place in a ledger: mark-delete, read position and acknowledged holes."""

    name: str
    durable: bool
    #: entries acknowledged unread because they cannot be read (autoSkipNonRecoverableData)
    skipped_lost_entries: int
    #: where an entry that cannot be read holds the cursor; None while its reads go on
    held_at_lost: Position | None

    @property
    def mark_delete_position(self) -> Position:
        """Everything at or before this position is acknowledged."""

    @property
    def read_position(self) -> Position:
        """The next position a read returns (entries already deleted are skipped)."""

    async def read_entries_or_wait(self, max_entries: int) -> list[Entry]:
        """Up to max_entries not-yet-deleted entries from the read position, waiting until at
        least one exists; advances the read position. Cancelled by cancel_pending_read()
        (then returns [])."""

    async def read_entries_or_notify(self, max_entries: int, listener: EntriesListener) -> list[Entry] | None:
        """As read_entries_or_wait, but at the end of the log it returns None at once and
        calls listener.entries_available later, once."""

    def cancel_pending_read(self) -> None: ...

    def set_active(self) -> None:
        """Consumers read through this cursor: the ledger caches adds while it keeps up."""

    def set_inactive(self) -> None:
        """No consumer reads through it any more."""

    @property
    def cursor_ledger(self) -> int:
        """The ledger holding its state on a BookKeeper cluster; -1 without one."""

    def has_more_entries(self) -> bool:
        """True when the read position is at or before the last confirmed entry."""

    def seek(self, read_position: Position) -> None:
        """Move the read position (e.g. to redeliver); acknowledgement state is unchanged."""

    def rewind(self) -> None:
        """Read position back to the first entry after mark-delete."""

    def mark_delete(self, position: Position) -> None:
        """Cumulative acknowledgement up to and including position. Persisted in batches."""

    def delete(self, positions: Iterable[Position]) -> None:
        """Individual acknowledgements; a contiguous acked prefix moves mark-delete."""

    def is_deleted(self, position: Position) -> bool: ...

    def skip_lost(self, position: Position, error: NonRecoverableEntryError) -> Position:
        """An entry no copy of which can be read (for LedgerMissingError: its ledger's entries
        from there): acknowledged, and the position after it returned, with
        autoSkipNonRecoverableData; else held_at_lost is set and error raised."""

    def ack_batch_indexes(self, position: Position, ack_set: list[int]) -> list[int] | None:
        """Partial batch acknowledgement: bits SET in ack_set are still unacknowledged. It is
        ANDed with earlier partial acks (an index stays unacknowledged only while every ack
        says so) and persisted. Returns the indexes still unacknowledged, or None once the
        whole batch is acknowledged (the entry is then deleted) or the entry is gone."""

    def batch_ack_set(self, position: Position) -> list[int] | None: ...

    async def reset(self, position: Position) -> None:
        """Seek: mark-delete to just before position, forget acks after it, read from
        position. Returns once the new state is persisted."""

    def backlog(self) -> int:
        """Entries after mark-delete up to the last confirmed entry that are not deleted."""

    async def flush(self) -> None:
        """Persist pending acknowledgement state now."""


class ManagedLedger(Protocol):
    """A topic's log: a sequence of ledgers of entries, with named cursors."""

    name: str
    #: How long adds took to become durable, in Pulsar's storage write latency buckets.
    write_latency: LatencyHistogram
    #: Entries read (cache or disk), for the storage read rate.
    entries_read: int
    #: Entries its cursors found they cannot read, and those they skipped (lost_entries.py).
    lost_entries: LostEntryCounts

    @property
    def last_confirmed_entry(self) -> Position:
        """Last durable entry; (current ledger, -1) on a ledger that never held an entry."""

    @property
    def readable_end(self) -> Position:
        """The last entry cursors may read: the last confirmed one, or the read limit when
        that is short of it."""

    def set_read_limit(self, limit: Position | None) -> None:
        """Stop cursors' reads at limit (a topic's max-read position, before
        an open transaction's first entry); None: at the last confirmed entry. Waiting reads
        are woken when it moves."""

    @property
    def number_of_entries(self) -> int: ...

    @property
    def terminated(self) -> bool:
        """True once terminate() began: appends fail with ManagedLedgerTerminatedError."""

    async def terminate(self) -> Position:
        """End the ledger for good after the adds in flight; returns its last entry (the same
        one on every later call, and after a restart)."""

    @property
    def total_size(self) -> int: ...

    @property
    def cursors(self) -> Mapping[str, ManagedCursor]:
        """The durable cursors, including those recovered on open."""

    async def add_entry(self, data: bytes) -> Position:
        """Append one entry; resolves only once it is on disk (fsync)."""

    def append(self, data: bytes) -> "asyncio.Future[Position]":
        """add_entry without a coroutine (no task per entry on the SEND path): the future
        resolves once the entry is on disk. Appends complete in call order."""

    async def send_last_confirmed(self) -> None:
        """Show every entry added so far to read-only views in other processes now (see
        ReadOnlyLedger); otherwise they see the last one only once a later add confirms it."""

    def append_run(self, entries: list[bytes],
                   on_done: Callable[[Position | None, BaseException | None], None]) -> None:
        """append without a future, for consecutive entries stored in one ledger:
        on_done(first position, None) once all of them are on disk (the others follow it
        entry by entry), or on_done(None, error); runs complete in append order (the SEND
        path's one call per run of SENDs read at once)."""

    async def read_entry(self, position: Position) -> Entry | None: ...

    async def read_entries(self, start: Position, max_entries: int) -> list[Entry]:
        """Entries from start (inclusive) onwards, crossing ledgers; [] beyond the end."""

    def first_position(self) -> Position:
        """The first readable position (after the last confirmed entry when empty)."""

    def next_position(self, position: Position) -> Position: ...

    def size_after(self, position: Position) -> int:
        """Estimated bytes stored after position (a cursor's backlog size from its mark-delete)."""

    def position_keeping(self, max_bytes: int) -> Position:
        """The earliest position with at most max_bytes (estimated) stored after it."""

    async def open_cursor(self, name: str, initial_position: InitialPosition) -> ManagedCursor:
        """Open (creating if needed) a durable cursor."""

    def new_non_durable_cursor(self, name: str, start: Position) -> ManagedCursor:
        """An in-memory cursor whose first read returns start (inclusive); EARLIEST and
        LATEST sentinels are accepted."""

    async def delete_cursor(self, name: str) -> None: ...

    async def find_newest_matching(self, condition: Callable[[Entry], bool]) -> Position | None:
        """Last position whose entry satisfies condition, where condition holds for a prefix
        of the log (binary search). None when the first entry already fails it."""

    def ledgers_info(self) -> list[tuple[int, int, int]]:
        """(ledger_id, entries, size) per ledger, oldest first."""

    async def compacted_view(self) -> CompactedView | None:
        """The topic's compacted view (latest entry per key up to a horizon), if any."""

    async def install_compacted(self, entries: list[Entry], horizon: Position) -> CompactedView:
        """Store a new compacted view durably and make it the current one."""

    def set_persistence(self, policy: PersistencePolicy) -> None:
        """Replicate the next ledger, and persist the cursors, as the policy says."""

    def set_retention(self, policy: RetentionPolicy) -> None:
        """Apply a retention policy (ledgers it no longer keeps are deleted in the background)."""

    async def trim(self) -> None:
        """Delete the ledgers that every durable cursor consumed and retention lets go, now."""

    async def close(self) -> None: ...


class ReadOnlyLedger(Protocol):
    """A managed ledger another broker writes, as far as it has confirmed its entries
    (read_only.py): never fenced by reading it."""

    name: str

    async def refresh(self) -> bool:
        """Catch up with the writer; False once the managed ledger does not exist."""

    @property
    def last_confirmed_entry(self) -> Position:
        """As of the last refresh()."""

    def first_position(self) -> Position: ...

    def next_position(self, position: Position) -> Position: ...

    async def read_entries(self, start: Position, max_entries: int) -> list[Entry]: ...


class MetadataStore(Protocol):
    """Versioned key/value tree (paths like /a/b): local by default, ZooKeeper in a cluster."""

    async def get(self, path: str) -> tuple[bytes, int] | None: ...

    async def put(self, path: str, value: bytes, expected_version: int | None = None) -> int:
        """Store value; -1 as expected_version means "must not exist". Returns the new version."""

    async def delete(self, path: str, expected_version: int | None = None) -> None: ...

    async def children(self, path: str, starting: str = "") -> list[str]:
        """The names below path (only those starting with `starting`), sorted."""


class ManagedLedgerFactory(Protocol):
    """Opens managed ledgers by name over one storage engine."""

    metadata_store: MetadataStore
    #: clusters, tenants, namespace policies, partitioned topics (see open_configuration_store);
    #: the metadata store itself unless configurationMetadataStoreUrl names another
    configuration_store: MetadataStore

    async def open_ledger(self, name: str, persistence: PersistencePolicy | None = None) -> ManagedLedger:
        """Open or create; the same instance while it stays open (a new instance writes as
        `persistence` says, default: the managedLedgerDefault* keys)."""

    async def open_read_only(self, name: str) -> ReadOnlyLedger | None:
        """A read-only view of a managed ledger, caught up now; None when it does not exist."""

    async def ledger_exists(self, name: str) -> bool: ...

    async def list_ledgers(self, starting: str = "") -> list[str]:
        """The managed ledgers' names (only those starting with `starting`), sorted."""

    async def delete_ledger(self, name: str) -> None: ...

    async def close(self) -> None: ...

