"""server.web against raw sockets over loopback: a real Application served by its own event loop
(uvloop, as the broker runs it, and asyncio's) in a thread, spoken to byte by byte."""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
import threading
import time

import pytest
import uvloop

from compat_tests.certificates import CertificateAuthority
from server import web
from server.web import protocol
from server.web.routing import Router

BIG = protocol.MAX_BODY + 1


async def hello(request: web.Request) -> web.Response:
    return web.Response(text="hello")


async def echo(request: web.Request) -> web.Response:
    return web.Response(body=await request.read())


async def item(request: web.Request) -> web.Response:
    return web.json_response({"id": request.match_info["id"], "query": request.query})


async def special(request: web.Request) -> web.Response:
    return web.json_response("special")


async def named(request: web.Request) -> web.Response:
    return web.json_response({"name": request.match_info["name"], "body": await request.json(),
                              "type": request.content_type})


async def slow(request: web.Request) -> web.Response:
    await asyncio.sleep(0.5)
    return web.Response(text="late")


async def boom(request: web.Request) -> web.Response:
    raise RuntimeError("handler bug")


async def moved(request: web.Request) -> web.Response:
    raise web.HTTPTemporaryRedirect("http://elsewhere:8080/moved")


async def peer(request: web.Request) -> web.Response:
    cert = request.transport.get_extra_info("peercert")
    return web.json_response({"remote": request.remote, "host": request.host, "cert": bool(cert)})


#: What /stream has made so far, and whether its chunks were closed (the last run's).
STREAMED = {"made": 0, "closed": False}
MEGABYTE = b"x" * 1024 ** 2


async def stream(request: web.Request) -> web.Response:
    count = int(request.query.get("mb", "0"))

    async def chunks():
        STREAMED.update(made=0, closed=False)
        try:
            yield b"start;"
            yield b""   # nothing to send yet: skipped
            for _ in range(count):
                STREAMED["made"] += 1
                yield MEGABYTE
            yield b";end"
        finally:
            STREAMED["closed"] = True

    return web.StreamedResponse(chunks(), content_type="text/plain", charset="utf-8")


async def outer(request: web.Request, handler: web.Handler) -> web.Response:
    request["trail"] = ["outer"]
    try:
        response = await handler(request)
    except web.HTTPException as exc:   # the router's 404 and 405 too
        response = exc.response()
    response.headers["X-Trail"] = ",".join(request["trail"])
    return response


async def inner(request: web.Request, handler: web.Handler) -> web.Response:
    request["trail"].append("inner")
    return await handler(request)


ROUTES = [web.get("/hello", hello), web.post("/echo", echo), web.get("/items/{id:\\d+}", item),
          web.get("/items/special", special), web.put("/named/{name}", named), web.get("/slow", slow),
          web.get("/boom", boom), web.get("/moved", moved), web.get("/peer", peer), web.get("/stream", stream)]


class ServedApp:
    """The test app on a plain and a TLS listening socket, served from a thread's event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop, context: ssl.SSLContext) -> None:
        self.app = web.Application(ROUTES, [outer, inner])
        self.loop = loop
        self.sockets = [socket.create_server(("127.0.0.1", 0)) for _ in range(2)]
        for sock in self.sockets:
            sock.setblocking(False)
        self.port, self.tls_port = (sock.getsockname()[1] for sock in self.sockets)
        ready = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(context, ready), daemon=True)
        self.thread.start()
        ready.wait(10)

    def _run(self, context: ssl.SSLContext, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(self.app.serve([(self.sockets[0], None), (self.sockets[1], context)]))
        ready.set()
        self.loop.run_forever()

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.app.stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


@pytest.fixture(scope="module")
def certificates(tmp_path_factory):
    ca = CertificateAuthority(tmp_path_factory.mktemp("certs"))
    return ca, ca.issue("server", server=True), ca.issue("client")


@pytest.fixture(params=["uvloop", "asyncio"])
def served(request, certificates):
    ca, server, _ = certificates
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(server.cert, server.key)
    context.load_verify_locations(cafile=ca.pem.cert)
    context.verify_mode = ssl.CERT_OPTIONAL
    served = ServedApp(uvloop.new_event_loop() if request.param == "uvloop" else asyncio.new_event_loop(), context)
    yield served
    served.stop()


class Client:
    """A blocking connection that reads answers one at a time, whatever the server pipelines."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.sock.settimeout(10)
        self.file = sock.makefile("rb")

    @classmethod
    def to(cls, served: ServedApp) -> Client:
        return cls(socket.create_connection(("127.0.0.1", served.port)))

    def send(self, data: bytes) -> Client:
        self.sock.sendall(data)
        return self

    def answer(self, body: bool = True) -> tuple[int, dict[str, str], bytes]:
        status = int(self.file.readline().split()[1])
        headers = {}
        while (line := self.file.readline().decode()) not in ("\r\n", ""):
            name, _, value = line.partition(":")
            headers[name.lower()] = value.strip()
        if body and headers.get("transfer-encoding") == "chunked":
            return status, headers, self._chunked()
        length = int(headers.get("content-length", 0)) if body else 0
        return status, headers, self.file.read(length)

    def _chunked(self) -> bytes:
        parts = []
        while size := int(self.file.readline(), 16):
            parts.append(self.file.read(size))
            assert self.file.readline() == b"\r\n"
        assert self.file.readline() == b"\r\n"
        return b"".join(parts)

    def closed(self) -> bool:
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True

    def close(self) -> None:
        self.file.close()
        self.sock.close()


def get(path: str, extra: str = "") -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: test\r\n{extra}\r\n".encode()


def test_keep_alive_serves_requests_one_after_another(served):
    client = Client.to(served)
    for _ in range(3):
        status, headers, body = client.send(get("/hello")).answer()
        assert (status, body) == (200, b"hello")
        assert headers["content-type"] == "text/plain; charset=utf-8" and "date" in headers
        assert headers["x-trail"] == "outer,inner"   # the first middleware wraps the others
    client.close()


def test_pipelined_requests_are_answered_in_order(served):
    client = Client.to(served).send(get("/slow") + get("/items/7") + get("/hello"))
    assert [client.answer()[2] for _ in range(3)] == [b"late", b'{"id": "7", "query": {}}', b"hello"]
    client.close()


def test_chunked_body_and_json(served):
    client = Client.to(served)
    client.send(b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
    status, headers, body = client.answer()
    assert (status, body, headers["content-type"]) == (200, b"hello world", "application/octet-stream")
    payload = b'{"a": [1, 2]}'
    client.send(b"PUT /named/x%%2Fy HTTP/1.1\r\nHost: t\r\nContent-Type: Application/JSON; charset=utf-8\r\n"
                b"Content-Length: %d\r\n\r\n%s" % (len(payload), payload))
    status, _, body = client.answer()
    assert (status, body) == (200, b'{"name": "x/y", "body": {"a": [1, 2]}, "type": "application/json"}')
    client.close()


def test_oversized_bodies_are_413_and_the_connection_carries_on(served):
    client = Client.to(served)
    client.send(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n" % BIG + b"x" * BIG)
    assert client.answer()[0] == 413
    assert client.send(get("/hello")).answer()[2] == b"hello"   # the refused body was read and dropped
    chunk = b"x" * 65536
    client.send(b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                + b"%x\r\n%s\r\n" % (len(chunk), chunk) * (BIG // len(chunk) + 1) + b"0\r\n\r\n")
    assert client.answer()[0] == 413
    assert client.send(get("/hello")).answer()[2] == b"hello"
    client.close()


def test_expect_100_continue(served):
    client = Client.to(served)
    client.send(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
    assert client.answer()[0] == 100
    assert client.send(b"body").answer()[:3:2] == (200, b"body")
    client.send(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n" % BIG)
    assert client.answer()[0] == 413   # refused before the upload; the body will never come: closed
    assert client.closed()


def test_head_answers_headers_only(served):
    client = Client.to(served)
    status, headers, _ = client.send(b"HEAD /hello HTTP/1.1\r\nHost: t\r\n\r\n").answer(body=False)
    assert (status, headers["content-length"]) == (200, "5")
    assert client.send(get("/hello")).answer()[2] == b"hello"   # no body bytes came before this answer
    client.close()


def test_a_streamed_answer_is_sent_chunked_as_the_client_takes_it(served):
    client = Client.to(served)
    status, headers, body = client.send(get("/stream")).answer()
    assert (status, body, headers["content-type"]) == (200, b"start;;end", "text/plain; charset=utf-8")
    assert "content-length" not in headers and STREAMED["closed"]
    STREAMED.update(made=-1, closed=False)
    status, headers, _ = client.send(b"HEAD /stream HTTP/1.1\r\nHost: t\r\n\r\n").answer(body=False)
    assert status == 200 and STREAMED == {"made": -1, "closed": False}   # a HEAD makes no chunk
    client.send(get("/stream?mb=64"))
    time.sleep(0.5)   # the client reads nothing meanwhile: the server makes only what the buffers hold
    assert STREAMED["made"] < 32
    status, _, body = client.answer()
    assert (status, len(body), STREAMED["made"]) == (200, 64 * len(MEGABYTE) + 10, 64)
    assert client.send(get("/hello")).answer()[2] == b"hello"   # the connection carries on
    client.close()


def test_a_client_gone_mid_stream_ends_the_answer_and_others_are_served(served):
    client = Client.to(served)
    client.send(get("/stream?mb=64"))
    time.sleep(0.2)
    client.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    client.close()   # a reset, with the answer half sent
    deadline = time.monotonic() + 10
    while not STREAMED["closed"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert STREAMED["closed"] and STREAMED["made"] < 64
    other = Client.to(served)
    assert other.send(get("/hello")).answer()[2] == b"hello"
    other.close()


def test_unknown_paths_wrong_methods_errors_and_redirects(served):
    client = Client.to(served)
    status, headers, body = client.send(get("/nope")).answer()
    assert (status, body, headers["x-trail"]) == (404, b"404: Not Found", "outer,inner")   # middlewares see it
    status, headers, _ = client.send(b"DELETE /hello HTTP/1.1\r\nHost: t\r\n\r\n").answer()
    assert (status, headers["allow"]) == (405, "GET,HEAD")
    assert client.send(get("/items/abc")).answer()[0] == 404
    assert client.send(get("/items/special")).answer()[2] == b'"special"'   # literal beats an earlier template
    status, headers, _ = client.send(get("/moved")).answer()
    assert (status, headers["location"]) == (307, "http://elsewhere:8080/moved")
    status, _, body = client.send(get("/boom")).answer()
    assert (status, body) == (500, b"500: Internal Server Error")
    assert client.send(get("/hello")).answer()[2] == b"hello"
    client.close()


@pytest.mark.parametrize("garbage", [b"BLAH\r\n\r\n", b"GET / HTTP/1.1\r\nContent-Length: abc\r\n\r\n",
                                     b"GET /" + b"a" * 20_000 + b" HTTP/1.1\r\nHost: t\r\n\r\n",
                                     b"GET / HTTP/1.1\r\n\r\n",
                                     b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"])
def test_malformed_requests_are_400_logged_quietly_and_others_served(served, garbage, caplog):
    caplog.set_level(logging.INFO, "server.web")
    client = Client.to(served).send(garbage)
    assert client.answer()[0] == 400
    assert client.closed()
    assert Client.to(served).send(get("/hello")).answer()[2] == b"hello"
    records = [r for r in caplog.records if r.name.startswith("server.web")]
    assert records and all(r.levelno == logging.INFO and not r.exc_info for r in records)


def test_tls_with_and_without_a_client_certificate(served, certificates):
    ca, _, client_pem = certificates
    context = ssl.create_default_context(cafile=str(ca.pem.cert))
    for certificate in (None, client_pem):
        if certificate:
            context.load_cert_chain(certificate.cert, certificate.key)
        plain = socket.create_connection(("127.0.0.1", served.tls_port))
        client = Client(context.wrap_socket(plain, server_hostname="localhost"))
        status, _, body = client.send(get("/peer")).answer()
        assert (status, body) == (200, b'{"remote": "127.0.0.1", "host": "test", "cert": %s}'
                                  % (b"true" if certificate else b"false"))
        assert client.send(get("/hello")).answer()[2] == b"hello"
        client.close()


def test_a_tls_client_closing_costs_no_warning(served, certificates, caplog):
    """TLS has no half-close: at the client's close_notify asyncio closes the connection, and
    warns once per connection if the protocol asks to keep it half-open."""
    context = ssl.create_default_context(cafile=str(certificates[0].pem.cert))
    tls = context.wrap_socket(socket.create_connection(("127.0.0.1", served.tls_port)), server_hostname="localhost")
    client = Client(tls)
    assert client.send(get("/hello")).answer()[2] == b"hello"
    client.file.close()
    plain = tls.unwrap()   # close_notify, then the server's
    assert plain.recv(1) == b""
    plain.close()
    assert not [r for r in caplog.records if "eof_received" in r.getMessage()]


def test_idle_connections_close_after_the_keep_alive_timeout(served, monkeypatch):
    monkeypatch.setattr(protocol, "KEEPALIVE_TIMEOUT", 0.2)
    client = Client.to(served)
    assert client.send(get("/hello")).answer()[2] == b"hello"
    time.sleep(0.5)
    assert client.closed()


def test_stop_closes_idle_connections_and_finishes_answers(served):
    idle, busy = Client.to(served), Client.to(served)
    assert idle.send(get("/hello")).answer()[2] == b"hello"
    busy.send(get("/slow"))
    time.sleep(0.1)
    served.stop()
    assert idle.closed()
    assert busy.answer()[2] == b"late"
    assert busy.closed()
    served.stop = lambda: None   # the fixture's own stop: done


def test_routes_match_the_most_specific_prefix_then_in_order():
    async def a(request): ...
    async def b(request): ...
    router = Router([web.get("/admin/v2/brokers/{cluster}", a), web.get("/admin/v2/brokers/health", b),
                     web.put("/admin/v2/{domain:persistent|non-persistent}/{tenant}/{ns}/{topic}", a),
                     web.delete("/admin/v2/{domain:persistent|non-persistent}/{tenant}/{ns}/{topic}", b)])
    assert router.resolve("GET", "/admin/v2/brokers/health").handler is b
    assert router.resolve("HEAD", "/admin/v2/brokers/standalone").info == {"cluster": "standalone"}
    match = router.resolve("DELETE", "/admin/v2/persistent/t/n/a%2Fb%25c")
    assert (match.handler, match.info["topic"]) == (b, "a/b%c")
    assert match.route.canonical == "/admin/v2/{domain}/{tenant}/{ns}/{topic}"
    assert router.resolve("PUT", "/admin/v2/other/t/n/x").route is None
