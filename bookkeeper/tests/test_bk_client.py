"""The BookKeeper client against real ZooKeeper + 3 real bookies (the session's cluster)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import AsyncIterator

import pytest

from bookkeeper.bk.client import BookKeeperClient, parse_service_uri
from bookkeeper.bk.ledger_metadata import LedgerState
from bookkeeper.errors import LedgerFencedError, NoSuchEntryError, NoSuchLedgerError

pytestmark = pytest.mark.cluster


def test_parse_service_uri() -> None:
    assert parse_service_uri("zk+hierarchical://a:1;b:2/ledgers") == ("a:1,b:2", "/ledgers")
    assert parse_service_uri("zk://a:1/bk/ledgers") == ("a:1", "/bk/ledgers")


def payload(i: int) -> bytes:
    return b"entry-%06d-" % i + bytes([i % 251]) * (i % 200)


async def open_client(cluster, e: int = 3, qw: int = 3, qa: int = 2) -> BookKeeperClient:
    return await BookKeeperClient.open(cluster.metadata_service_uri, e, qw, qa)


@contextlib.asynccontextmanager
async def writer_and_recoverer(cluster) -> AsyncIterator[tuple[BookKeeperClient, BookKeeperClient]]:
    """Two clients: one writes a ledger, the other recovers (fences) it."""
    old = await open_client(cluster)
    new = await open_client(cluster)
    try:
        yield old, new
    finally:
        await old.close()
        await new.close()


@pytest.mark.parametrize("quorums", [(3, 3, 2), (3, 2, 2)], ids=["E3Qw3Qa2", "E3Qw2Qa2"])
async def test_write_read_close(cluster, quorums) -> None:
    client = await open_client(cluster, *quorums)
    try:
        writer = await client.create_ledger()
        ids = await asyncio.gather(*[writer.add_entry(payload(i)) for i in range(300)])
        assert ids == list(range(300))
        assert writer.last_add_confirmed == 299
        assert await writer.read_entries(0, 299) == [payload(i) for i in range(300)]
        await writer.close()
        reader = await client.open_ledger(writer.ledger_id)
        assert reader.is_closed and reader.last_add_confirmed == 299
        assert reader.length == sum(len(payload(i)) for i in range(300))
        assert await reader.read_entries(250, 299) == [payload(i) for i in range(250, 300)]
        with pytest.raises(NoSuchEntryError):
            await reader.read_entries(299, 300)
        metadata, _ = await client.read_metadata(writer.ledger_id)
        assert metadata.state is LedgerState.CLOSED and metadata.last_entry_id == 299
        assert (metadata.ensemble_size, metadata.write_quorum, metadata.ack_quorum) == quorums
        await client.delete_ledger(writer.ledger_id)
        with pytest.raises(NoSuchLedgerError):
            await client.open_ledger(writer.ledger_id)
    finally:
        await client.close()


async def test_recovery_of_an_abandoned_writer_keeps_every_acknowledged_entry(cluster) -> None:
    async with writer_and_recoverer(cluster) as (old, new):
        writer = await old.create_ledger()
        acknowledged: list[int] = []
        futures = [writer.add_entry(payload(i)) for i in range(500)]
        for future in futures:
            future.add_done_callback(
                lambda f: acknowledged.append(f.result()) if not f.exception() else None)
        while len(acknowledged) < 200:
            await asyncio.sleep(0.001)
        # the writer is abandoned here, adds still in flight; a new owner recovers the ledger
        reader = await new.open_ledger(writer.ledger_id, recovery=True)
        assert reader.is_closed
        assert reader.last_add_confirmed >= max(acknowledged)
        stored = await reader.read_entries(0, reader.last_add_confirmed)
        assert stored == [payload(i) for i in range(reader.last_add_confirmed + 1)]
        # the old writer is fenced: what it still sends is refused
        await asyncio.gather(*futures, return_exceptions=True)
        late = writer.add_entry(b"after the fence") if writer._error is None else None
        if late is not None:
            with pytest.raises(LedgerFencedError):
                await late
        with pytest.raises(LedgerFencedError):
            await writer.close()
        assert max(acknowledged) <= reader.last_add_confirmed


async def test_a_run_of_adds_completes_once_in_order_and_fails_whole_when_fenced(cluster) -> None:
    async with writer_and_recoverer(cluster) as (old, new):
        writer = await old.create_ledger()
        sizes = [1, 5, 3, 40, 2]
        answers: list[tuple[int, BaseException | None]] = []
        done = asyncio.get_running_loop().create_future()

        def on_done(last_entry_id: int, error: BaseException | None) -> None:
            answers.append((last_entry_id, error))
            if len(answers) == len(sizes):
                done.set_result(None)

        start = 0
        for size in sizes:
            writer.add_entries_with_callback([payload(i) for i in range(start, start + size)], on_done)
            start += size
        await asyncio.wait_for(done, 30)
        assert answers == [(0, None), (5, None), (8, None), (48, None), (50, None)]
        assert await writer.read_entries(0, 50) == [payload(i) for i in range(51)]
        await new.open_ledger(writer.ledger_id, recovery=True)   # fences the writer
        failed = asyncio.get_running_loop().create_future()
        writer.add_entries_with_callback([b"x", b"y"], lambda last, error: failed.set_result((last, error)))
        last, error = await asyncio.wait_for(failed, 30)
        assert last == 52 and isinstance(error, LedgerFencedError)


async def test_a_bookie_killed_mid_write_is_replaced(cluster) -> None:
    client = await open_client(cluster, 2, 2, 2)
    victim_index = None
    try:
        writer = await client.create_ledger()
        first = [writer.add_entry(payload(i)) for i in range(200)]
        await asyncio.gather(*first[:50])
        victim = writer.metadata.last_ensemble[0]
        victim_index = [b.bookie_id for b in cluster.bookie_list].index(victim)
        cluster.kill_bookie(victim_index)
        more = [writer.add_entry(payload(i)) for i in range(200, 400)]
        ids = await asyncio.gather(*first, *more)
        assert ids == list(range(400))
        assert writer.ensemble_changes >= 1
        assert victim not in writer.metadata.last_ensemble
        await writer.close()
        reader = await client.open_ledger(writer.ledger_id)
        assert reader.last_add_confirmed == 399
        assert await reader.read_entries(0, 399) == [payload(i) for i in range(400)]
        metadata, _ = await client.read_metadata(writer.ledger_id)
        assert len(metadata.segments) >= 2
    finally:
        await client.close()
        if victim_index is not None:
            await asyncio.to_thread(cluster.restart_bookie, victim_index)


async def test_bookkeepers_own_tools_read_our_ledger(cluster) -> None:
    client = await open_client(cluster)
    try:
        writer = await client.create_ledger()
        await asyncio.gather(*[writer.add_entry(b"hello-%d" % i) for i in range(10)])
        await writer.close()
        ledger_id = writer.ledger_id
    finally:
        await client.close()
    shown = await asyncio.to_thread(cluster.bookie_shell, "ledgermetadata", "-ledgerid", str(ledger_id))
    assert "lastEntryId=9" in shown.stdout.replace(" ", ""), shown.stdout[-3000:]
    assert "CLOSED" in shown.stdout, shown.stdout[-3000:]
    read = await asyncio.to_thread(cluster.bookie_shell, "readledger", "-ledgerid", str(ledger_id),
                                   "-msg")
    for i in range(10):
        assert f"hello-{i}" in read.stdout, read.stdout[-3000:]
    assert "Exception" not in read.stdout, read.stdout[-3000:]


async def test_recovery_while_a_bookie_is_dead_and_the_old_writer_still_tries(cluster) -> None:
    """E2/Qw2/Qa2 on 3 bookies: a bookie of the ensemble dies mid-write; the old writer (still
    running) changes its ensemble while a new owner recovers the ledger, which must itself
    move the re-added entries off the dead bookie. Nothing the old writer got acknowledged
    is lost, whoever wins the race."""
    old = await open_client(cluster, 2, 2, 2)
    new = await open_client(cluster, 2, 2, 2)
    victim_index = None
    try:
        writer = await old.create_ledger()
        acknowledged: list[int] = []
        futures = [writer.add_entry(payload(i)) for i in range(600)]
        for future in futures:
            future.add_done_callback(
                lambda f: acknowledged.append(f.result()) if not f.exception() else None)
        while len(acknowledged) < 100:
            await asyncio.sleep(0.001)
        victim = writer.metadata.last_ensemble[0]
        victim_index = [b.bookie_id for b in cluster.bookie_list].index(victim)
        cluster.kill_bookie(victim_index)
        reader = await new.open_ledger(writer.ledger_id, recovery=True)
        await asyncio.gather(*futures, return_exceptions=True)
        assert reader.is_closed
        assert max(acknowledged) <= reader.last_add_confirmed
        stored = await reader.read_entries(0, reader.last_add_confirmed)
        assert stored == [payload(i) for i in range(reader.last_add_confirmed + 1)]
        metadata, _ = await new.read_metadata(writer.ledger_id)
        assert metadata.state is LedgerState.CLOSED
        assert metadata.last_entry_id == reader.last_add_confirmed
    finally:
        await old.close()
        await new.close()
        if victim_index is not None:
            await asyncio.to_thread(cluster.restart_bookie, victim_index)


async def test_readers_follow_a_ledger_still_being_written(cluster) -> None:
    writer_client = await open_client(cluster)
    reader_client = await open_client(cluster)
    try:
        writer = await writer_client.create_ledger()
        await asyncio.gather(*[writer.add_entry(payload(i)) for i in range(10)])
        local = await writer_client.open_ledger(writer.ledger_id, recovery=False)
        remote = await reader_client.open_ledger(writer.ledger_id, recovery=False)
        assert not remote.is_closed and remote.last_add_confirmed <= 9
        for i in range(10, 20):     # one at a time: entry i carries LAC i - 1
            await writer.add_entry(payload(i))
        assert local.last_add_confirmed == 19           # the writer's own view is live
        assert await local.read_entries(15, 19) == [payload(i) for i in range(15, 20)]
        # another process sees the LAC its bookies report (piggybacked: up to the last one)
        assert await remote.read_entries(0, 18) == [payload(i) for i in range(19)]
        await writer.close()
        assert await remote.read_entries(19, 19) == [payload(19)]
        assert remote.is_closed and remote.last_add_confirmed == 19
    finally:
        await writer_client.close()
        await reader_client.close()


async def test_an_idle_writer_sends_its_lac_so_readers_elsewhere_see_its_last_entry(cluster) -> None:
    """bookkeeperExplicitLacIntervalInMills: without it a reader on another client stops one
    entry short of an idle writer (the last LAC only rides on a next add); with it, READ_LAC
    gives the reader the writer's LAC once the writer is idle that long."""
    quiet = await open_client(cluster)
    flushing = await BookKeeperClient.open(cluster.metadata_service_uri, 3, 3, 2,
                                           explicit_lac_interval_s=0.2)
    reader_client = await open_client(cluster)
    try:
        for writer_client, expected in ((quiet, 18), (flushing, 19)):
            writer = await writer_client.create_ledger()
            for i in range(20):
                await writer.add_entry(payload(i))
            remote = await reader_client.open_ledger(writer.ledger_id, recovery=False)
            for _ in range(100):
                if remote.last_add_confirmed >= expected:
                    break
                await asyncio.sleep(0.1)
                await remote.refresh()
            await asyncio.sleep(0.5)   # more than the interval: nothing newer shows up
            await remote.refresh()
            assert remote.last_add_confirmed == expected
            assert await remote.read_entries(0, expected) == [payload(i) for i in range(expected + 1)]
            assert not remote.is_closed
            await writer.close()
    finally:
        for client in (quiet, flushing, reader_client):
            await client.close()


async def test_the_explicit_lac_reaches_bookies_holding_no_entry_of_the_ledger(cluster) -> None:
    """E3/Qw2/Qa1, one entry: the third bookie gets only the explicit LAC; it must still count
    as an answer (a reader needs Qw - Qa + 1 = 2 of every write set)."""
    writer_client = await BookKeeperClient.open(cluster.metadata_service_uri, 3, 2, 1,
                                                explicit_lac_interval_s=0.1)
    reader_client = await open_client(cluster)
    try:
        writer = await writer_client.create_ledger()
        await writer.add_entry(payload(0))
        remote = await reader_client.open_ledger(writer.ledger_id, recovery=False)
        for _ in range(100):
            if remote.last_add_confirmed == 0:
                break
            await asyncio.sleep(0.1)
            await remote.refresh()
        assert await remote.read_entries(0, 0) == [payload(0)]
        await writer.close()
    finally:
        await writer_client.close()
        await reader_client.close()


async def test_reads_fall_back_to_another_replica_when_one_is_unreachable(cluster) -> None:
    from bookkeeper.bk.reads import LedgerReadHandle
    from bookkeeper.cluster_kit.cluster import free_port
    client = await open_client(cluster)
    try:
        writer = await client.create_ledger()
        await asyncio.gather(*[writer.add_entry(payload(i)) for i in range(12)])
        await writer.close()
        metadata, _ = await client.read_metadata(writer.ledger_id)
        gone = f"127.0.0.1:{free_port()}"               # nobody listens there
        broken = metadata.with_ensemble(0, (gone,) + metadata.last_ensemble[1:])
        reader = LedgerReadHandle(client, writer.ledger_id, broken, 11, metadata.length)
        assert await reader.read_entries(0, 11) == [payload(i) for i in range(12)]
    finally:
        await client.close()


async def test_a_hung_bookie_is_read_around_speculatively(cluster) -> None:
    writer_client = await open_client(cluster)
    try:
        writer = await writer_client.create_ledger()
        await asyncio.gather(*[writer.add_entry(payload(i)) for i in range(30)])
        await writer.close()
    finally:
        await writer_client.close()
    reader_client = await BookKeeperClient.open(cluster.metadata_service_uri, 3, 3, 2,
                                                speculative_read_s=0.3)
    hung = writer.metadata.last_ensemble[0]
    index = [b.bookie_id for b in cluster.bookie_list].index(hung)
    try:
        reader = await reader_client.open_ledger(writer.ledger_id)
        cluster.pause_bookie(index)
        started = asyncio.get_running_loop().time()
        assert await reader.read_entries(0, 29) == [payload(i) for i in range(30)]
        assert asyncio.get_running_loop().time() - started < 2.0
    finally:
        cluster.resume_bookie(index)
        await reader_client.close()
