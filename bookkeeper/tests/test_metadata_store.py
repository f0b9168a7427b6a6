"""Metadata store: versions, conditional writes, children, durability across reopen."""

from __future__ import annotations

import asyncio
from pathlib import Path
from urllib.parse import quote

import pytest

from bookkeeper.errors import MetadataBadVersionError, MetadataNotFoundError, MetadataStoreError
from bookkeeper.metadata_store import SqliteMetadataStore


async def test_versions_and_conditional_puts(tmp_path: Path) -> None:
    store = await SqliteMetadataStore.open(tmp_path / "m.db")
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


async def test_delete_with_and_without_version(tmp_path: Path) -> None:
    store = await SqliteMetadataStore.open(tmp_path / "m.db")
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


async def test_children_lists_direct_children_of_encoded_names(tmp_path: Path) -> None:
    store = await SqliteMetadataStore.open(tmp_path / "m.db")
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
    finally:
        await store.close()


async def test_rejects_malformed_paths(tmp_path: Path) -> None:
    store = await SqliteMetadataStore.open(tmp_path / "m.db")
    try:
        for bad in ("relative", "/trailing/", "/double//slash"):
            with pytest.raises(MetadataStoreError):
                await store.put(bad, b"x")
    finally:
        await store.close()


async def test_values_survive_reopen(tmp_path: Path) -> None:
    store = await SqliteMetadataStore.open(tmp_path / "m.db")
    await store.put("/a", b"\x00binary\xff")
    await store.put("/a", b"\x00binary\xfe")
    await store.close()
    store = await SqliteMetadataStore.open(tmp_path / "m.db")
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
