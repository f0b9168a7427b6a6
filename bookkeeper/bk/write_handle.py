"""LedgerWriteHandle: the single writer of a ledger on remote bookies (WriteHandle).

Each add is sent at once (many in flight) to its write set: Qw bookies of the current
ensemble, striped by entry id. It is acknowledged after Qa of them answered EOK, and adds are
acknowledged in entry order only: the LAC is the highest entry that, with all before it, has
its ack quorum. Every body carries the LAC at send time (readers piggyback on it).

When a bookie fails (no connection, timeout, error status other than EFENCED), the ensemble
changes: the failed bookie is replaced by a writable one outside the ensemble, a new segment
starting at LAC + 1 is written to the ledger metadata (CAS), and the unacknowledged adds are
sent to the newcomer. Acknowledgements wait while that happens, as in BookKeeper's
LedgerHandle. No replacement: the pending adds fail with NotEnoughBookiesError. EFENCED means
a recovery took the ledger over: every pending add fails with LedgerFencedError.

Explicit LAC (client explicit_lac_interval_s > 0): the LAC reaches bookies only on the next add,
so a reader elsewhere never sees the last entry before the writer goes idle. Once no add was
sent for that long and the LAC passed the one the last add carried, it is sent alone
(WRITE_LAC) to the last ensemble, best effort, as BookKeeper's ExplicitLacFlushPolicy does.
write_lac() sends it at once, for a writer whose every entry must be visible elsewhere.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from typing import TYPE_CHECKING

from bookkeeper.interfaces import AddCallback
from log_limits.repeats import RepeatLimitedLog

from ..bookie import future_callback
from ..errors import (BookieRequestError, BookieUnavailableError, BookKeeperError,
                      LedgerClosedError, LedgerFencedError, MetadataBadVersionError)
from .codec import Response, Status, package_entry, package_lac
from .ledger_metadata import LedgerMetadata, LedgerState
from .placement import write_set
from .reads import read_confirmed_where_stored

if TYPE_CHECKING:
    from .client import BookKeeperClient

logger = logging.getLogger(__name__)
_repeats = RepeatLimitedLog(logger)   # a lost bookie fails every ledger on it: one line per interval


class _PendingAdd:
    __slots__ = ("entry_id", "payload", "length", "on_done", "acked", "sent")

    def __init__(self, entry_id: int, payload: bytes, length: int, on_done: AddCallback) -> None:
        self.entry_id = entry_id
        self.payload = payload
        self.length = length
        self.on_done = on_done
        self.acked: set[str] = set()
        self.sent: set[str] = set()


def _part_of_run(entry_id: int, error: BaseException | None) -> None:
    """The callback of a run's adds before its last: the last one reports for the run."""


class LedgerWriteHandle:
    def __init__(self, client: BookKeeperClient, ledger_id: int, metadata: LedgerMetadata,
                 version: int) -> None:
        self._client = client
        self._ledger_id = ledger_id
        self._metadata = metadata
        self._version = version
        self._lac = -1
        self._confirmed_length = 0
        self._next_entry_id = 0
        self._pushed_length = 0
        self._pending: collections.deque[_PendingAdd] = collections.deque()
        self._failed: set[str] = set()
        self._changing = False
        self._error: BaseException | None = None
        self._closing = False
        self._closed = False
        self._drained = asyncio.Event()
        self._drained.set()
        self._sent_lac = -1   # the highest LAC bookies were sent (on an add, or alone)
        self._last_send = 0.0
        self._lac_timer: asyncio.TimerHandle | None = None
        #: ensemble changes done (for tests and metrics)
        self.ensemble_changes = 0

    # ---- ReadHandle ---------------------------------------------------------------------------

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
        return self._confirmed_length

    @property
    def is_closed(self) -> bool:
        return self._closed

    async def read_entries(self, first: int, last: int) -> list[bytes]:
        return await read_confirmed_where_stored(self._client, self._metadata, self._ledger_id, self._lac,
                                                 first, last, self._adopt)

    def _adopt(self, metadata: LedgerMetadata, version: int) -> None:
        """AutoRecovery re-replicated a sealed segment: write on from its metadata, unless an
        ensemble change of ours is writing it, or the ledger was sealed (recovered) meanwhile."""
        if not self._changing and version > self._version and metadata.state is LedgerState.OPEN:
            self._metadata, self._version = metadata, version

    # ---- WriteHandle --------------------------------------------------------------------------

    def add_entry(self, data: bytes) -> asyncio.Future[int]:
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self.add_entries_with_callback([data], future_callback(future))
        return future

    def add_entries_with_callback(self, entries: list[bytes], on_done: AddCallback) -> None:
        """Each entry is an add of its own on the wire; the run's callback rides on its last,
        which completes after the others (in entry order) and fails with them."""
        if self._closing:
            raise LedgerClosedError(f"ledger {self._ledger_id} is closed")
        if self._error is not None:
            raise self._error
        last = len(entries) - 1
        for index, data in enumerate(entries):
            payload = bytes(data)
            self._pushed_length += len(payload)
            op = _PendingAdd(self._next_entry_id, payload, self._pushed_length, on_done if index == last else _part_of_run)
            self._next_entry_id += 1
            self._pending.append(op)
            self._drained.clear()
            if not self._changing:
                self._send(op)

    async def close(self) -> None:
        """Wait for the adds in flight, then seal the ledger at its LAC (CAS)."""
        if self._closing:
            await self._drained.wait()
            return
        self._closing = True
        await self._drained.wait()
        if self._lac_timer is not None:
            self._lac_timer.cancel()
        if isinstance(self._error, LedgerFencedError):
            self._closed = True
            raise self._error
        while True:
            sealed = self._metadata.closed(self._lac, self._confirmed_length)
            try:
                self._version = await self._client.write_metadata(self._ledger_id, sealed,
                                                                   self._version)
                break
            except MetadataBadVersionError:
                current, version = await self._client.read_metadata(self._ledger_id)
                if current.state is not LedgerState.OPEN:
                    self._closed = True
                    raise LedgerFencedError(f"ledger {self._ledger_id} was recovered by another "
                                            f"opener") from None
                self._metadata, self._version = current, version
        self._metadata = sealed
        self._closed = True
        logger.debug("closed ledger %d at entry %d", self._ledger_id, self._lac)

    # ---- sending ------------------------------------------------------------------------------

    def _write_set(self, entry_id: int) -> list[str]:
        ensemble = self._metadata.ensemble_at(entry_id)
        return [ensemble[i] for i in write_set(entry_id, self._metadata.ensemble_size,
                                                self._metadata.write_quorum)]

    def _send(self, op: _PendingAdd) -> None:
        targets = [b for b in self._write_set(op.entry_id) if b not in op.sent]
        if not targets:
            return
        body = package_entry(self._ledger_id, op.entry_id, self._lac, op.length, op.payload)
        if self._client.explicit_lac_interval_s:   # off by default: nothing more per add
            self._sent_lac = max(self._sent_lac, self._lac)
            self._last_send = asyncio.get_running_loop().time()
        for bookie in targets:
            op.sent.add(bookie)
            connection = self._client.pool.connected(bookie)
            if connection is not None:
                reply = connection.add(self._ledger_id, op.entry_id, self._client.master_key, body)
                reply.add_done_callback(lambda r, b=bookie, o=op: self._on_reply(b, o, r))
            else:
                asyncio.get_running_loop().create_task(self._connect_and_send(bookie, op, body))

    async def _connect_and_send(self, bookie: str, op: _PendingAdd, body: list[bytes]) -> None:
        try:
            connection = await self._client.pool.get(bookie)
        except BookKeeperError as exc:
            self._on_failure(bookie, op, exc)
            return
        reply = connection.add(self._ledger_id, op.entry_id, self._client.master_key, body)
        reply.add_done_callback(lambda r: self._on_reply(bookie, op, r))

    def _on_reply(self, bookie: str, op: _PendingAdd, reply: asyncio.Future[Response]) -> None:
        if reply.cancelled():
            return
        error = reply.exception()
        if error is not None:
            self._on_failure(bookie, op, error)
            return
        status = reply.result().status
        if op.on_done is None or bookie not in op.sent:
            return  # done already, or sent to a bookie replaced since
        if status == Status.EOK:
            op.acked.add(bookie)
            if len(op.acked) >= self._metadata.ack_quorum:
                self._complete_in_order()
        elif status == Status.EFENCED:
            self._fail(LedgerFencedError(f"ledger {self._ledger_id} was fenced (recovered by "
                                         f"another opener)"))
        else:
            self._on_failure(bookie, op, BookieRequestError(
                f"add {self._ledger_id}/{op.entry_id} on {bookie}: {Status.of(status)!r}"))

    def _complete_in_order(self) -> None:
        if self._changing:
            return
        quorum = self._metadata.ack_quorum
        while self._pending and len(self._pending[0].acked) >= quorum:
            op = self._pending.popleft()
            self._lac = op.entry_id
            self._confirmed_length = op.length
            on_done, op.on_done = op.on_done, None
            on_done(op.entry_id, None)
        if not self._pending:
            self._drained.set()
        if self._client.explicit_lac_interval_s and self._lac_timer is None and self._lac > self._sent_lac:
            self._lac_timer = asyncio.get_running_loop().call_later(
                self._client.explicit_lac_interval_s, self._flush_lac)

    def _fail(self, error: BaseException) -> None:
        if self._error is None:
            self._error = error
            _repeats.warning(str(error), "ledger %d: %s", self._ledger_id, error)
        pending, self._pending = self._pending, collections.deque()
        for op in pending:
            on_done, op.on_done = op.on_done, None
            if on_done is not None:
                on_done(op.entry_id, error)
        self._drained.set()

    # ---- explicit LAC -------------------------------------------------------------------------

    def _flush_lac(self) -> None:
        self._lac_timer = None
        if self._closing or self._error is not None or self._lac <= self._sent_lac:
            return
        loop = asyncio.get_running_loop()
        idle_at = self._last_send + self._client.explicit_lac_interval_s
        if loop.time() < idle_at:   # adds went out since: wait until they stop
            self._lac_timer = loop.call_at(idle_at, self._flush_lac)
            return
        self._send_lac()

    async def write_lac(self) -> None:
        """WriteHandle.write_lac: returns once Qa bookies stored it (or every one answered).
        Sent even when an add or the idle flush carried it already: that one may still be on
        its way."""
        if self._closing or self._error is not None or self._lac < 0:
            return
        pending = set(self._send_lac())
        stored = 0
        while pending and stored < self._metadata.ack_quorum:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            stored += sum(1 for reply in done if not reply.cancelled() and reply.exception() is None
                          and reply.result().status == Status.EOK)

    def _send_lac(self) -> list[asyncio.Future[Response]]:
        self._sent_lac = self._lac
        body = package_lac(self._ledger_id, self._lac)
        replies = []
        for bookie in self._metadata.last_ensemble:
            connection = self._client.pool.connected(bookie)   # not connected now: skipped
            if connection is not None:
                reply = connection.write_lac(self._ledger_id, self._lac, self._client.master_key, body)
                reply.add_done_callback(lambda r, b=bookie: self._on_lac_reply(b, r))
                replies.append(reply)
        return replies

    def _on_lac_reply(self, bookie: str, reply: asyncio.Future[Response]) -> None:
        """Best effort: a reader falls back on the piggybacked LAC; a bad bookie shows in adds."""
        if not reply.cancelled() and (reply.exception() or reply.result().status != Status.EOK):
            logger.debug("ledger %d: explicit LAC to %s failed: %s", self._ledger_id, bookie,
                         reply.exception() or Status.of(reply.result().status))

    # ---- ensemble change ----------------------------------------------------------------------

    def _on_failure(self, bookie: str, op: _PendingAdd, error: BaseException) -> None:
        if op.on_done is None or bookie not in op.sent or self._error is not None:
            return
        _repeats.warning((bookie, type(error)), "ledger %d: bookie %s failed: %s", self._ledger_id, bookie, error)
        self._client.placement.quarantine(bookie)
        if bookie not in self._metadata.last_ensemble:
            return
        self._failed.add(bookie)
        if not self._changing:
            self._changing = True
            asyncio.get_running_loop().create_task(self._change_ensemble())

    async def _change_ensemble(self) -> None:
        try:
            while failed := self._failed & set(self._metadata.last_ensemble):
                ensemble = await self._client.placement.replacements(
                    self._metadata.last_ensemble, failed)
                changed = self._metadata.with_ensemble(self._lac + 1, ensemble)
                try:
                    self._version = await self._client.write_metadata(self._ledger_id, changed,
                                                                       self._version)
                except MetadataBadVersionError:
                    current, version = await self._client.read_metadata(self._ledger_id)
                    if current.state is not LedgerState.OPEN:
                        raise LedgerFencedError(f"ledger {self._ledger_id} was recovered by "
                                                f"another opener") from None
                    self._metadata, self._version = current, version
                    continue
                self._metadata = changed
                self._failed -= failed
                self.ensemble_changes += 1
                logger.info("ledger %d: new ensemble from entry %d: %s", self._ledger_id,
                            self._lac + 1, ", ".join(ensemble))
                for op in self._pending:
                    op.acked -= failed
                    op.sent -= failed
        except (BookKeeperError, BookieUnavailableError) as exc:
            self._changing = False
            self._fail(exc)
            return
        except Exception as exc:  # noqa: BLE001 - never leave adds hanging
            logger.exception("ledger %d: ensemble change failed", self._ledger_id)
            self._changing = False
            self._fail(BookKeeperError(f"ensemble change failed: {exc}"))
            return
        self._changing = False
        for op in list(self._pending):
            self._send(op)
        self._complete_in_order()
