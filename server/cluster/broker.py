"""`pulsard broker`: one broker of a cluster. Storage is ZooKeeper + BookKeeper (no embedded
bookie); the broker registers itself, and serves the bundles it owns (taking unowned ones when
a lookup chooses it), redirecting the rest."""

from __future__ import annotations

import asyncio
import logging
import time

from managed_ledger.data_dir_lock import DataDirLock
from managed_ledger.factory import open_factory

from server.admin import AdminResources
from server.admin.web import start_web
from server.broker_service import BrokerService
from server.config import BrokerConfig
from server.connection.advertised_listeners import AdvertisedListeners
from server.connection.connection import Connection
from server.gc_tuning import collect_rarely
from server.policies.periodic import PeriodicTask
from server.malloc_tuning import return_large_buffers_to_the_system
from server.standalone import BACKLOG, listening_socket, serve_until_signalled

from .admin_routes import (broker_routes, bundle_routes, partition_deletes, partition_fan_out,
                           topic_owner_redirects)
from .broker_registry import BrokerAddress, BrokerRegistry
from .bundles import NamespaceBundles
from .cluster_lookup import ClusterLookup
from .ownership import Ownership

log = logging.getLogger(__name__)


def check_cluster_config(config: BrokerConfig) -> None:
    storage = config.storage
    if not storage.metadata_store_url.startswith("zk:") or not storage.uses_bookkeeper_cluster:
        raise ValueError("a cluster broker needs metadataStoreUrl=zk:host:port and "
                         "bookkeeperMetadataServiceUri=zk+hierarchical://host:port/ledgers "
                         "(`python -m bookkeeper.cluster_kit` prints both)")


async def run_broker(config: BrokerConfig) -> None:
    """As run_standalone: ports bound before storage opens; then register, and serve."""
    started = time.monotonic()
    check_cluster_config(config)
    return_large_buffers_to_the_system()
    collect_rarely()
    loop = asyncio.get_running_loop()
    listeners = AdvertisedListeners.from_config(config)
    bundles = NamespaceBundles(config.default_number_of_namespace_bundles)
    lock = DataDirLock.acquire(config.storage.data_dir)   # only the lock lives there
    try:
        broker_socket = listening_socket(config.bind_address, config.broker_service_port)
        web_socket = listening_socket(config.bind_address, config.web_service_port)
    except BaseException:
        lock.release()
        raise
    storage = await open_factory(config.storage, lock)
    broker = BrokerService(config, storage, listeners)
    registry = BrokerRegistry(storage.metadata_store, BrokerAddress.of(config, listeners))
    ownership = Ownership(storage.metadata_store, bundles, registry, broker)
    broker.served = ownership
    lookup = broker.lookup = ClusterLookup(broker, ownership, registry)
    await broker.start()
    orphans = PeriodicTask("orphan ledger cleaner", config.storage.orphan_ledger_check_interval_minutes * 60,
                           storage.delete_orphan_ledgers)
    orphans.start()
    resources = AdminResources(broker)
    await resources.bootstrap()
    server = await loop.create_server(lambda: Connection(broker), sock=broker_socket, backlog=BACKLOG)
    middlewares = [topic_owner_redirects(lookup), partition_deletes(broker, registry.me),
                   partition_fan_out(broker, registry.me)]
    web = await start_web(broker, resources, [(web_socket, None)], middlewares,
                          [*bundle_routes(ownership), *broker_routes(ownership, registry, config.cluster_name)])
    await registry.register()
    log.info("pulsard broker %s of cluster %s ready in %.0f ms: %s", registry.me.broker_id,
             config.cluster_name, (time.monotonic() - started) * 1000, config.service_url)
    await serve_until_signalled()
    log.info("pulsard broker stopping")
    server.close()
    await orphans.stop()
    await broker.close()
    await web.stop()
    await storage.close()   # ends the ZooKeeper session: the bundles are free at once
    log.info("pulsard broker stopped")
