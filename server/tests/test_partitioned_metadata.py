"""PartitionedMetadata: counts read once per namespace from the embedded store and kept in
step with every change made through it; with another writer (keep=False) every question reads."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bookkeeper.errors import MetadataBadVersionError
from bookkeeper.metadata_store import SqliteMetadataStore
from server.errors import NotAllowed, TopicNotFound
from server.topics.partitioned_metadata import PartitionedMetadata
from server.topics.topic_name import TopicName

NAME = TopicName.parse("persistent://public/default/orders")


class CountingReads:
    def __init__(self, store: SqliteMetadataStore) -> None:
        self.store, self.reads = store, 0

    async def get(self, path):
        self.reads += 1
        return await self.store.get(path)

    async def children(self, path):
        self.reads += 1
        return await self.store.children(path)

    def __getattr__(self, name):
        return getattr(self.store, name)


@pytest.mark.parametrize("keep", [True, False])
async def test_counts_follow_creation_growth_and_deletion(tmp_path: Path, keep: bool) -> None:
    store = await SqliteMetadataStore.open(tmp_path / "metadata.db")
    try:
        metadata = PartitionedMetadata(store, keep)
        assert await metadata.count(NAME) == 0
        await metadata.create(NAME, 3)
        assert await metadata.count(NAME) == 3
        with pytest.raises(MetadataBadVersionError):
            await metadata.create(NAME, 4)
        with pytest.raises(NotAllowed):
            await metadata.grow(NAME, 3)
        await metadata.grow(NAME, 5)
        assert await metadata.count(NAME) == 5 and await metadata.count(NAME.partition(0)) == 0
        assert await metadata.names("public/default", "persistent") == [str(NAME)]
        await metadata.delete(NAME)
        assert await metadata.count(NAME) == 0
        with pytest.raises(TopicNotFound):
            await metadata.grow(NAME, 6)
    finally:
        await store.close()


async def test_a_namespace_is_read_once_and_a_creation_racing_a_read_is_seen(tmp_path: Path) -> None:
    store = await SqliteMetadataStore.open(tmp_path / "metadata.db")
    try:
        counting = CountingReads(store)
        metadata = PartitionedMetadata(counting, keep=True)
        assert await asyncio.gather(*(metadata.count(NAME) for _ in range(50))) == [0] * 50
        reads = counting.reads
        assert await metadata.count(TopicName.parse("persistent://public/default/other")) == 0
        assert counting.reads == reads
        metadata._forget(NAME)   # as a change made elsewhere in the namespace would
        asking = asyncio.ensure_future(metadata.count(NAME))
        await asyncio.sleep(0)   # its read of the namespace is under way
        await metadata.create(NAME, 2)
        assert await asking in (0, 2)   # asked before the creation ended
        assert await metadata.count(NAME) == 2
    finally:
        await store.close()
