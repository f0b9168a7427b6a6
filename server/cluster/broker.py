"""`pulsard broker`: one broker of a cluster. Storage is ZooKeeper + BookKeeper (no embedded
bookie); the broker registers itself, reports its load, runs for load balancer leader, and
serves the bundles it owns (taking unowned ones when the leader chooses it), redirecting the
rest."""

from __future__ import annotations

import asyncio
import logging
import time

from managed_ledger.data_dir_lock import DataDirLock
from managed_ledger.factory import open_factory

from server.admin.resources import AdminResources
from server.admin.web import start_web
from server.broker_service import BrokerService
from server.config import BrokerConfig
from server.connection.advertised_listeners import AdvertisedListeners
from server.connection.connection import Connection
from server.gc_tuning import collect_rarely
from server.policies.periodic import PeriodicTask
from server.malloc_tuning import return_large_buffers_to_the_system
from server.standalone import BACKLOG, listening_socket, serve_until_signalled
from server.transactions.participants import LocalParticipants

from server.loadbalance.leader_election import LeaderElection
from server.loadbalance.load_manager import LoadManager
from server.loadbalance.load_report import LoadReporter

from .admin_routes import (broker_routes, bundle_routes, partition_deletes, partition_fan_out,
                           topic_owner_redirects)
from .broker_registry import BrokerAddress, BrokerRegistry
from .bundle_stats import OwnedBundleStats
from .bundle_units import BundleUnits
from .bundles import NamespaceBundles
from .cluster_lookup import ClusterLookup
from .load_actions import AdminActions
from .load_routes import broker_stats_routes, leader_routes, split_routes
from .ownership import Ownership
from .policy_events import ForwardedEvents, policy_event_routes
from .txn_forwarding import ForwardedParticipants, txn_end_routes
from .txn_snapshots import ForwardedSnapshots, txn_snapshot_routes

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
    lock = DataDirLock.acquire(config.storage.data_dir)   # only the lock lives there
    try:
        broker_socket = listening_socket(config.bind_address, config.broker_service_port)
        web_socket = listening_socket(config.bind_address, config.web_service_port)
    except BaseException:
        lock.release()
        raise
    storage = await open_factory(config.storage, lock)
    store, balancing, window_s = storage.metadata_store, config.load_balancer, config.stats_update_frequency_in_secs
    bundles = NamespaceBundles(config.default_number_of_namespace_bundles, store)
    broker = BrokerService(config, storage, listeners)
    me = BrokerAddress.of(config, listeners)
    registry = BrokerRegistry(store, me)
    ownership = Ownership(store, bundles, registry, BundleUnits(broker), publish=lambda: reporter.write_now())
    broker.served = ownership
    stats = OwnedBundleStats(lambda: [*broker.topics, *broker.non_persistent_topics], ownership, window_s)
    reporter = LoadReporter(stats, balancing, registry.publish)
    load_manager = LoadManager(store, balancing, AdminActions(me.http_url, bundles))
    leader = LeaderElection(store, me.broker_id, me.http_url, load_manager.leadership_changed)
    lookup = broker.lookup = ClusterLookup(broker, ownership, registry, leader, load_manager)
    broker.topic_policies.forwarder = ForwardedEvents(me.http_url)
    broker.participants.remote = ForwardedParticipants(me.http_url)   # coordinators reach other brokers' topics
    if broker.transaction_snapshots is not None:
        broker.transaction_snapshots.forwarder = ForwardedSnapshots(me.http_url)
    await broker.start()
    orphans = PeriodicTask("orphan ledger cleaner", config.storage.orphan_ledger_check_interval_minutes * 60,
                           storage.delete_orphan_ledgers)
    orphans.start()
    resources = AdminResources(broker)
    await resources.bootstrap()
    server = await loop.create_server(lambda: Connection(broker), sock=broker_socket, backlog=BACKLOG)
    middlewares = [topic_owner_redirects(lookup), partition_deletes(broker, registry.me),
                   partition_fan_out(broker, registry.me)]
    routes = [*leader_routes(leader), *split_routes(broker, ownership, lookup, balancing.default_split_algorithm),
              *broker_stats_routes(lambda: registry.local_broker_data(reporter.current()), stats, window_s),
              *bundle_routes(ownership), *broker_routes(ownership, registry, config.cluster_name),
              *policy_event_routes(broker.topic_policies, lookup),
              *txn_end_routes(LocalParticipants(broker), lookup),
              *(txn_snapshot_routes(broker.transaction_snapshots, lookup) if broker.transaction_snapshots else ())]
    web = await start_web(broker, resources, [(web_socket, None)], middlewares, routes, registry)
    await registry.register()
    await reporter.write_now()
    reporter.start()
    await leader.start()
    log.info("pulsard broker %s of cluster %s ready in %.0f ms: %s", registry.me.broker_id,
             config.cluster_name, (time.monotonic() - started) * 1000, config.service_url)
    await serve_until_signalled()
    log.info("pulsard broker stopping")
    leader.stop()
    await load_manager.stop()
    await reporter.stop()
    server.close()
    await orphans.stop()
    await broker.close()
    await web.stop()
    await storage.close()   # ends the ZooKeeper session: the bundles are free at once
    log.info("pulsard broker stopped")
