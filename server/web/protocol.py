"""One HTTP/1.1 connection as an asyncio protocol; h11 parses the requests and serialises the
answers, this module moves the bytes and keeps the rules of the connection:

- one request at a time: pipelined requests wait in h11's buffer, reading paused, until the
  answer before them is written and drained (a client that sends but never reads cannot make
  the broker buffer answers);
- a body is read when the handler asks for it (after "100 Continue" if the client expects
  one), up to MAX_BODY (413 past it); a body the handler left unread is read and dropped so
  the connection can carry on, unless the client still waits for a "100 Continue";
- a request the parser refuses is the client's fault: one INFO line and a 400, never an ERROR;
- an idle connection closes after KEEPALIVE_TIMEOUT.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable
from http import HTTPStatus

import h11

from .messages import (HTTPBadRequest, HTTPException, HTTPRequestEntityTooLarge, Headers, Request, Response,
                       StreamedResponse)

log = logging.getLogger(__name__)

#: The largest request body a handler may read: aiohttp's default, which the broker kept.
MAX_BODY = 1024 ** 2
#: Request target and each header line at most (aiohttp's limits), and a request head's
#: bytes buffered at most before it is complete.
MAX_LINE = 8190
MAX_HEAD = 64 * 1024
#: Unread body bytes dropped at most before a connection is closed instead: a client whose
#: upload was refused early should see the answer, not a reset.
DRAIN_LIMIT = 16 * MAX_BODY
#: An idle keep-alive connection (or one whose request head or dropped body never ends)
#: closes after this many seconds (aiohttp's keep-alive value).
KEEPALIVE_TIMEOUT = 75.0

RequestHandler = Callable[[Request], Awaitable[Response]]


class HttpConnection(asyncio.Protocol):
    """Serves its requests with `handle`; registered in `connections` while open."""

    def __init__(self, handle: RequestHandler, connections: set[HttpConnection]) -> None:
        self._handle = handle
        self._connections = connections
        self._h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)
        self._transport: asyncio.Transport | None = None
        self._task: asyncio.Task[None] | None = None
        self._readable = asyncio.Event()
        self._writable = asyncio.Event()
        self._writable.set()
        self._busy = False
        self._closing = False
        self._unanswered_continue = False   # the last answer went to a client waiting for 100

    # -- asyncio callbacks ------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._transport = transport
        self._connections.add(self)
        self._task = asyncio.get_running_loop().create_task(self._serve())

    def data_received(self, data: bytes) -> None:
        self._h11.receive_data(data)
        self._transport.pause_reading()   # until the request in hand needs more
        self._readable.set()

    def eof_received(self) -> bool:
        self._h11.receive_data(b"")
        self._readable.set()
        # Half-closed: the answer being made is still written. Plain TCP only: TLS has no
        # half-close (asyncio closes an SSL transport at EOF, and warns if asked to keep it).
        return self._transport.get_extra_info("sslcontext") is None

    def connection_lost(self, exc: Exception | None) -> None:
        self._connections.discard(self)
        self._h11.receive_data(b"")
        self._readable.set()
        self._writable.set()

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    # -- the server's side ------------------------------------------------------------------------
    def shut_down(self) -> asyncio.Task[None] | None:
        """Close now when idle, after the answer in the making otherwise; the serving task,
        still running when busy."""
        self._closing = True
        if not self._busy and self._task is not None:
            self._task.cancel()
        return self._task

    async def _serve(self) -> None:
        try:
            while not self._closing:
                async with asyncio.timeout(KEEPALIVE_TIMEOUT):
                    event = await self._next_event()
                if type(event) is not h11.Request:   # ConnectionClosed: the client is done
                    return
                self._busy = True
                await self._answer(event)
                self._busy = False
                if not await self._next_cycle():
                    return
        except TimeoutError:
            pass
        except h11.RemoteProtocolError as exc:
            self._refuse(str(exc))
        except h11.LocalProtocolError as exc:   # an answer h11 will not send (a header with a newline)
            log.warning("HTTP answer to %s not sent: %s", self._peer(), exc)
        except Exception:  # noqa: BLE001 - the connection ends, the server serves on
            log.exception("HTTP connection from %s failed", self._peer())
        finally:
            self._transport.close()

    async def _next_event(self) -> h11.Event | type[h11.NEED_DATA] | type[h11.PAUSED]:
        while (event := self._h11.next_event()) is h11.NEED_DATA:
            self._readable.clear()
            self._transport.resume_reading()
            await self._readable.wait()
        return event

    async def _answer(self, head: h11.Request) -> None:
        complaint = _oversized(head)
        if complaint:
            raise h11.RemoteProtocolError(complaint)
        headers = Headers((name.decode("latin-1"), value.decode("utf-8", "surrogateescape"))
                          for name, value in head.headers)
        length = headers.get("Content-Length")   # digits: h11 checked
        request = Request(head.method.decode("ascii"), head.target.decode("utf-8", "surrogateescape"),
                          headers, self._transport, functools.partial(self._read_body, int(length) if length else None))
        try:
            response = await self._handle(request)
        except HTTPException as exc:
            response = exc.response()
        except Exception:  # noqa: BLE001 - a handler's bug is a 500, and logged
            log.exception("HTTP %s %s failed", request.method, request.path)
            response = HTTPException().response()
        self._unanswered_continue = self._h11.they_are_waiting_for_100_continue
        head_only = request.method == "HEAD"
        if isinstance(response, StreamedResponse):
            await self._stream(response, head_only)
        else:
            self._write(response, head_only)
        await self._writable.wait()

    async def _read_body(self, length: int | None) -> bytes:
        """The body of the request in hand; a declared `length` past MAX_BODY is refused unread."""
        if length is not None and length > MAX_BODY:
            raise HTTPRequestEntityTooLarge()
        if self._h11.they_are_waiting_for_100_continue:
            self._transport.write(self._h11.send(h11.InformationalResponse(status_code=100, headers=[])))
        chunks, size = [], 0
        try:
            while type(event := await self._next_event()) is h11.Data:
                size += len(event.data)
                if size > MAX_BODY:
                    raise HTTPRequestEntityTooLarge()
                chunks.append(event.data)
        except h11.RemoteProtocolError as exc:
            log.info("bad HTTP request body from %s: %s", self._peer(), exc)
            raise HTTPBadRequest() from None
        return b"".join(chunks)

    async def _next_cycle(self) -> bool:
        """Ready for the connection's next request; False when it must close instead."""
        if self._h11.their_state is h11.SEND_BODY:
            if self._unanswered_continue:
                return False   # the client may or may not send the body: the stream is lost
            dropped = 0
            async with asyncio.timeout(KEEPALIVE_TIMEOUT):
                while type(event := await self._next_event()) is h11.Data:
                    dropped += len(event.data)
                    if dropped > DRAIN_LIMIT:
                        return False
        if self._h11.our_state is not h11.DONE or self._h11.their_state is not h11.DONE:
            return False
        self._h11.start_next_cycle()
        return True

    def _write(self, response: Response, head_only: bool) -> None:
        data = self._head(response, length=len(response.body))
        if response.body and not head_only:
            data += self._h11.send(h11.Data(data=response.body))
        data += self._h11.send(h11.EndOfMessage())
        if not self._transport.is_closing():
            self._transport.write(data)

    async def _stream(self, response: StreamedResponse, head_only: bool) -> None:
        """The head, then each chunk once the one before is taken; a client gone mid-way ends
        the answer (and the connection)."""
        chunks = response.chunks
        try:
            if self._transport.is_closing():
                return
            self._transport.write(self._head(response, length=None))
            if not head_only:
                async for chunk in chunks:
                    await self._writable.wait()
                    if self._transport.is_closing():
                        return
                    if chunk:   # h11 frames it; the chunk itself is not copied
                        self._transport.writelines(self._h11.send_with_data_passthrough(h11.Data(data=chunk)))
            self._transport.write(self._h11.send(h11.EndOfMessage()))
        finally:
            await chunks.aclose()

    def _head(self, response: Response, length: int | None) -> bytes:
        """The status line and headers; without a length, h11 sends the body chunked."""
        headers = [(name.encode("ascii"), value.encode("utf-8")) for name, value in response.headers.items()]
        if length is not None and response.status >= 200 and response.status not in (204, 304):
            headers.append((b"Content-Length", str(length).encode()))
        headers.append((b"Date", _http_date().encode()))
        return self._h11.send(h11.Response(status_code=response.status, headers=headers,
                                           reason=_reason(response.status)))

    def _refuse(self, complaint: str) -> None:
        """A request h11 or the limits refuse: logged at INFO, answered 400 where still possible."""
        log.info("bad HTTP request from %s (400): %s", self._peer(), complaint[:200])
        if self._h11.our_state in (h11.IDLE, h11.SEND_RESPONSE) and not self._transport.is_closing():
            self._write(Response(status=400, text=f"400: Bad Request ({complaint[:200]})"), head_only=False)

    def _peer(self) -> str:
        peer = self._transport.get_extra_info("peername") if self._transport else None
        return f"{peer[0]}:{peer[1]}" if peer else "?"


def _oversized(head: h11.Request) -> str | None:
    if len(head.target) > MAX_LINE:
        return f"request target longer than {MAX_LINE} bytes"
    for name, value in head.headers:
        if len(name) + len(value) + 2 > MAX_LINE:
            return f"header {name[:40].decode('latin-1')} longer than {MAX_LINE} bytes"
    return None


def _reason(status: int) -> bytes:
    try:
        return HTTPStatus(status).phrase.encode()
    except ValueError:
        return b""


_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def _http_date() -> str:
    """Now as HTTP's Date header writes it (RFC 9110 IMF-fixdate), whatever the locale."""
    t = time.gmtime()
    return (f"{_DAYS[t.tm_wday]}, {t.tm_mday:02d} {_MONTHS[t.tm_mon - 1]} {t.tm_year} "
            f"{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d} GMT")
