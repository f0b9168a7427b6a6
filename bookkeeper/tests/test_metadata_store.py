"""Metadata store contract: versions, conditional writes, children, durability across reopen.

The contract tests run against both implementations: the embedded SQLite store and the
ZooKeeper store (on the session's real ZooKeeper, each test under its own chroot).
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from urllib.parse import quote

import pytest

from bookkeeper.errors import MetadataBadVersionError, MetadataNotFoundError, MetadataStoreError
from bookkeeper.metadata_store import SqliteMetadataStore
from bookkeeper.zk_metadata_store import ZkMetadataStore

KINDS = ["sqlite", pytest.param("zk", marks=pytest.mark.cluster)]


@pytest.fixture(params=KINDS)
def open_store(request: pytest.FixtureRequest, tmp_path: Path):
    """A function opening the store under test (the same one again on every call)."""
    if request.param == "sqlite":
        return lambda: SqliteMetadataStore.open(tmp_path / "m.db")
    cluster = request.getfixturevalue("cluster")
    url = f"{cluster.metadata_store_url}/contract/{uuid.uuid4().hex}"
    return lambda: ZkMetadataStore.open(url)


async def test_versions_and_conditional_puts(open_store) -> None:
    store = await open_store()
    try:
        assert await store.get("/a") is None
        assert await store.put("/a", b"one", -1) == 0
        with pytest.raises(MetadataBadVersionError):
            await store.put("/a", b"again", -1)
        assert await store.put("/a", b"two", 0) == 1
        with pytest.raises(MetadataBadVersionError):
            await store.put("/a", b"stale", 0)
        assert await store.put("/a", b"three") == 2
        assert await store.get("/a") == (b"three", 2)
        with pytest.raises(MetadataNotFoundError):
            await store.put("/missing", b"x", 3)
    finally:
        await store.close()


async def test_delete_with_and_without_version(open_store) -> None:
    store = await open_store()
    try:
        await store.put("/a", b"x")
        with pytest.raises(MetadataBadVersionError):
            await store.delete("/a", 5)
        await store.delete("/a", 0)
        assert await store.get("/a") is None
        with pytest.raises(MetadataNotFoundError):
            await store.delete("/a")
    finally:
        await store.close()


async def test_children_lists_direct_children_of_encoded_names(open_store) -> None:
    store = await open_store()
    topic = quote("persistent://public/default/my-topic", safe="")
    try:
        await store.put(f"/ml/{topic}", b"ledger")
        await store.put(f"/ml/{topic}/{quote('sub/one', safe='')}", b"cursor")
        await store.put("/ml/other/deep/node", b"implicit parents")
        await store.put("/mlx", b"not a child")
        assert await store.children("/ml") == sorted([topic, "other"])
        assert await store.children(f"/ml/{topic}") == ["sub%2Fone"]
        assert await store.children("/") == ["ml", "mlx"]
        assert await store.children("/nothing") == []
        assert await store.children("/ml", "persistent") == [topic]
        assert await store.children("/ml", topic) == [topic]   # a name equal to the start counts
        assert await store.children("/ml", "oth") == ["other"]
        assert await store.children("/ml", "x") == []
    finally:
        await store.close()


async def test_rejects_malformed_paths(open_store) -> None:
    store = await open_store()
    try:
        for bad in ("relative", "/trailing/", "/double//slash"):
            with pytest.raises(MetadataStoreError):
                await store.put(bad, b"x")
    finally:
        await store.close()


async def test_values_survive_reopen(open_store) -> None:
    store = await open_store()
    await store.put("/a", b"\x00binary\xff")
    await store.put("/a", b"\x00binary\xfe")
    await store.close()
    store = await open_store()
    try:
        assert await store.get("/a") == (b"\x00binary\xfe", 1)
    finally:
        await store.close()


async def test_concurrent_writes_share_commits(tmp_path: Path) -> None:
    store = await SqliteMetadataStore.open(tmp_path / "m.db")
    try:
        await store.put("/taken", b"x")
        commits_before = store.commits
        outcomes = await asyncio.gather(
            *[store.put(f"/cursor-{i}", b"state %d" % i) for i in range(200)],
            store.put("/taken", b"y", -1),
            return_exceptions=True)
        assert outcomes[:200] == [0] * 200
        assert isinstance(outcomes[200], MetadataBadVersionError)
        assert store.commits - commits_before < 50
        assert await store.get("/cursor-199") == (b"state 199", 0)
        assert await store.get("/taken") == (b"x", 0)
    finally:
        await store.close()


async def test_unopenable_database_fails_cleanly(tmp_path: Path) -> None:
    (tmp_path / "a-directory.db").mkdir()
    with pytest.raises(MetadataStoreError):
        await SqliteMetadataStore.open(tmp_path / "a-directory.db")


async def test_children_values_reads_the_direct_children_in_one_query(tmp_path: Path) -> None:
    store = await SqliteMetadataStore.open(tmp_path / "m.db")
    try:
        await store.put("/ml/a", b"1")
        await store.put("/ml/b", b"2")
        await store.put("/ml/b/cursor", b"deeper")   # a grandchild: not a child's value
        await store.put("/ml/c/only-below", b"x")     # a child without a value of its own
        await store.put("/mlx", b"sibling")
        assert await store.children_values("/ml") == {"a": b"1", "b": b"2"}
        assert await store.children_values("/none") == {}
    finally:
        await store.close()
