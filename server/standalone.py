"""One broker process with embedded storage: open storage, serve both ports, stop cleanly."""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import time

from managed_ledger.data_dir_lock import DataDirLock
from managed_ledger.factory import open_factory

from .admin import AdminResources
from .admin.web import start_web
from .broker_service import BrokerService
from .config import BrokerConfig
from .connection.advertised_listeners import AdvertisedListeners
from .connection.connection import Connection
from .malloc_tuning import return_large_buffers_to_the_system

log = logging.getLogger(__name__)

BACKLOG = 1024


async def run_standalone(config: BrokerConfig) -> None:
    """Lock the data directory, bind both ports, and only then open storage: a start that
    fails (directory in use, port taken) leaves the store untouched."""
    started = time.monotonic()
    return_large_buffers_to_the_system()
    loop = asyncio.get_running_loop()
    listeners = AdvertisedListeners.from_config(config)   # a bad configuration stops us here
    lock = DataDirLock.acquire(config.storage.data_dir)
    try:
        broker_socket = listening_socket(config.bind_address, config.broker_service_port)
        web_socket = listening_socket(config.bind_address, config.web_service_port)
    except BaseException:
        lock.release()
        raise
    storage = await open_factory(config.storage, lock)
    broker = BrokerService(config, storage, listeners)
    await broker.start()
    resources = AdminResources(broker)
    await resources.bootstrap()   # the default namespaces exist before any client is served
    server = await loop.create_server(lambda: Connection(broker), sock=broker_socket, backlog=BACKLOG)
    web = await start_web(broker, resources, web_socket)
    log.info(
        "pulsard ready in %.0f ms: %s, http://%s:%d, data in %s",
        (time.monotonic() - started) * 1000, config.service_url, config.bind_address,
        config.web_service_port, config.storage.data_dir.resolve(),
    )
    stop = asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()
    log.info("pulsard stopping")
    server.close()
    await broker.close()
    await web.cleanup()
    await storage.close()
    log.info("pulsard stopped")


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
