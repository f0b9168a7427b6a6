"""Partitioned topics' metadata: the partition count of each, where Pulsar keeps it
(/admin/partitioned-topics/{domain}/{tenant}/{namespace}/{encoded local name}, {"partitions": n}).

Clients ask for a topic's partitions before each producer and consumer they make, so a topic's
first use asks several times. With the embedded store as configuration store this broker is
the only writer, and the counts of a namespace are read once (one listing, one read per
partitioned topic) and kept, each change made here dropping them. A cluster's store, or a
separate configuration store, has other writers: there every question is a read.
"""

from __future__ import annotations

import asyncio
import json
from typing import Protocol
from urllib.parse import quote, unquote

from server.errors import NotAllowed, TopicNotFound

from .topic_name import TopicName

ROOT = "/admin/partitioned-topics"
#: Namespaces whose counts are kept at most (names asked for need not exist).
MAX_KEPT_NAMESPACES = 1000


class Store(Protocol):
    async def get(self, path: str) -> tuple[bytes, int] | None: ...
    async def put(self, path: str, value: bytes, expected_version: int | None = None) -> int: ...
    async def delete(self, path: str, expected_version: int | None = None) -> None: ...
    async def children(self, path: str) -> list[str]: ...


class PartitionedMetadata:
    def __init__(self, store: Store, keep: bool) -> None:
        self._store = store
        self._keep = keep
        #: namespace path -> its counts by encoded local name, read once (see count)
        self._kept: dict[str, asyncio.Future[dict[str, int]]] = {}

    async def count(self, name: TopicName) -> int:
        """The stored partition count of this exact name, 0 when it is not a partitioned topic."""
        if not self._keep:
            stored = await self._store.get(_path(name))
            return _decode(stored[0]) if stored else 0
        counts = await asyncio.shield(self._counts_of(_namespace_path(name)))
        return counts.get(quote(name.local_name, safe=""), 0)

    async def create(self, name: TopicName, partitions: int) -> None:
        """MetadataBadVersionError when it exists."""
        try:
            await self._store.put(_path(name), _encode(partitions), -1)
        finally:
            self._forget(name)

    async def grow(self, name: TopicName, partitions: int) -> None:
        """Partitions can only be added, never removed (as in Pulsar); a concurrent change
        makes this fail (MetadataBadVersionError) rather than undo it."""
        stored = await self._store.get(_path(name))
        if stored is None:
            raise TopicNotFound(f"Partitioned topic {name} does not exist")
        if partitions <= _decode(stored[0]):
            raise NotAllowed("The number of partitions can only be increased")
        try:
            await self._store.put(_path(name), _encode(partitions), stored[1])
        finally:
            self._forget(name)

    async def delete(self, name: TopicName) -> None:
        try:
            await self._store.delete(_path(name))
        finally:
            self._forget(name)

    async def names(self, namespace: str, domain: str) -> list[str]:
        tenant, _, local = namespace.partition("/")
        children = await self._store.children(f"{ROOT}/{domain}/{tenant}/{local}")
        return sorted(str(TopicName(domain, tenant, local, unquote(child))) for child in children)

    def _counts_of(self, namespace_path: str) -> asyncio.Future[dict[str, int]]:
        loading = self._kept.get(namespace_path)
        if loading is None:
            if len(self._kept) >= MAX_KEPT_NAMESPACES:
                self._kept.clear()
            loading = self._kept[namespace_path] = asyncio.ensure_future(self._read(namespace_path))
            loading.add_done_callback(lambda done: self._failed(namespace_path, done))
        return loading

    async def _read(self, namespace_path: str) -> dict[str, int]:
        counts = {}
        for child in await self._store.children(namespace_path):
            stored = await self._store.get(f"{namespace_path}/{child}")
            if stored is not None:
                counts[child] = _decode(stored[0])
        return counts

    def _failed(self, namespace_path: str, done: asyncio.Future) -> None:
        """A read that failed (the store is away) is not kept: the next question reads again."""
        if (done.cancelled() or done.exception() is not None) and self._kept.get(namespace_path) is done:
            del self._kept[namespace_path]

    def _forget(self, name: TopicName) -> None:
        """After a change (made or not): questions asked from now on read the namespace again;
        those waiting on a read begun before it take that read's answer."""
        self._kept.pop(_namespace_path(name), None)


def _namespace_path(name: TopicName) -> str:
    return f"{ROOT}/{name.domain}/{name.tenant}/{name.namespace_local}"


def _path(name: TopicName) -> str:
    return f"{_namespace_path(name)}/{quote(name.local_name, safe='')}"


def _encode(partitions: int) -> bytes:
    return json.dumps({"partitions": partitions}).encode()


def _decode(document: bytes) -> int:
    return json.loads(document)["partitions"]
