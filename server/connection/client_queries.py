"""Questions a client asks that touch no topic's state: the topics of a namespace (what regex
consumers poll) and schemas, looked up or registered by version."""

from __future__ import annotations

from protocol import commands
from protocol import pulsar_api_pb2 as pb
from protocol.codec import Frame
from server.errors import MetadataError
from server.security.authorization import CONSUME
from server.topics.schema_registry import BYTES_SCHEMA, BYTES_VERSION
from server.topics.topic_name import TopicName

from .command_context import CommandContext

Cmd = pb.BaseCommand


def _on_get_topics_of_namespace(connection: CommandContext, command: Cmd, frame: Frame) -> None:
    request = command.getTopicsOfNamespace
    connection.respond(request.request_id, _topics_of_namespace(connection, request))


async def _topics_of_namespace(connection: CommandContext, request: pb.CommandGetTopicsOfNamespace) -> Cmd:
    if not TopicName.is_valid_namespace(request.namespace):   # Pulsar: MetadataError
        raise MetadataError(f"Invalid namespace name {request.namespace!r}")
    broker = connection.broker
    await broker.authorization.check_namespace(connection.auth.role, request.namespace, CONSUME,
                                               "Client is not authorized to GetTopicsOfNamespace")
    topics = await broker.topics_of_namespace(request.namespace, request.mode)
    reply = commands.topics_of_namespace(request.request_id, topics)
    if request.HasField("topics_hash") and request.topics_hash == reply.getTopicsOfNamespaceResponse.topics_hash:
        return commands.topics_of_namespace(request.request_id, [], topics_hash=request.topics_hash, changed=False)
    return reply


def _on_get_schema(connection: CommandContext, command: Cmd, frame: Frame) -> None:
    request = command.getSchema
    connection.respond(request.request_id, _get_schema(connection, request), commands.schema_error)


async def _get_schema(connection: CommandContext, request: pb.CommandGetSchema) -> Cmd:
    if request.HasField("schema_version") and request.schema_version == BYTES_VERSION:
        return commands.schema_response(request.request_id, BYTES_SCHEMA, BYTES_VERSION)
    version = int.from_bytes(request.schema_version, "big") if request.HasField("schema_version") else None
    found = await connection.broker.schemas.get(TopicName.parse(request.topic), version)
    if found is None:
        return commands.schema_error(request.request_id, pb.TopicNotFound, "Topic not found or no-schema")
    schema, schema_version = found
    return commands.schema_response(request.request_id, schema, schema_version)


def _on_get_or_create_schema(connection: CommandContext, command: Cmd, frame: Frame) -> None:
    request = command.getOrCreateSchema
    connection.respond(request.request_id, _get_or_create_schema(connection, request),
                       commands.get_or_create_schema_error)


async def _get_or_create_schema(connection: CommandContext, request: pb.CommandGetOrCreateSchema) -> Cmd:
    version = await connection.broker.schemas.register(TopicName.parse(request.topic), request.schema)
    return commands.get_or_create_schema_response(request.request_id, version or BYTES_VERSION)


HANDLERS = {
    Cmd.GET_TOPICS_OF_NAMESPACE: _on_get_topics_of_namespace,
    Cmd.GET_SCHEMA: _on_get_schema,
    Cmd.GET_OR_CREATE_SCHEMA: _on_get_or_create_schema,
}
