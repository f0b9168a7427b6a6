"""What the ZooKeeper store adds to the contract: ephemeral nodes, watches, session expiry,
implicit parents, and the metadataStoreUrl syntax."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss, NoNodeError, SessionExpiredError

from bookkeeper.errors import MetadataBadVersionError, MetadataSessionLostError, MetadataStoreError
from bookkeeper.zk_metadata_store import SessionEvent, ZkMetadataStore, _translate, parse_zk_url


def test_parse_url() -> None:
    assert parse_zk_url("zk:127.0.0.1:2181") == ("127.0.0.1:2181", "")
    assert parse_zk_url("zk:a:1,b:2/pulsar/x/") == ("a:1,b:2", "/pulsar/x")
    assert parse_zk_url("zk://a:1/") == ("a:1", "")
    with pytest.raises(MetadataStoreError):
        parse_zk_url("sqlite:/tmp/x")


def _url(cluster) -> str:
    return f"{cluster.metadata_store_url}/zk-tests/{uuid.uuid4().hex}"


async def _until(condition, timeout: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.05)


@pytest.mark.cluster
async def test_implicit_parents_read_as_absent(cluster) -> None:
    store = await ZkMetadataStore.open(_url(cluster))
    try:
        await store.put("/ml/topic/cursor", b"c")
        assert await store.get("/ml/topic") is None
        assert await store.put("/ml/topic", b"ledger", -1) >= 0
        with pytest.raises(MetadataBadVersionError):
            await store.put("/ml/topic", b"again", -1)
        await store.delete("/ml/topic")          # has a child: emptied, stays a parent
        assert await store.get("/ml/topic") is None
        assert await store.children("/ml/topic") == ["cursor"]
        await store.delete("/ml/topic/cursor")   # the empty parents go with it
        assert await store.children("/") == []
    finally:
        await store.close()


@pytest.mark.cluster
async def test_ephemeral_node_goes_with_its_session(cluster) -> None:
    url = _url(cluster)
    owner = await ZkMetadataStore.open(url, session_timeout_s=4.0)
    other = await ZkMetadataStore.open(url)
    try:
        events: list[SessionEvent] = []
        owner.add_session_listener(events.append)
        await owner.put_ephemeral("/owners/bundle-1", b"broker-a")
        with pytest.raises(MetadataBadVersionError):
            await other.put_ephemeral("/owners/bundle-1", b"broker-b")
        seen: list[tuple[bytes, int] | None] = []
        stop = await other.watch_data("/owners/bundle-1", seen.append)
        children: list[list[str]] = []
        await other.watch_children("/owners", children.append)
        assert seen == [(b"broker-a", 0)]
        assert children[-1] == ["bundle-1"]

        # expire owner's session the way ZooKeeper does it: another client takes the
        # session id and closes it
        session_id, password = owner.client.client_id
        thief = KazooClient(hosts=cluster.zk_address, client_id=(session_id, password))
        await asyncio.to_thread(thief.start, 10)
        await asyncio.to_thread(thief.stop)
        thief.close()

        await _until(lambda: SessionEvent.EXPIRED in events)
        await _until(lambda: seen[-1] is None)
        await _until(lambda: children[-1] == [])
        assert await other.get("/owners/bundle-1") is None
        # the other broker takes it over; owner's client is back with a new session
        await other.put_ephemeral("/owners/bundle-1", b"broker-b")
        await _until(lambda: seen[-1] == (b"broker-b", 0))
        stop()
        await other.put("/owners/bundle-1", b"changed")
        await asyncio.sleep(0.3)
        assert seen[-1] == (b"broker-b", 0)      # stopped watches hear nothing more
        await _until(lambda: SessionEvent.RECONNECTED in events[events.index(SessionEvent.EXPIRED):])
        assert await owner.get("/owners/bundle-1") == (b"changed", 1)
    finally:
        await owner.close()
        await other.close()


@pytest.mark.cluster
async def test_many_concurrent_operations_do_not_block_the_loop(cluster) -> None:
    store = await ZkMetadataStore.open(_url(cluster))
    try:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.001)

        task = asyncio.create_task(ticker())
        versions = await asyncio.gather(*[store.put(f"/c/{i}", b"%d" % i) for i in range(300)])
        task.cancel()
        assert versions == [0] * 300
        assert len(await store.children("/c")) == 300
        assert ticks > 5
    finally:
        await store.close()


def test_a_lost_session_is_an_error_of_its_own() -> None:
    """Expected while a broker is between sessions: callers log it in one line, no traceback."""
    for lost in (SessionExpiredError(), ConnectionLoss()):
        assert isinstance(_translate(lost, "/x"), MetadataSessionLostError)
    assert not isinstance(_translate(NoNodeError(), "/x"), MetadataSessionLostError)
