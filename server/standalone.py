"""One broker process with embedded storage: open storage, serve both ports, stop cleanly."""

from __future__ import annotations

import asyncio
import logging
import signal
import time

from managed_ledger.factory import open_factory

from .broker_service import BrokerService
from .config import BrokerConfig
from .connection import Connection
from .malloc_tuning import return_large_buffers_to_the_system
from .web import start_web

log = logging.getLogger(__name__)


async def run_standalone(config: BrokerConfig) -> None:
    started = time.monotonic()
    return_large_buffers_to_the_system()
    loop = asyncio.get_running_loop()
    storage = await open_factory(config.storage)
    broker = BrokerService(config, storage)
    await broker.start()
    server = await loop.create_server(
        lambda: Connection(broker), config.bind_address, config.broker_service_port, reuse_address=True, backlog=1024
    )
    web = await start_web(broker, config.bind_address, config.web_service_port)
    log.info(
        "pulsard ready in %.0f ms: %s, http://%s:%d, data in %s",
        (time.monotonic() - started) * 1000, config.service_url, config.bind_address,
        config.web_service_port, config.storage.data_dir,
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
