"""Topic compaction: the latest message per key, served to read_compacted consumers and readers.

Like Pulsar's two-phase compactor: phase one reads the previous compacted view and the log
after its horizon up to the last entry now, noting for every key the position (and batch
index) of its latest message, or that its latest message is a tombstone (empty payload:
the key is deleted). Phase two goes over the same entries again and keeps each message that
is still its key's latest: whole entries as stored, batches with only some messages kept
re-packed with the same codec. Messages without a key are dropped, or kept in place with
topicCompactionRetainNullKey=true (Pulsar's default and option since 3.2). The result is a new compacted ledger (managed_ledger/
compacted_view.py); a durable "__compaction" cursor marks the horizon so retention keeps the
log after it until the next compaction.

Under transactions, it compacts up to the max-read position only, and leaves out what
consumers never get (markers, aborted transactions' messages: `hidden`).

Triggered on demand (Topic.compact(), for the admin API's PUT .../compaction) and by the
compaction monitor (server/policies/compaction_monitor.py). The decompression runs in a worker
thread, off the event loop, never on the SEND path.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from typing import AsyncIterator, Callable, Iterable

from managed_ledger.interfaces import ManagedLedger
from managed_ledger.position import Entry, InitialPosition, Position
from protocol import pulsar_api_pb2 as pb
from protocol.batch import Message, repack, unpack
from protocol.errors import ProtocolError
from server.errors import BrokerError

log = logging.getLogger(__name__)

COMPACTION_CURSOR = "__compaction"
_PAGE = 100
#: key -> (position, batch index) of its latest message, or None when that is a tombstone.
Latest = dict[str, "tuple[Position, int] | None"]


class CompactionStatus(enum.Enum):
    """Pulsar's LongRunningProcessStatus values."""

    NOT_RUN = "NOT_RUN"
    RUNNING = "RUNNING"
    SUCCESS = "SUCCESS"
    ERROR = "ERROR"


class CompactionInProgress(BrokerError):
    """A compaction of this topic is running already (the admin API answers 409)."""

    code = pb.NotAllowedError


class TopicCompaction:
    """One topic's compaction: at most one run at a time, and the outcome of the last one."""

    __slots__ = ("_ledger", "_retain_null_key", "_task", "last_error", "status")

    def __init__(self, ledger: ManagedLedger, retain_null_key: bool = False) -> None:
        self._ledger = ledger
        self._retain_null_key = retain_null_key
        self.status = CompactionStatus.NOT_RUN
        self.last_error = ""
        self._task: asyncio.Task | None = None

    def start(self, hidden: Callable[[Entry], bool] | None = None) -> asyncio.Task:
        """Compact in the background, leaving out what `hidden` names."""
        if self._task is not None and not self._task.done():
            raise CompactionInProgress("Compaction already in progress")
        self.status, self.last_error = CompactionStatus.RUNNING, ""
        self._task = asyncio.get_running_loop().create_task(self._run(hidden))
        return self._task

    def report(self) -> dict[str, str]:
        """What the admin API's GET .../compaction returns."""
        return {"status": self.status.value, "lastError": self.last_error}

    async def _run(self, hidden: Callable[[Entry], bool] | None) -> None:
        try:
            await compact(self._ledger, self._retain_null_key, hidden)
        except Exception as exc:
            log.exception("compacting %s failed", self._ledger.name)
            self.status, self.last_error = CompactionStatus.ERROR, str(exc)
        else:
            self.status = CompactionStatus.SUCCESS

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


async def compact(ledger: ManagedLedger, retain_null_key: bool = False,
                  hidden: Callable[[Entry], bool] | None = None) -> None:
    horizon = ledger.readable_end
    view = await ledger.compacted_view()
    if horizon.entry_id < 0 or (view is not None and view.horizon >= horizon):
        return
    cursor = await ledger.open_cursor(COMPACTION_CURSOR, InitialPosition.EARLIEST)
    previous = await view.read_all() if view is not None else []
    start = ledger.next_position(view.horizon) if view is not None else ledger.first_position()
    loop = asyncio.get_running_loop()
    latest: Latest = {}
    async for page in _pages(ledger, previous, start, horizon, hidden):
        await loop.run_in_executor(None, _note_latest, page, latest)
    kept: list[Entry] = []
    async for page in _pages(ledger, previous, start, horizon, hidden):
        kept.extend(await loop.run_in_executor(None, _keep_latest, page, latest, retain_null_key))
    await ledger.install_compacted(kept, horizon)
    cursor.mark_delete(horizon)
    await cursor.flush()
    log.info("compacted %s up to %s: %d entries kept for %d keys", ledger.name, horizon, len(kept),
             sum(1 for value in latest.values() if value is not None))


async def _pages(ledger: ManagedLedger, previous: list[Entry], start: Position, horizon: Position,
                 hidden: Callable[[Entry], bool] | None) -> AsyncIterator[list[Entry]]:
    for first in range(0, len(previous), _PAGE):
        yield previous[first:first + _PAGE]
    position = start
    while position <= horizon:
        entries = [e for e in await ledger.read_entries(position, _PAGE) if e.position <= horizon]
        if not entries:
            return
        yield entries if hidden is None else [e for e in entries if not hidden(e)]
        position = ledger.next_position(entries[-1].position)


def _messages(entry: Entry) -> list[Message]:
    try:
        return unpack(bytes(entry.data))
    except ProtocolError as exc:
        log.warning("compaction skips entry %s: %s", entry.position, exc)
        return []


def _note_latest(entries: Iterable[Entry], latest: Latest) -> None:
    for entry in entries:
        for message in _messages(entry):
            if message.key is not None:
                latest[message.key] = None if message.tombstone else (entry.position, message.batch_index)


def _keep_latest(entries: Iterable[Entry], latest: Latest, retain_null_key: bool) -> list[Entry]:
    kept = []
    for entry in entries:
        messages = _messages(entry)
        survivors = [m for m in messages if _survives(m, entry.position, latest, retain_null_key)]
        if not survivors:
            continue
        if len(survivors) == len(messages):
            kept.append(entry)
        else:
            kept.append(Entry(entry.position, repack(bytes(entry.data), survivors)))
    return kept


def _survives(message: Message, position: Position, latest: Latest, retain_null_key: bool) -> bool:
    if message.key is None:
        return retain_null_key
    return latest.get(message.key) == (position, message.batch_index)
