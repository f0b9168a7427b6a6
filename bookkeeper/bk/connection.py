"""One TCP connection to one bookie, and the pool of them a client keeps.

An asyncio Protocol: requests queue their buffers (adds as [frame header, entry header +
digest, payload], the payload not copied) and one writelines per loop iteration sends every
request made in it (one syscall for many adds instead of one each); replies are sliced out of
the read buffer whole and matched to their request on (txnId, operation). Every request has a
deadline; a sweep fails the late ones with BookieUnavailableError, as does a lost connection
(for everything in flight on it). The pool reconnects on the next request after a failure.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from typing import Callable

from ..errors import BookieUnavailableError
from .codec import (ADD_ENTRY, LAST_ADD_CONFIRMED, READ_ENTRY, READ_LAC, WRITE_LAC, Response,
                    decode_response, encode_add, encode_read, encode_read_lac, encode_write_lac,
                    split_frames)

logger = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 5.0


class BookieConnection(asyncio.Protocol):
    def __init__(self, bookie_id: str, timeout_s: float) -> None:
        self.bookie_id = bookie_id
        self._timeout_s = timeout_s
        self._transport: asyncio.Transport | None = None
        self._buffer = bytearray()
        self._pending: dict[tuple[int, int], tuple[asyncio.Future[Response], float]] = {}
        self._txn = itertools.count(1)
        self._sweeper: asyncio.TimerHandle | None = None
        self._outgoing: list[bytes] = []
        self.closed = False

    # ---- asyncio.Protocol ---------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]
        self._schedule_sweep()

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        frames, used = split_frames(self._buffer)
        if not frames:
            return
        responses = []
        try:
            responses = [decode_response(frame) for frame in frames]
        except (ValueError, IndexError) as exc:
            logger.error("bookie %s sent an unreadable reply: %s", self.bookie_id, exc)
            self._fail_all(BookieUnavailableError(f"bookie {self.bookie_id}: bad reply"))
            if self._transport is not None:
                self._transport.close()
            return
        finally:
            for frame in frames:
                frame.release()
        del self._buffer[:used]
        for response in responses:
            found = self._pending.pop((response.txn_id, response.operation), None)
            if found is not None and not found[0].done():
                found[0].set_result(response)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self._sweeper is not None:
            self._sweeper.cancel()
        self._fail_all(BookieUnavailableError(f"bookie {self.bookie_id}: connection lost"))

    # ---- requests -------------------------------------------------------------------------

    def add(self, ledger_id: int, entry_id: int, key: bytes, body: list[bytes],
            recovery: bool = False) -> asyncio.Future[Response]:
        txn = next(self._txn)
        future = self._register(txn, ADD_ENTRY)
        if not future.done():
            self._queue(encode_add(txn, ledger_id, entry_id, key, body, recovery))
        return future

    def read(self, ledger_id: int, entry_id: int, key: bytes | None = None,
             fence: bool = False) -> asyncio.Future[Response]:
        return self._request(READ_ENTRY, lambda txn: encode_read(txn, ledger_id, entry_id, key, fence))

    def read_last(self, ledger_id: int, key: bytes | None = None,
                  fence: bool = False) -> asyncio.Future[Response]:
        return self.read(ledger_id, LAST_ADD_CONFIRMED, key, fence)

    def write_lac(self, ledger_id: int, lac: int, key: bytes, body: bytes) -> asyncio.Future[Response]:
        return self._request(WRITE_LAC, lambda txn: encode_write_lac(txn, ledger_id, lac, key, body))

    def read_lac(self, ledger_id: int) -> asyncio.Future[Response]:
        return self._request(READ_LAC, lambda txn: encode_read_lac(txn, ledger_id))

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()

    # ---- internals ----------------------------------------------------------------------

    def _request(self, operation: int, encode: Callable[[int], bytes]) -> asyncio.Future[Response]:
        """A one-buffer request (all but adds) under a new txnId."""
        txn = next(self._txn)
        future = self._register(txn, operation)
        if not future.done():
            self._queue([encode(txn)])
        return future

    def _queue(self, buffers: list[bytes]) -> None:
        if not self._outgoing:
            asyncio.get_running_loop().call_soon(self._flush)
        self._outgoing.extend(buffers)

    def _flush(self) -> None:
        outgoing, self._outgoing = self._outgoing, []
        if self._transport is not None and not self._transport.is_closing():
            self._transport.writelines(outgoing)

    def _register(self, txn: int, operation: int) -> asyncio.Future[Response]:
        future: asyncio.Future[Response] = asyncio.get_running_loop().create_future()
        if self.closed or self._transport is None or self._transport.is_closing():
            future.set_exception(BookieUnavailableError(f"bookie {self.bookie_id}: not connected"))
        else:
            self._pending[(txn, operation)] = (future, time.monotonic() + self._timeout_s)
        return future

    def _fail_all(self, error: BaseException) -> None:
        pending, self._pending = self._pending, {}
        for future, _ in pending.values():
            if not future.done():
                future.set_exception(error)

    def _schedule_sweep(self) -> None:
        self._sweeper = asyncio.get_running_loop().call_later(
            min(1.0, self._timeout_s / 2), self._sweep)

    def _sweep(self) -> None:
        now = time.monotonic()
        late = [key for key, (_, deadline) in self._pending.items() if deadline < now]
        for key in late:
            future, _ = self._pending.pop(key)
            if not future.done():
                future.set_exception(BookieUnavailableError(
                    f"bookie {self.bookie_id}: no reply in {self._timeout_s} s"))
        if not self.closed:
            self._schedule_sweep()


class BookiePool:
    """One connection per bookie id ("host:port"), made on first use, remade after a loss."""

    def __init__(self, timeout_s: float = 10.0) -> None:
        self._timeout_s = timeout_s
        self._connections: dict[str, BookieConnection] = {}
        self._connecting: dict[str, asyncio.Task[BookieConnection]] = {}

    async def get(self, bookie_id: str) -> BookieConnection:
        connection = self._connections.get(bookie_id)
        if connection is not None and not connection.closed:
            return connection
        task = self._connecting.get(bookie_id)
        if task is None:
            task = asyncio.get_running_loop().create_task(self._connect(bookie_id))
            self._connecting[bookie_id] = task
        try:
            return await asyncio.shield(task)
        finally:
            if task.done() and self._connecting.get(bookie_id) is task:
                del self._connecting[bookie_id]

    def connected(self, bookie_id: str) -> BookieConnection | None:
        """The live connection, if there is one (no waiting)."""
        connection = self._connections.get(bookie_id)
        return connection if connection is not None and not connection.closed else None

    async def _connect(self, bookie_id: str) -> BookieConnection:
        host, _, port = bookie_id.rpartition(":")
        loop = asyncio.get_running_loop()
        try:
            _, connection = await asyncio.wait_for(
                loop.create_connection(lambda: BookieConnection(bookie_id, self._timeout_s),
                                       host, int(port)), CONNECT_TIMEOUT_S)
        except (OSError, asyncio.TimeoutError) as exc:
            raise BookieUnavailableError(f"bookie {bookie_id}: cannot connect: {exc}") from None
        self._connections[bookie_id] = connection
        return connection

    async def close(self) -> None:
        for task in self._connecting.values():
            task.cancel()
        for connection in self._connections.values():
            connection.close()
        self._connections.clear()
