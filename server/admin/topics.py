"""/admin/v2/{persistent|non-persistent}/{tenant}/{namespace}[/{topic}...]: topic lifecycle,
partitions, stats and internal stats, last message id, unload, compaction (PUT starts one,
GET reports it) and termination."""

from __future__ import annotations

import math
import re
from typing import Any

from managed_ledger.position import Position
from server import web
from server.broker_service import MODE_NON_PERSISTENT, MODE_PERSISTENT
from server.topics.compaction import CompactionInProgress
from server.topics.topic_name import TopicName

from .errors import (BAD_REQUEST, CONFLICT, METHOD_NOT_ALLOWED, NOT_ACCEPTABLE, NOT_FOUND, RestError,
                     no_content, query_flag, read_json, require, rest_handler)
from .topic_access import NAMESPACE_TOPICS_PATH, TOPIC_PATH, TopicAccess
from .topic_stats import internal_stats, partitioned_stats, topic_stats

T = TOPIC_PATH


#: The body type the Go admin client sends on create: {"partitions": N, "properties": {...}}.
PARTITIONED_METADATA_MEDIA_TYPE = "application/vnd.partitioned-topic-metadata+json"


#: A JSON string Jackson reads as a Java int: an optional sign and ASCII digits.
_INT_TEXT = re.compile(r"[+-]?[0-9]+")
_JAVA_INT = range(-(2**31), 2**31)


async def _partitions_in(request: web.Request) -> int:
    """The partition count of a request body: a JSON number or numeric string, as Jackson reads
    a Java int, or Pulsar's PartitionedTopicMetadata object under its own media type (its
    properties are not kept by this broker)."""
    body = await read_json(request)
    if request.content_type == PARTITIONED_METADATA_MEDIA_TYPE:
        require(isinstance(body, dict), BAD_REQUEST, "Expected a PartitionedTopicMetadata object")
        return _partition_count(body.get("partitions"))
    return _partition_count(_as_java_int(body))


def _as_java_int(body: Any) -> Any:
    """What Jackson makes of a JSON value bound to an int parameter: "2" (trimmed) is 2 and a
    fraction is truncated (its default coercions); anything else is left for the check to refuse."""
    if isinstance(body, str) and _INT_TEXT.fullmatch(body.strip()):
        return int(body.strip())
    if isinstance(body, float) and math.isfinite(body):
        return int(body)
    return body


def _partition_count(body: Any) -> int:
    require(isinstance(body, int) and not isinstance(body, bool) and body in _JAVA_INT, BAD_REQUEST,
            "The number of partitions must be an integer")
    require(body > 0, NOT_ACCEPTABLE, "Number of partitions should be more than 0")
    return body


def _message_id(position: Position) -> dict[str, int]:
    """Pulsar answers a termination with MessageIdImpl(ledger, entry, -1), partition or not."""
    return {"ledgerId": position.ledger_id, "entryId": position.entry_id, "partitionIndex": -1}


def routes(access: TopicAccess) -> list[web.RouteDef]:
    return (_lifecycle_routes(access) + _partition_routes(access) + _stats_routes(access)
            + _termination_routes(access))


def _lifecycle_routes(access: TopicAccess) -> list[web.RouteDef]:
    broker = access.broker

    async def namespace_of(request: web.Request) -> str:
        namespace = f"{request.match_info['tenant']}/{request.match_info['namespace']}"
        await access.namespaces.get(namespace)
        return namespace

    @rest_handler
    async def list_topics(request: web.Request) -> web.Response:
        mode = MODE_PERSISTENT if request.match_info["domain"] == "persistent" else MODE_NON_PERSISTENT
        return web.json_response(await broker.topics_of_namespace(await namespace_of(request), mode,
                                                                  query_flag(request, "includeSystemTopic")))

    @rest_handler
    async def list_partitioned(request: web.Request) -> web.Response:
        namespace = await namespace_of(request)
        return web.json_response(await broker.partitioned_topics_of(namespace, request.match_info["domain"]))

    @rest_handler
    async def create_topic(request: web.Request) -> web.Response:
        name = await access.existing_namespace(request)
        require(not await broker.topic_exists(name), CONFLICT, "This topic already exists")
        await broker.create_topic(name)
        return no_content()

    @rest_handler
    async def delete_topic(request: web.Request) -> web.Response:
        name = access.name(request)
        require(not await access.partitions(name), CONFLICT,
                "Topic is a partitioned topic: delete it with DELETE .../partitions")
        await broker.delete_topic(name, query_flag(request, "force"))
        return no_content()

    @rest_handler
    async def unload(request: web.Request) -> web.Response:
        name = access.name(request)
        count = await access.partitions(name)
        names = [name.partition(i) for i in range(count)] if count else [name]
        require(count > 0 or await broker.topic_exists(name), NOT_FOUND, "Topic not found")
        for each in names:
            await broker.unload_topic(each)
        return no_content()

    return [
        web.get(NAMESPACE_TOPICS_PATH, list_topics),
        web.get(NAMESPACE_TOPICS_PATH + "/partitioned", list_partitioned),
        web.put(T, create_topic),
        web.delete(T, delete_topic),
        web.put(T + "/unload", unload),
    ]


def _partition_routes(access: TopicAccess) -> list[web.RouteDef]:
    broker = access.broker

    @rest_handler
    async def get_partitions(request: web.Request) -> web.Response:
        return web.json_response({"partitions": await broker.partitions_of(access.name(request))})

    @rest_handler
    async def create_partitioned(request: web.Request) -> web.Response:
        name = await access.existing_namespace(request)
        count = await _partitions_in(request)
        require(not await access.partitions(name), CONFLICT, "Partitioned topic already exists")
        require(not await broker.topic_exists(name), CONFLICT, "This topic already exists")
        require(name.partition_index < 0, BAD_REQUEST, "A partition cannot be a partitioned topic")
        await broker.create_partitioned(name, count)
        return no_content()

    @rest_handler
    async def update_partitioned(request: web.Request) -> web.Response:
        await broker.partitioned.grow(access.name(request), await _partitions_in(request))
        return no_content()

    @rest_handler
    async def delete_partitioned(request: web.Request) -> web.Response:
        await broker.delete_partitioned(access.name(request), query_flag(request, "force"))
        return no_content()

    return [
        web.get(T + "/partitions", get_partitions),
        web.put(T + "/partitions", create_partitioned),
        web.post(T + "/partitions", update_partitioned),
        web.delete(T + "/partitions", delete_partitioned),
    ]


def _stats_routes(access: TopicAccess) -> list[web.RouteDef]:
    window = access.broker.config.stats_update_frequency_in_secs

    @rest_handler
    async def stats(request: web.Request) -> web.Response:
        return web.json_response(topic_stats(await access.any_topic(access.name(request)), window))

    @rest_handler
    async def stats_of_partitions(request: web.Request) -> web.Response:
        name = access.name(request)
        count = await access.partitions(name)
        require(count > 0, NOT_FOUND, "Partitioned Topic not found")
        per_partition = {}
        for index in range(count):
            partition = name.partition(index)
            per_partition[str(partition)] = topic_stats(await access.any_topic(partition), window)
        return web.json_response(partitioned_stats(per_partition, count, query_flag(request, "perPartition")))

    @rest_handler
    async def internal(request: web.Request) -> web.Response:
        return web.json_response(internal_stats(await access.topic(access.name(request))))

    @rest_handler
    async def last_message_id(request: web.Request) -> web.Response:
        name = access.name(request)
        position, batch_index = await (await access.topic(name)).last_message_id()
        answer = {"ledgerId": position.ledger_id, "entryId": position.entry_id,
                  "partitionIndex": name.partition_index}
        if batch_index >= 0:
            answer["batchIndex"] = batch_index
        return web.json_response(answer)

    @rest_handler
    async def compact(request: web.Request) -> web.Response:
        topic = await access.topic(access.name(request))
        try:
            await topic.compact()
        except CompactionInProgress as exc:
            raise RestError(CONFLICT, str(exc)) from None
        return web.Response(status=204)

    @rest_handler
    async def compaction_status(request: web.Request) -> web.Response:
        return web.json_response((await access.topic(access.name(request))).compaction_status())

    return [
        web.get(T + "/stats", stats),
        web.get(T + "/partitioned-stats", stats_of_partitions),
        web.get(T + "/internalStats", internal),
        web.get(T + "/lastMessageId", last_message_id),
        web.get(T + "/compaction", compaction_status),
        web.put(T + "/compaction", compact),
    ]


def _termination_routes(access: TopicAccess) -> list[web.RouteDef]:
    def persistent_name(request: web.Request) -> TopicName:
        name = access.name(request)
        require(name.persistent, METHOD_NOT_ALLOWED, "Termination of a non-persistent topic is not allowed")
        return name

    @rest_handler
    async def terminate(request: web.Request) -> web.Response:
        name = persistent_name(request)
        require(not await access.partitions(name), METHOD_NOT_ALLOWED,
                "Termination of a partitioned topic is not allowed")
        return web.json_response(_message_id(await (await access.topic(name)).terminate()))

    @rest_handler
    async def terminate_partitions(request: web.Request) -> web.Response:
        """Every partition; Pulsar answers {partition index: message id}."""
        name = persistent_name(request)
        count = await access.partitions(name)
        require(count > 0, NOT_FOUND, "Partitioned Topic not found")
        ends = {}
        for index in range(count):
            ends[str(index)] = _message_id(await (await access.topic(name.partition(index))).terminate())
        return web.json_response(ends)

    return [
        web.post(T + "/terminate", terminate),
        web.post(T + "/terminate/partitions", terminate_partitions),
    ]
