"""/admin/v2/schemas/{tenant}/{namespace}/{topic}/schema: the topic's schema versions, in
Pulsar's GetSchemaResponse / PostSchemaPayload JSON, over the broker's schema registry.
POST adds a version under the topic's compatibility strategy (409 when incompatible; the
auto-update policy binds clients, not the admin); POST .../compatibility only tests it.
DELETE answers {"version": tombstone version} (`?force=true` wipes every version)."""

from __future__ import annotations

import json
import re
from typing import Any

from protocol import pulsar_api_pb2 as pb
from server import web
from server.errors import InvalidTopicName
from server.topics.schema_registry import SchemaRegistry
from server.topics.topic_base import key_values
from server.topics.topic_name import TopicName

from .errors import (BAD_REQUEST, NOT_FOUND, PRECONDITION_FAILED, RestError, query_flag, read_json, require,
                     rest_handler)
from .namespaces import Namespaces

SCHEMA_PATH = "/admin/v2/schemas/{tenant}/{namespace}/{topic}/schema"
#: Pulsar's SchemaType names where they are not the protocol's names in upper snake case.
_RENAMED = {"None": "BYTES", "Bool": "BOOLEAN"}


def _rest_type_name(proto_name: str) -> str:
    return _RENAMED.get(proto_name) or re.sub(r"(?<!^)(?=[A-Z])", "_", proto_name).upper()


_PROTO_TYPES = {_rest_type_name(name): value for name, value in pb.Schema.Type.items()
                if name not in ("AutoConsume", "External")}
_REST_TYPES = {value: name for name, value in _PROTO_TYPES.items()}


def schema_json(schema: pb.Schema, version: int) -> dict[str, Any]:
    return {
        "version": version, "type": _REST_TYPES.get(schema.type, "NONE"),
        "data": schema.schema_data.decode("utf-8", errors="replace"),
        "properties": key_values(schema.properties),
    }


def schema_from_payload(body: Any, topic: TopicName) -> pb.Schema:
    """PostSchemaPayload {type, schema, properties} -> the protocol's Schema."""
    require(isinstance(body, dict), BAD_REQUEST, "Schema payload must be a JSON object")
    kind = str(body.get("type", "")).upper()
    require(kind in _PROTO_TYPES, BAD_REQUEST, f"Unknown schema type {body.get('type')!r}")
    data, properties = body.get("schema") or "", body.get("properties") or {}
    require(isinstance(data, str), BAD_REQUEST, "schema must be a string")
    require(isinstance(properties, dict), BAD_REQUEST, "properties must be a JSON object")
    if kind in ("AVRO", "JSON"):
        try:
            json.loads(data)
        except json.JSONDecodeError:
            raise RestError(BAD_REQUEST, f"Invalid {kind} schema definition") from None
    schema = pb.Schema(name=str(topic), type=_PROTO_TYPES[kind], schema_data=data.encode())
    for key, value in sorted(properties.items()):
        schema.properties.add(key=str(key), value=str(value))
    return schema


def routes(registry: SchemaRegistry, namespaces: Namespaces) -> list[web.RouteDef]:
    async def topic_of(request: web.Request) -> TopicName:
        info = request.match_info
        try:
            name = TopicName.parse(f"persistent://{info['tenant']}/{info['namespace']}/{info['topic']}")
        except InvalidTopicName as exc:
            raise RestError(PRECONDITION_FAILED, str(exc)) from None
        await namespaces.get(name.namespace)
        return name

    async def answer(request: web.Request, version: int | None) -> web.Response:
        found = await registry.get(await topic_of(request), version)
        require(found is not None, NOT_FOUND, "Schema not found")
        schema, version_bytes = found
        return web.json_response(schema_json(schema, int.from_bytes(version_bytes, "big")))

    @rest_handler
    async def latest(request: web.Request) -> web.Response:
        return await answer(request, None)

    @rest_handler
    async def by_version(request: web.Request) -> web.Response:
        raw = request.match_info["version"]
        require(raw.isdigit(), BAD_REQUEST, "Schema version must be a non-negative integer")
        return await answer(request, int(raw))

    @rest_handler
    async def all_versions(request: web.Request) -> web.Response:
        versions = await registry.all_versions(await topic_of(request))
        return web.json_response({"getSchemaResponses": [schema_json(s, i) for i, s in versions]})

    @rest_handler
    async def post(request: web.Request) -> web.Response:
        topic = await topic_of(request)
        version = await registry.register(topic, schema_from_payload(await read_json(request), topic),
                                          by_admin=True)
        require(version is not None, PRECONDITION_FAILED, "Schemas of type BYTES are not stored")
        return web.json_response({"version": {"version": int.from_bytes(version, "big")}})

    @rest_handler
    async def compatibility(request: web.Request) -> web.Response:
        topic = await topic_of(request)
        compatible, strategy = await registry.is_compatible(topic, schema_from_payload(await read_json(request), topic))
        return web.json_response({"isCompatibility": compatible, "schemaCompatibilityStrategy": strategy.value})

    @rest_handler
    async def delete(request: web.Request) -> web.Response:
        version = await registry.delete(await topic_of(request), query_flag(request, "force"))
        require(version is not None, NOT_FOUND, "Schema not found")
        return web.json_response({"version": version})

    return [
        web.get(SCHEMA_PATH, latest),
        web.get(SCHEMA_PATH + "/{version}", by_version),
        web.get(SCHEMA_PATH.removesuffix("/schema") + "/schemas", all_versions),
        web.post(SCHEMA_PATH, post),
        web.post(SCHEMA_PATH.removesuffix("/schema") + "/compatibility", compatibility),
        web.delete(SCHEMA_PATH, delete),
    ]
