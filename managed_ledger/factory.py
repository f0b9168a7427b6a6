"""The managed-ledger factory: one storage engine (metadata store + ledger client) under many
topics.

``open_factory(config)`` is the entry point for server/. It opens

- the metadata store: the embedded one (``<data_dir>/metadata/metadata.db``) by default, or
  ZooKeeper when ``metadataStoreUrl=zk:host:port[/chroot]``;
- the ledger client: the embedded bookie (``<data_dir>/bookie/journal`` and
  ``<data_dir>/bookie/ledgers``) by default, or a BookKeeper cluster when
  ``bookkeeperMetadataServiceUri=zk+hierarchical://host:port/ledgers`` (ledgers of
  ``managedLedgerDefaultEnsembleSize`` bookies, ``...WriteQuorum`` copies, ``...AckQuorum`` acks);

and returns a ManagedLedgerFactory whose managed ledgers share one entry cache. The managed
ledger itself is the same code on either pair.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import AsyncExitStack
from typing import Any

from bookkeeper.config import MB, ZK_URL_PREFIX
from bookkeeper.errors import BookKeeperError, MetadataNotFoundError
from bookkeeper.interfaces import LedgerClient
from bookkeeper.ledger import BookKeeper
from bookkeeper.metadata_store import SqliteMetadataStore

from .clean_stop import leave_mark, take_mark
from .config import PersistencePolicy, StorageConfig
from .data_dir_lock import DataDirLock, require_directory
from .entry_cache import EntryCache
from .errors import ManagedLedgerClosedError
from .interfaces import MetadataStore
from .ledger_tags import LedgerTags, storage_id
from .managed_ledger import ManagedLedgerImpl
from .read_only import ReadOnlyManagedLedger
from .rollover import RolloverClock
from .cursor_store import CursorStore
from .metadata import (MANAGED_LEDGERS_PATH, ManagedLedgerMetadata, decode_name, encode_name,
                       managed_ledger_path)

logger = logging.getLogger(__name__)


async def _open_store_at(url: str, config: StorageConfig) -> Any:
    if not url:
        require_directory(config.data_dir)
        return await SqliteMetadataStore.open(config.data_dir / "metadata" / "metadata.db")
    if url.startswith(ZK_URL_PREFIX):
        from bookkeeper.zk_metadata_store import ZkMetadataStore   # cluster mode only: kazoo
        return await ZkMetadataStore.open(url, config.metadata_store_session_timeout_ms / 1000)
    raise BookKeeperError(f"unsupported metadata store url {url!r} (use zk:host:port[/chroot], "
                          f"or nothing for the embedded store)")


async def open_metadata_store(config: StorageConfig) -> Any:
    """The metadata store alone (for tools that edit policies; safe beside a running broker)."""
    return await _open_store_at(config.metadata_store_url, config)


async def open_configuration_store(config: StorageConfig) -> Any:
    """The store of clusters, tenants, namespace policies and partitioned topics, as Pulsar's
    configuration store (configurationMetadataStoreUrl, which defaults to the metadata store:
    several clusters may share one, each with its own local metadata store)."""
    return await _open_store_at(
        config.configuration_metadata_store_url or config.metadata_store_url, config)


async def open_ledger_client(config: StorageConfig, store: Any) -> LedgerClient:
    """The embedded bookie, or the client of the BookKeeper cluster the config names."""
    if config.metadata_store_url and not config.uses_bookkeeper_cluster:
        # the embedded bookie keeps its ledgers' metadata under /ledgers, BookKeeper's own
        # path in a shared ZooKeeper; and its ledgers could serve one broker only anyway
        raise BookKeeperError("metadataStoreUrl on ZooKeeper needs a BookKeeper cluster too: "
                              "set bookkeeperMetadataServiceUri=zk+hierarchical://host:port/ledgers")
    if config.uses_bookkeeper_cluster:
        from bookkeeper.bk.client import BookKeeperClient   # cluster mode only
        client = config.bookkeeper_client
        return await BookKeeperClient.open(
            client.metadata_service_uri, config.ensemble_size, config.write_quorum,
            config.ack_quorum, timeout_s=client.timeout_seconds,
            speculative_read_s=client.speculative_read_timeout_ms / 1000,
            explicit_lac_interval_s=client.explicit_lac_interval_ms / 1000,
            zk_session_timeout_s=config.metadata_store_session_timeout_ms / 1000)
    return await BookKeeper.open(config.data_dir / "bookie", config.bookie, store)


async def open_factory(config: StorageConfig, lock: DataDirLock | None = None) -> ManagedLedgerFactoryImpl:
    """Open (recovering after any crash) the storage the config names.

    The data directory's lock is taken first (or given, already held, by a caller that took it
    before binding its ports); the factory holds it until close(), or releases it at once if
    opening fails.
    """
    lock = lock or DataDirLock.acquire(config.data_dir)
    async with AsyncExitStack() as undo_on_failure:
        undo_on_failure.callback(lock.release)
        store = await open_metadata_store(config)
        undo_on_failure.push_async_callback(store.close)
        bookkeeper = await open_ledger_client(config, store)
        undo_on_failure.push_async_callback(bookkeeper.close)
        if config.embedded and not take_mark(config.data_dir):
            await _delete_orphan_ledgers(store, bookkeeper)
        tags = LedgerTags(await storage_id(store))
        configuration = store
        if config.configuration_metadata_store_url not in ("", config.metadata_store_url):
            configuration = await open_configuration_store(config)
        undo_on_failure.pop_all()
    return ManagedLedgerFactoryImpl(config, store, bookkeeper, lock, tags, configuration)


async def _delete_orphan_ledgers(store: SqliteMetadataStore, bookkeeper: BookKeeper) -> None:
    """Delete ledgers that no managed ledger lists.

    A crash between creating a ledger and recording it (rollover), or between dropping ledgers
    from a managed ledger's metadata and deleting them (trimming, empty ledgers), leaves such
    ledgers behind. Safe here because nothing is open yet and the embedded store has exactly one
    broker; on a BookKeeper cluster, orphan_ledgers.py does it instead. A clean stop does it
    too, sparing the next start (clean_stop.py).
    """
    referenced: set[int] = set()
    for value in (await store.children_values(MANAGED_LEDGERS_PATH)).values():
        referenced.update(ManagedLedgerMetadata.decode(value).ledger_ids())
    for ledger_id in await bookkeeper.list_ledgers():
        if ledger_id not in referenced:
            logger.info("deleting orphan ledger %d", ledger_id)
            await bookkeeper.delete_ledger(ledger_id)


class ManagedLedgerFactoryImpl:
    """Implements interfaces.ManagedLedgerFactory."""

    def __init__(self, config: StorageConfig, store: Any, bookkeeper: LedgerClient,
                 lock: DataDirLock, tags: LedgerTags, configuration_store: Any) -> None:
        self.config = config
        self.tags = tags
        self.configuration_store: MetadataStore = configuration_store
        self._lock = lock
        self.metadata_store: MetadataStore = store
        self._store = store
        self.bookkeeper = bookkeeper
        self.entry_cache = EntryCache(config.cache_size_mb * MB, config.cache_eviction_interval_ms,
                                      config.cache_eviction_time_threshold_ms)
        self._rollover_clock = RolloverClock()
        self._on_closed = self._forget   # one bound method for every ledger, not one each
        self._ledgers: dict[str, ManagedLedgerImpl] = {}
        self._opening: dict[str, asyncio.Task[ManagedLedgerImpl]] = {}
        self._closed = False

    async def open_ledger(self, name: str, persistence: PersistencePolicy | None = None) -> ManagedLedgerImpl:
        """Open or create; the same instance while it stays open. One that is closing (a
        topic being unloaded) is waited for, then opened again as a new instance. A new
        instance writes as `persistence` says (default: the managedLedgerDefault* keys)."""
        if self._closed:
            raise ManagedLedgerClosedError("managed ledger factory is closed")
        while (ledger := self._ledgers.get(name)) is not None and ledger.closing:
            await ledger.wait_closed()
        if ledger is not None:
            return ledger
        opening = self._opening.get(name)
        if opening is None:
            opening = asyncio.get_running_loop().create_task(self._open(name, persistence))
            self._opening[name] = opening
        return await asyncio.shield(opening)

    async def _open(self, name: str, persistence: PersistencePolicy | None) -> ManagedLedgerImpl:
        try:
            ledger = await ManagedLedgerImpl.open(name, self.config, self.metadata_store,
                                                  self.bookkeeper, self.entry_cache, self.tags,
                                                  self._rollover_clock, self._on_closed, persistence)
            self._ledgers[name] = ledger
            return ledger
        finally:
            del self._opening[name]

    def _forget(self, ledger: ManagedLedgerImpl) -> None:
        if self._ledgers.get(ledger.name) is ledger:
            del self._ledgers[ledger.name]

    async def delete_orphan_ledgers(self) -> list[int]:
        """Cluster mode: one pass of the orphan cleaner (orphan_ledgers.py); the ids deleted."""
        from .orphan_ledgers import delete_orphan_ledgers   # cluster mode only: kazoo
        return await delete_orphan_ledgers(self.metadata_store, self.bookkeeper, self.tags,  # type: ignore[arg-type]
                                           self.config.orphan_ledger_min_age_minutes * 60)

    async def open_read_only(self, name: str) -> ReadOnlyManagedLedger | None:
        view = ReadOnlyManagedLedger(name, self.metadata_store, self.bookkeeper, self.entry_cache)
        return view if await view.refresh() else None

    async def ledger_exists(self, name: str) -> bool:
        return await self.metadata_store.get(managed_ledger_path(name)) is not None

    async def list_ledgers(self, starting: str = "") -> list[str]:
        """Decoding the shared start once saves most of the work at 100,000 topics."""
        encoded = encode_name(starting)
        children = await self.metadata_store.children(MANAGED_LEDGERS_PATH, encoded)
        return sorted(starting + decode_name(child[len(encoded):]) for child in children)

    async def delete_ledger(self, name: str) -> None:
        """Close it if open, then delete its ledgers, its cursors and its metadata."""
        opening = self._opening.get(name)
        if opening is not None:
            await asyncio.gather(opening, return_exceptions=True)
        ledger = self._ledgers.get(name)
        if ledger is not None:
            await ledger.close()
        store = self.metadata_store
        path = managed_ledger_path(name)
        found = await store.get(path)
        if found is None:
            return
        for ledger_id in ManagedLedgerMetadata.decode(found[0]).ledger_ids():
            self.entry_cache.invalidate_ledger(ledger_id)
            try:
                await self.bookkeeper.delete_ledger(ledger_id)
            except BookKeeperError as exc:
                logger.warning("deleting ledger %d of %s: %s", ledger_id, name, exc)
        cursor_ledgers = self.bookkeeper if self.config.uses_bookkeeper_cluster else None
        for component in await store.children(path):
            await CursorStore.delete_stored(store, path, decode_name(component), cursor_ledgers)
        await _delete_if_present(store, path)
        logger.info("deleted managed ledger %s", name)

    async def close(self) -> None:
        """Close every managed ledger (flushing cursors), then the bookie and the store."""
        if self._closed:
            return
        self._closed = True
        if self._opening:
            await asyncio.gather(*self._opening.values(), return_exceptions=True)
        # concurrently, so the metadata store commits their final writes in shared batches
        ledgers = list(self._ledgers.values())
        outcomes = await asyncio.gather(*[ledger.close() for ledger in ledgers],
                                        return_exceptions=True)
        failed = False
        for ledger, outcome in zip(ledgers, outcomes):
            if isinstance(outcome, Exception):
                failed = True
                logger.error("closing managed ledger %s: %s", ledger.name, outcome)
        self.entry_cache.close()
        clean = self.config.embedded and not failed
        try:
            if clean:   # nothing is open now: the next start need not sweep
                try:
                    await _delete_orphan_ledgers(self._store, self.bookkeeper)
                except Exception as exc:   # whatever it was, the next start sweeps instead
                    logger.warning("orphan ledgers not swept at stop (the next start will): %s", exc)
                    clean = False
            await self.bookkeeper.close()
            await self._store.close()
            if self.configuration_store is not self._store:
                await self.configuration_store.close()
            if clean:
                leave_mark(self.config.data_dir)
        finally:
            self._lock.release()
        logger.info("managed ledger factory closed")


async def _delete_if_present(store: MetadataStore, path: str) -> None:
    try:
        await store.delete(path)
    except MetadataNotFoundError:
        pass
