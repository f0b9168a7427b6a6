"""The schema registry over a real metadata store: identity by type and definition,
concurrent registrations of a new topic's schema, and which compatibility strategy applies."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import AsyncIterator

import pytest

from bookkeeper.metadata_store import SqliteMetadataStore
from protocol import pulsar_api_pb2 as pb
from server.errors import IncompatibleSchema
from server.policies.catalog import applied_view
from server.topics.schema_compatibility import Strategy
from server.topics.schema_registry import SchemaRegistry, schema_version_bytes
from server.topics.topic_name import TopicName

TOPIC = TopicName.parse("persistent://public/default/schemas")


class Policies:
    """The policies in force, as server/policies/applied.py gives them: topic over namespace."""

    def __init__(self, namespace: dict | None = None, topic: dict | None = None) -> None:
        self.namespace, self.topic = namespace or {}, topic or {}

    async def of(self, topic: TopicName) -> dict:
        return applied_view(self.namespace, self.topic if topic.partitioned_parent == TOPIC else {}, "standalone")


@contextlib.asynccontextmanager
async def registry_in(directory: Path) -> AsyncIterator[SchemaRegistry]:
    store = await SqliteMetadataStore.open(directory / "metadata.db")
    try:
        yield SchemaRegistry(store, Policies())
    finally:
        await store.close()


def string_schema(**properties: str) -> pb.Schema:
    return pb.Schema(name="", type=pb.Schema.String, schema_data=b"",
                     properties=[pb.KeyValue(key=k, value=v) for k, v in properties.items()])


async def test_racing_registrations_of_a_new_schema_share_version_zero(tmp_path: Path) -> None:
    async with registry_in(tmp_path) as registry:
        versions = await asyncio.gather(*(registry.register(TOPIC, string_schema()) for _ in range(4)))
        assert versions == [schema_version_bytes(0)] * 4
        assert len(await registry.all_versions(TOPIC)) == 1


async def test_properties_and_name_do_not_make_a_new_version(tmp_path: Path) -> None:
    async with registry_in(tmp_path) as registry:
        assert await registry.register(TOPIC, string_schema()) == schema_version_bytes(0)
        java_string = string_schema(__charset="UTF-8")
        java_string.name = "String"
        assert await registry.register(TOPIC, java_string) == schema_version_bytes(0)
        redefined = pb.Schema(name="r", type=pb.Schema.String, schema_data=b"other")
        assert await registry.register(TOPIC, redefined) == schema_version_bytes(1)


async def test_a_consumer_adopts_only_on_an_idle_topic_without_schema(tmp_path: Path) -> None:
    async with registry_in(tmp_path) as registry:
        await registry.check_for_consumer(TOPIC, string_schema(), topic_idle=False)
        assert await registry.all_versions(TOPIC) == []
        await registry.check_for_consumer(TOPIC, string_schema(), topic_idle=True)
        assert len(await registry.all_versions(TOPIC)) == 1
        other = pb.Schema(name="s", type=pb.Schema.String, schema_data=b"other")
        await registry.check_for_consumer(TOPIC, other, topic_idle=True)
        assert len(await registry.all_versions(TOPIC)) == 1
        with pytest.raises(IncompatibleSchema):
            await registry.check_for_consumer(TOPIC, pb.Schema(name="j", type=pb.Schema.Json), True)


def record_schema(*fields: str, kind: int = pb.Schema.Avro) -> pb.Schema:
    """A record whose fields are strings without default (adding one is not BACKWARD)."""
    definition = {"type": "record", "name": "R", "fields": [{"name": f, "type": "string"} for f in fields]}
    return pb.Schema(name="r", type=kind, schema_data=json.dumps(definition).encode())


async def test_the_strategy_comes_from_topic_then_namespace_then_broker(tmp_path: Path) -> None:
    store = await SqliteMetadataStore.open(tmp_path / "metadata.db")
    try:
        policies = Policies()
        registry = SchemaRegistry(store, policies, broker_strategy=Strategy.FORWARD)
        assert await registry.strategy(TOPIC) is Strategy.FORWARD
        policies.namespace["schema_compatibility_strategy"] = "UNDEFINED"
        assert await registry.strategy(TOPIC) is Strategy.FORWARD
        policies.namespace["schema_compatibility_strategy"] = "BACKWARD"
        assert await registry.strategy(TOPIC) is Strategy.BACKWARD
        policies.topic["schemaCompatibilityStrategy"] = "ALWAYS_COMPATIBLE"
        assert await registry.strategy(TOPIC.partition(2)) is Strategy.ALWAYS_COMPATIBLE
        assert await registry.strategy(TopicName.parse("other")) is Strategy.BACKWARD
    finally:
        await store.close()


async def test_producers_and_admin_under_the_strategy(tmp_path: Path) -> None:
    async with registry_in(tmp_path) as registry:
        assert await registry.register(TOPIC, record_schema("a")) == schema_version_bytes(0)
        assert await registry.is_compatible(TOPIC, record_schema("a", "b")) == (False, Strategy.FULL)
        with pytest.raises(IncompatibleSchema):
            await registry.register(TOPIC, record_schema("a", "b"))
        with pytest.raises(IncompatibleSchema):
            await registry.register(TOPIC, record_schema("a", "b"), by_admin=True)
        with pytest.raises(IncompatibleSchema):
            await registry.check_for_consumer(TOPIC, record_schema("a", "b"), topic_idle=False)
        await registry.check_for_consumer(TOPIC, record_schema("a"), topic_idle=False)
        assert len(await registry.all_versions(TOPIC)) == 1


async def test_without_auto_update_only_the_admin_adds_versions(tmp_path: Path) -> None:
    store = await SqliteMetadataStore.open(tmp_path / "metadata.db")
    try:
        registry = SchemaRegistry(store, Policies({"is_allow_auto_update_schema": False}))
        with pytest.raises(IncompatibleSchema):
            await registry.register(TOPIC, record_schema("a"))
        with pytest.raises(IncompatibleSchema):
            await registry.check_for_consumer(TOPIC, record_schema("a"), topic_idle=True)
        assert await registry.register(TOPIC, record_schema("a"), by_admin=True) == schema_version_bytes(0)
        assert await registry.register(TOPIC, record_schema("a")) == schema_version_bytes(0)
    finally:
        await store.close()
