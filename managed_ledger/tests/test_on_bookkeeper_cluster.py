"""The managed ledger, unchanged, on the BookKeeper client and the ZooKeeper metadata store
(real ZooKeeper + 3 real bookies: the session's cluster)."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from dataclasses import replace
from pathlib import Path
from typing import AsyncIterator

import pytest

from bookkeeper.bk.client import BookKeeperClient
from bookkeeper.config import BookKeeperClientConfig
from bookkeeper.errors import NoSuchLedgerError
from managed_ledger.config import StorageConfig
from managed_ledger.factory import ManagedLedgerFactoryImpl, open_factory
from managed_ledger.position import InitialPosition, Position

from .conftest import TOPIC

pytestmark = pytest.mark.cluster

KEEP_ALL = {"retention_time_minutes": -1, "retention_size_mb": -1}


def cluster_config(cluster, data_dir: Path, chroot: str, **settings) -> StorageConfig:
    return StorageConfig(
        data_dir, metadata_store_url=f"{cluster.metadata_store_url}/{chroot}",
        bookkeeper_client=BookKeeperClientConfig(cluster.metadata_service_uri),
        ensemble_size=3, write_quorum=3, ack_quorum=2, **settings)


@contextlib.asynccontextmanager
async def open_cluster_storage(config: StorageConfig) -> AsyncIterator[ManagedLedgerFactoryImpl]:
    factory = await open_factory(config)
    try:
        yield factory
    finally:
        await factory.close()


async def test_config_keys_pick_the_cluster(cluster, tmp_path: Path) -> None:
    from server.config import BrokerConfig
    config = BrokerConfig().with_settings({
        "metadataStoreUrl": cluster.metadata_store_url,
        "bookkeeperMetadataServiceUri": cluster.metadata_service_uri,
        "managedLedgerDefaultEnsembleSize": "3", "managedLedgerDefaultWriteQuorum": "3",
        "managedLedgerDefaultAckQuorum": "2"}).storage
    assert config.uses_bookkeeper_cluster
    assert (config.ensemble_size, config.write_quorum, config.ack_quorum) == (3, 3, 2)
    assert BrokerConfig().storage.uses_bookkeeper_cluster is False


async def test_adds_reads_rollover_cursors_and_reopen(cluster, tmp_path: Path) -> None:
    config = cluster_config(cluster, tmp_path, uuid.uuid4().hex, max_entries_per_ledger=40)
    async with open_cluster_storage(config) as factory:
        assert isinstance(factory.bookkeeper, BookKeeperClient)
        ledger = await factory.open_ledger(TOPIC)
        cursor = await ledger.open_cursor("sub", InitialPosition.EARLIEST)
        positions = await asyncio.gather(*[ledger.add_entry(b"m%d" % i) for i in range(100)])
        assert positions == sorted(positions) and len(set(positions)) == 100
        assert [entries for _, entries, _ in ledger.ledgers_info()] == [40, 40, 20]
        read = await cursor.read_entries_or_wait(100)
        assert [bytes(e.data) for e in read] == [b"m%d" % i for i in range(100)]
        cursor.mark_delete(positions[49])
        await cursor.flush()
        first_ledger = positions[0].ledger_id
    async with open_cluster_storage(config) as factory:
        ledger = await factory.open_ledger(TOPIC)
        assert ledger.number_of_entries <= 100 and ledger.last_confirmed_entry == positions[-1]
        assert ledger.cursors["sub"].mark_delete_position == positions[49]
        entries = await ledger.read_entries(positions[50], 100)
        assert [bytes(e.data) for e in entries] == [b"m%d" % i for i in range(50, 100)]
        await ledger.trim()   # the first ledger is consumed and retention is 0: deleted in BK too
        with pytest.raises(NoSuchLedgerError):
            await factory.bookkeeper.open_ledger(first_ledger)
        assert (await ledger.add_entry(b"after reopen")).ledger_id > positions[-1].ledger_id


async def test_a_broker_that_dies_loses_nothing_it_acknowledged(cluster, tmp_path: Path) -> None:
    config = cluster_config(cluster, tmp_path, uuid.uuid4().hex, **KEEP_ALL)
    factory = await open_factory(config)
    ledger = await factory.open_ledger(TOPIC)
    acknowledged: list[Position] = []
    futures = [ledger.append(b"m%d" % i) for i in range(400)]
    for future in futures:
        future.add_done_callback(lambda f: acknowledged.append(f.result())
                                 if not f.cancelled() and not f.exception() else None)
    while len(acknowledged) < 150:
        await asyncio.sleep(0.001)
    # the broker dies: its connections drop, nothing is closed or flushed
    await factory.bookkeeper.pool.close()
    await factory.metadata_store.close()
    factory._lock.release()   # as the kernel does for a dead process
    async with open_cluster_storage(config) as successor:
        ledger = await successor.open_ledger(TOPIC)
        entries = await ledger.read_entries(ledger.first_position(), 1000)
        stored = [bytes(e.data) for e in entries]
        assert stored == [b"m%d" % i for i in range(len(stored))]
        assert {e.position for e in entries} >= set(acknowledged)
    await asyncio.gather(*futures, return_exceptions=True)
    await factory.bookkeeper.store.close()


async def test_acks_flushed_to_the_cursor_ledger_survive_losing_the_metadata_store(cluster, tmp_path: Path) -> None:
    """As in Pulsar, a cursor's flushes go to its own ledger: a broker cut off from ZooKeeper
    still persists its acknowledgements; the next owner reads them back (fencing the ledger)."""
    config = cluster_config(cluster, tmp_path, uuid.uuid4().hex, **KEEP_ALL)
    factory = await open_factory(config)
    ledger = await factory.open_ledger(TOPIC)
    cursor = await ledger.open_cursor("sub", InitialPosition.EARLIEST)
    positions = [await ledger.add_entry(b"m%d" % i) for i in range(100)]
    cursor.mark_delete(positions[9])
    await cursor.flush()                  # the first flush starts the cursor ledger
    cursor.mark_delete(positions[59])
    await cursor.flush()
    await factory.metadata_store.close()  # ZooKeeper is gone for this broker
    cursor.delete([positions[79]])
    cursor.mark_delete(positions[69])
    await cursor.flush()                  # still stored: on the bookies
    await factory.bookkeeper.pool.close()   # then the broker dies
    factory._lock.release()
    async with open_cluster_storage(config) as successor:
        recovered = (await successor.open_ledger(TOPIC)).cursors["sub"]
        assert recovered.mark_delete_position == positions[69]
        assert recovered.is_deleted(positions[79]) and not recovered.is_deleted(positions[70])
        recovered.mark_delete(positions[89])
        await recovered.flush()           # a ledger of its own; the old one is deleted
    async with open_cluster_storage(config) as third:
        assert (await third.open_ledger(TOPIC)).cursors["sub"].mark_delete_position == positions[89]
    await factory.bookkeeper.store.close()


async def test_a_read_only_view_in_another_broker_sees_each_entry_shown_and_never_fences(cluster, tmp_path: Path) -> None:
    """Writer and reader in two factories (two brokers): the view sees the writer's last entry
    once send_last_confirmed() showed it (not before: nothing later confirms it), the writer goes
    on writing to the ledger the view opened, and after the writer dies the view still reads
    what was shown; the next writer's recovery keeps the view's positions."""
    chroot = uuid.uuid4().hex
    writer_config = cluster_config(cluster, tmp_path / "writer", chroot, **KEEP_ALL)
    factory = await open_factory(writer_config)
    ledger = await factory.open_ledger(TOPIC)
    async with open_cluster_storage(cluster_config(cluster, tmp_path / "reader", chroot)) as reader:
        view = await reader.open_read_only(TOPIC)
        positions = [await ledger.add_entry(b"m%d" % i) for i in range(3)]
        await view.refresh()
        assert view.last_confirmed_entry == positions[1]   # the last one is not confirmed to readers yet
        await ledger.send_last_confirmed()
        await view.refresh()
        assert view.last_confirmed_entry == positions[2]
        assert [bytes(e.data) for e in await view.read_entries(view.first_position(), 10)] == [b"m0", b"m1", b"m2"]
        positions.append(await ledger.add_entry(b"m3"))   # not fenced by the view
        await ledger.send_last_confirmed()
        await factory.bookkeeper.pool.close()   # the writer dies, its ledger left open
        await factory.metadata_store.close()
        factory._lock.release()
        await view.refresh()
        assert [bytes(e.data) for e in await view.read_entries(view.next_position(positions[2]), 10)] == [b"m3"]
        async with open_cluster_storage(cluster_config(cluster, tmp_path / "next", chroot)) as successor:
            successor_ledger = await successor.open_ledger(TOPIC)   # recovers, then a new ledger
            await successor_ledger.add_entry(b"m4")
            await successor_ledger.send_last_confirmed()
            await view.refresh()
            assert [bytes(e.data) for e in await view.read_entries(view.next_position(positions[3]), 10)] == [b"m4"]
    await factory.bookkeeper.store.close()


async def test_written_ledgers_carry_the_configured_quorums(cluster, tmp_path: Path) -> None:
    config = replace(cluster_config(cluster, tmp_path, uuid.uuid4().hex),
                     ensemble_size=3, write_quorum=2, ack_quorum=2)
    async with open_cluster_storage(config) as factory:
        ledger = await factory.open_ledger(TOPIC)
        position = await ledger.add_entry(b"x")
        metadata, _ = await factory.bookkeeper.read_metadata(position.ledger_id)
        assert (metadata.ensemble_size, metadata.write_quorum, metadata.ack_quorum) == (3, 2, 2)


async def test_zookeeper_metadata_without_a_bookkeeper_cluster_is_refused(cluster, tmp_path: Path) -> None:
    from bookkeeper.errors import BookKeeperError
    config = StorageConfig(tmp_path, metadata_store_url=cluster.metadata_store_url)
    with pytest.raises(BookKeeperError, match="bookkeeperMetadataServiceUri"):
        await open_factory(config)
