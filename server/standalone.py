"""One broker process with embedded storage: open storage, serve both ports, stop cleanly."""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import time

from managed_ledger.data_dir_lock import DataDirLock
from managed_ledger.factory import open_factory

from .admin.resources import AdminResources
from .admin.web import start_web
from .broker_service import BrokerService
from .config import BrokerConfig
from .connection.advertised_listeners import AdvertisedListeners
from .connection.connection import Connection
from .gc_tuning import collect_from_now_on, collect_rarely
from .security.authentication import Authentication
from .security.tls import ReloadingTls
from .malloc_tuning import return_large_buffers_to_the_system

log = logging.getLogger(__name__)

BACKLOG = 1024


async def run_standalone(config: BrokerConfig) -> None:
    """Lock the data directory, bind both ports, and only then open storage: a start that
    fails (directory in use, port taken) leaves the store untouched."""
    started = time.monotonic()
    return_large_buffers_to_the_system()
    collect_rarely()
    loop = asyncio.get_running_loop()
    listeners = AdvertisedListeners.from_config(config)   # a bad configuration stops us here
    authentication = Authentication(config.security)
    tls = ReloadingTls(config.security) if config.broker_service_port_tls or config.web_service_port_tls else None
    lock = DataDirLock.acquire(config.storage.data_dir)
    sockets: list[socket.socket] = []
    try:
        ports = _Ports(config, sockets)
    except BaseException:
        for sock in sockets:
            sock.close()
        lock.release()
        raise
    storage = await open_factory(config.storage, lock)
    broker = BrokerService(config, storage, listeners, authentication)
    await broker.start()
    resources = AdminResources(broker)
    await resources.bootstrap()   # the default namespaces exist before any client is served
    if broker.transactions is not None:
        await broker.transactions.recover_served()
    servers = [await loop.create_server(lambda: Connection(broker), sock=sock, backlog=BACKLOG, ssl=context)
               for sock, context in ((ports.broker, None), (ports.broker_tls, tls and tls.context)) if sock]
    web = await start_web(broker, resources, [(ports.web, None), (ports.web_tls, tls and tls.context)])
    log.info(
        "pulsard ready in %.0f ms: %s, web ports %d (TLS %d), data in %s",
        (time.monotonic() - started) * 1000, ", ".join(filter(None, (config.service_url, config.service_url_tls))),
        config.web_service_port, config.web_service_port_tls, config.storage.data_dir.resolve(),
    )
    await serve_until_signalled()
    log.info("pulsard stopping")
    for server in servers:
        server.close()
    await broker.close()
    await web.stop()
    await storage.close()
    log.info("pulsard stopped")


async def serve_until_signalled() -> None:
    """The broker serves: what start-up made is frozen for the collector, then SIGINT or
    SIGTERM ends the wait."""
    collect_from_now_on()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()


class _Ports:
    """The listening sockets of the configured ports (None for a port turned off); each one
    opened is appended to `opened`, so a failure part way can close them."""

    def __init__(self, config: BrokerConfig, opened: list[socket.socket]) -> None:
        def bind(port: int) -> socket.socket | None:
            if not port:
                return None
            opened.append(listening_socket(config.bind_address, port))
            return opened[-1]

        self.broker = bind(config.broker_service_port)
        self.web = bind(config.web_service_port)
        self.broker_tls = bind(config.broker_service_port_tls)
        self.web_tls = bind(config.web_service_port_tls)


def listening_socket(host: str, port: int) -> socket.socket:
    """Bound and listening now (clients queue until the broker serves), so a port that is taken
    fails the start before storage is opened. An OSError names the address."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(BACKLOG)
    except OSError as exc:
        sock.close()
        raise OSError(exc.errno, f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.setblocking(False)
    return sock
