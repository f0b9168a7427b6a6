"""Schemas by topic: versioned, persisted in the metadata store, shared by a topic's partitions.

A new definition becomes a new version when the topic's compatibility strategy allows it
(server/schema_compatibility.py); the strategy is the topic's policy, else the namespace's
(`schema_compatibility_strategy`), else the broker's `schemaCompatibilityStrategy`. With the
namespace's `is_allow_auto_update_schema` false, only the admin API adds versions: producers
(and consumers adopting a schema) must use one the topic already has, as Pulsar.
Producers and consumers that carry no schema (raw bytes) are not checked, as in Pulsar's
default (schemaValidationEnforced=false).

Deleting a schema adds a tombstone version, as Pulsar does: the versions before it stay in the
store but are neither served (latest or by number) nor checked against, and the next schema
starts a new version after the tombstone. A forced delete wipes every version.
"""

from __future__ import annotations

import asyncio
import json
import logging
from base64 import b64decode, b64encode
from typing import Any, Protocol
from urllib.parse import quote

from managed_ledger.interfaces import MetadataStore
from protocol import pulsar_api_pb2 as pb
from server.errors import IncompatibleSchema
from server.policies.namespace_policies import ALLOW_AUTO_UPDATE_SCHEMA, SCHEMA_COMPATIBILITY_STRATEGY

from .schema_compatibility import Strategy, check_consumer, check_producer, effective
from .topic_name import TopicName

log = logging.getLogger(__name__)

#: Types that describe how the client decodes, not what is stored: never registered.
_UNCHECKED = {pb.Schema.Type.Value("None"), pb.Schema.AutoConsume}


#: The version GET_OR_CREATE_SCHEMA gives bytes (no schema), which is never registered; clients
#: stamp it on messages (Java's dead-letter producer, Go's bytes producer) and may look it up.
BYTES_VERSION = b""
BYTES_SCHEMA = pb.Schema(name="bytes", type=pb.Schema.Type.Value("None"), schema_data=b"")


def schema_version_bytes(version: int) -> bytes:
    """Schema versions travel as 8-byte big-endian integers."""
    return version.to_bytes(8, "big")


class PolicyView(Protocol):
    async def of(self, topic: TopicName) -> dict[str, Any]:
        """The policies in force for the topic (server/policies/applied.py)."""


class SchemaRegistry:
    def __init__(self, metadata: MetadataStore, policies: PolicyView, broker_strategy: Strategy = Strategy.FULL) -> None:
        self._metadata = metadata
        self._policies = policies
        self._broker_strategy = broker_strategy
        #: Registrations and deletions one at a time: two producers of a new topic racing to
        #: register the same schema must both get its version, not a metadata conflict.
        self._writing = asyncio.Lock()

    @staticmethod
    def _path(topic: TopicName) -> str:
        parent = topic.partitioned_parent
        return f"/schemas/{quote(parent.namespace, safe='')}/{quote(parent.local_name, safe='')}"

    async def _versions(self, topic: TopicName) -> tuple[list[pb.Schema | None], int | None]:
        """Every version ever stored (None for a delete tombstone), and the store's version."""
        stored = await self._metadata.get(self._path(topic))
        if stored is None:
            return [], None
        data, meta_version = stored
        versions: list[pb.Schema | None] = []
        for encoded in json.loads(data):
            versions.append(None if encoded is None else pb.Schema.FromString(b64decode(encoded)))
        return versions, meta_version

    async def _store(self, topic: TopicName, versions: list[pb.Schema | None], meta_version: int | None) -> None:
        encoded = [None if v is None else b64encode(v.SerializeToString()).decode() for v in versions]
        await self._metadata.put(self._path(topic), json.dumps(encoded).encode(),
                                 -1 if meta_version is None else meta_version)

    async def get(self, topic: TopicName, version: int | None) -> tuple[pb.Schema, bytes] | None:
        """The latest version, or the one numbered `version`; nothing from before the last
        delete (as Pulsar: a deleted schema cannot be had, whatever its number)."""
        live = dict(_live((await self._versions(topic))[0]))
        index = max(live, default=-1) if version is None else version
        schema = live.get(index)
        return None if schema is None else (schema, schema_version_bytes(index))

    async def all_versions(self, topic: TopicName) -> list[tuple[int, pb.Schema]]:
        """(version, schema) of the versions since the last delete."""
        return _live((await self._versions(topic))[0])

    async def delete(self, topic: TopicName, force: bool = False) -> int | None:
        """Delete the schema: a tombstone version (its number is returned), or with force every
        version (the last number is returned). None when there is no schema to delete."""
        async with self._writing:
            versions, meta_version = await self._versions(topic)
            if not _live(versions):
                return None
            if force:
                await self._metadata.delete(self._path(topic), meta_version)
                log.info("schema of %s deleted with every version", topic.partitioned_parent)
                return len(versions) - 1
            versions.append(None)
            await self._store(topic, versions, meta_version)
        log.info("schema of %s deleted (tombstone version %d)", topic.partitioned_parent, len(versions) - 1)
        return len(versions) - 1

    async def strategy(self, topic: TopicName) -> Strategy:
        """The compatibility strategy that applies to the topic: its own, its namespace's, the
        broker's (UNDEFINED at a level means "ask the next one")."""
        applied = (await self._policies.of(topic)).get(SCHEMA_COMPATIBILITY_STRATEGY)
        return effective(Strategy(applied) if applied else None, self._broker_strategy)

    async def register(self, topic: TopicName, schema: pb.Schema, by_admin: bool = False) -> bytes | None:
        """Version of this (producer's, or with by_admin an uploaded) schema on the topic,
        adding it as a new version when the topic's strategy allows."""
        if schema.type in _UNCHECKED:
            return None
        async with self._writing:
            return await self._register(topic, schema, by_admin)

    async def is_compatible(self, topic: TopicName, schema: pb.Schema) -> tuple[bool, Strategy]:
        """Would the schema be taken as a new version (the admin API's compatibility test)?"""
        strategy = await self.strategy(topic)
        live = [known for _, known in _live((await self._versions(topic))[0])]
        try:
            check_producer(live, schema, strategy)
        except IncompatibleSchema:
            return False, strategy
        return True, strategy

    async def check_for_consumer(self, topic: TopicName, schema: pb.Schema, topic_idle: bool) -> None:
        """A consumer's schema is checked against the topic's and never adds a version; a topic
        without a schema adopts it only while idle (no producers, consumers or data), as Pulsar
        does: readers of a topic (Spark's, say) must not turn its schema into theirs."""
        if schema.type in _UNCHECKED:
            return
        async with self._writing:
            live = [known for _, known in _live((await self._versions(topic))[0])]
            if live:
                check_consumer(live, schema, await self.strategy(topic))
            elif topic_idle:
                await self._register(topic, schema, by_admin=False)

    async def _register(self, topic: TopicName, schema: pb.Schema, by_admin: bool) -> bytes:
        versions, meta_version = await self._versions(topic)
        live = _live(versions)
        for index, known in live:
            if _same(known, schema):
                return schema_version_bytes(index)
        if not by_admin and not await self._auto_update_allowed(topic):
            raise IncompatibleSchema("Schema not found and schema auto updating is disabled.")
        check_producer([known for _, known in live], schema, await self.strategy(topic))
        versions.append(schema)
        await self._store(topic, versions, meta_version)
        log.info("schema version %d registered for %s", len(versions) - 1, topic.partitioned_parent)
        return schema_version_bytes(len(versions) - 1)

    async def _auto_update_allowed(self, topic: TopicName) -> bool:
        allowed = (await self._policies.of(topic)).get(ALLOW_AUTO_UPDATE_SCHEMA)
        return allowed is not False


def _live(versions: list[pb.Schema | None]) -> list[tuple[int, pb.Schema]]:
    """(number, schema) of the versions after the last tombstone."""
    tombstones = [index for index, schema in enumerate(versions) if schema is None]
    first = tombstones[-1] + 1 if tombstones else 0
    return [(index, versions[index]) for index in range(first, len(versions))]


def _same(a: pb.Schema, b: pb.Schema) -> bool:
    """Pulsar identifies a schema by its type and definition; names and properties differ
    between clients (Java's STRING carries properties Python's lacks) without making a new
    version."""
    return a.type == b.type and a.schema_data == b.schema_data
