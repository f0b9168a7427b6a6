"""Message deduplication: a message whose sequence id a producer already used is not stored twice.

As Pulsar's MessageDeduplication: per producer name, the highest sequence id pushed (appended,
maybe not yet durable) and the highest persisted. A SEND at or below the persisted one is a
duplicate (receipted, not stored); at or below the pushed one but above the persisted one its
fate is unknown yet (SEND_ERROR: the client reconnects and resends, and then it is a known
duplicate). Every `brokerDeduplicationEntriesInterval` entries, and when asked once the policy's
deduplicationSnapshotInterval has passed since the last one (snapshot_if_due), the persisted map
is written as a snapshot with the position it covers; recovering reads the snapshot and replays
the entries after it (and after the position of the deduplication cursor, which starts at the
end of the log when deduplication is turned on), reading producer name and sequence id from
each entry's metadata, so the state survives a restart and a kill -9.

Chunks of one message share its sequence id: only the last chunk is checked and recorded.
"""

from __future__ import annotations

import asyncio
import enum
import json
import logging
import time
from typing import TYPE_CHECKING

from managed_ledger.position import InitialPosition, Position
from protocol import pulsar_api_pb2 as pb
from protocol.entry import read_metadata

if TYPE_CHECKING:
    from managed_ledger.interfaces import ManagedCursor, ManagedLedger, MetadataStore

log = logging.getLogger(__name__)

REPLAY_BATCH = 100
#: A durable cursor that holds back trimming of entries the snapshot does not cover yet;
#: not a subscription (Pulsar's name, skipped when a topic lists its subscriptions).
DEDUPLICATION_CURSOR = "pulsar.dedup"


class DedupStatus(enum.Enum):
    NEW = "new"
    DUPLICATE = "duplicate"
    UNKNOWN = "unknown"  # pushed, not yet durable: the producer must retry


class MessageDeduplication:
    def __init__(self, ledger: "ManagedLedger", store: "MetadataStore", snapshot_path: str,
                 entries_interval: int, max_producers: int) -> None:
        self._ledger = ledger
        self._store = store
        self._snapshot_path = snapshot_path
        self._entries_interval = max(1, entries_interval)
        self._max_producers = max_producers
        self.pushed: dict[str, int] = {}
        self.persisted: dict[str, int] = {}
        self._since_snapshot = 0
        self._snapshot_position: Position | None = None
        self._last_snapshot_s = -float("inf")   # monotonic time of the last snapshot
        self._snapshots: set[asyncio.Task] = set()
        self._disabled = False
        self._cursor: "ManagedCursor | None" = None

    # -- start-up ---------------------------------------------------------------------------

    async def recover(self) -> None:
        """Load the snapshot, then replay every entry written after it (and after the cursor's
        position: a new cursor, deduplication just turned on, replays nothing)."""
        self._cursor = await self._ledger.open_cursor(DEDUPLICATION_CURSOR, InitialPosition.LATEST)
        stored = await self._store.get(self._snapshot_path)
        start = max(self._ledger.first_position(), self._ledger.next_position(self._cursor.mark_delete_position))
        if stored is not None:
            snapshot = json.loads(stored[0])
            self.persisted = {name: int(seq) for name, seq in snapshot["producers"].items()}
            self._snapshot_position = Position(*snapshot["position"])
            start = max(start, self._ledger.next_position(self._snapshot_position))
        replayed = await self._replay(start)
        self.pushed = dict(self.persisted)
        log.info("%s: deduplication recovered %d producers (%d entries replayed)",
                 self._ledger.name, len(self.persisted), replayed)

    async def _replay(self, start: Position) -> int:
        replayed = 0
        while True:
            entries = await self._ledger.read_entries(start, REPLAY_BATCH)
            if not entries:
                return replayed
            for entry in entries:
                metadata = read_metadata(entry.data)
                if is_last_chunk_or_whole(metadata):
                    sequence_id = max(metadata.sequence_id, metadata.highest_sequence_id)
                    self.persisted[metadata.producer_name] = sequence_id
            replayed += len(entries)
            self._since_snapshot += len(entries)
            start = self._ledger.next_position(entries[-1].position)

    # -- the SEND path ----------------------------------------------------------------------

    def check(self, producer_name: str, sequence_id: int, highest_sequence_id: int) -> DedupStatus:
        """Classify a SEND; a new one is recorded as pushed."""
        last_pushed = self.pushed.get(producer_name)
        if last_pushed is not None and sequence_id <= last_pushed:
            last_persisted = self.persisted.get(producer_name)
            if last_persisted is not None and sequence_id <= last_persisted:
                return DedupStatus.DUPLICATE
            return DedupStatus.UNKNOWN
        self.pushed[producer_name] = max(sequence_id, highest_sequence_id)
        return DedupStatus.NEW

    def record_persisted(self, producer_name: str, highest_sequence_id: int, position: Position) -> None:
        self.persisted[producer_name] = highest_sequence_id
        self._since_snapshot += 1
        if self._since_snapshot >= self._entries_interval:
            self._since_snapshot = 0
            self._snapshot_position = position
            self._write_snapshot_soon()

    def forget_pushed(self, producer_name: str) -> None:
        """An append failed: what was pushed but not persisted may be sent again."""
        if producer_name in self.persisted:
            self.pushed[producer_name] = self.persisted[producer_name]
        else:
            self.pushed.pop(producer_name, None)

    def last_sequence_id(self, producer_name: str) -> int:
        """What PRODUCER_SUCCESS announces, so a reconnecting producer resumes after it."""
        return self.pushed.get(producer_name, -1)

    # -- snapshots --------------------------------------------------------------------------

    def _write_snapshot_soon(self) -> None:
        task = asyncio.get_running_loop().create_task(self.take_snapshot())
        self._snapshots.add(task)
        task.add_done_callback(self._snapshots.discard)
        task.add_done_callback(_log_failure)

    async def snapshot_if_due(self, interval_s: int) -> None:
        """A snapshot by time, as Pulsar's: when interval_s (> 0) passed since the last one and
        entries were written since."""
        if interval_s <= 0 or time.monotonic() - self._last_snapshot_s < interval_s:
            return
        last = self._ledger.last_confirmed_entry
        if self._cursor is None or last.entry_id < 0 or last <= self._cursor.mark_delete_position:
            return
        self._snapshot_position = last
        await self.take_snapshot()

    async def take_snapshot(self) -> None:
        """Store the persisted map with the last position it covers."""
        position = self._snapshot_position or self._ledger.last_confirmed_entry
        if position.entry_id < 0 or self._disabled:
            return
        producers = dict(sorted(self.persisted.items())[: self._max_producers])
        body = json.dumps({"position": [position.ledger_id, position.entry_id], "producers": producers}).encode()
        await self._store.put(self._snapshot_path, body)
        self._last_snapshot_s = time.monotonic()
        if self._cursor is not None and position > self._cursor.mark_delete_position:
            self._cursor.mark_delete(position)  # lets storage trim what the snapshot covers

    async def close(self) -> None:
        self._snapshot_position = self._ledger.last_confirmed_entry
        await self.take_snapshot()

    async def disable(self) -> None:
        """Deduplication was turned off on the loaded topic: no more snapshots (the one being
        written finishes first), and its cursor and snapshot go (again if it failed before)."""
        self._disabled = True
        await asyncio.gather(*self._snapshots, return_exceptions=True)
        await self.remove(self._ledger, self._store, self._snapshot_path)

    @staticmethod
    async def remove(ledger: "ManagedLedger", store: "MetadataStore", snapshot_path: str) -> None:
        """Deduplication was turned off: drop its cursor and snapshot, as Pulsar does."""
        if DEDUPLICATION_CURSOR in ledger.cursors:
            await ledger.delete_cursor(DEDUPLICATION_CURSOR)
        if await store.get(snapshot_path) is not None:
            await store.delete(snapshot_path)


def is_last_chunk_or_whole(metadata: pb.MessageMetadata) -> bool:
    if not metadata.HasField("num_chunks_from_msg") or metadata.num_chunks_from_msg <= 1:
        return True
    return metadata.chunk_id == metadata.num_chunks_from_msg - 1


def _log_failure(task) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("deduplication snapshot failed: %r", task.exception())
