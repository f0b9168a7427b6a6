"""Subscriptions of a persistent topic over REST: list, create at a position, delete, skip,
clear backlog, expire, reset the cursor, peek and examine (and a message by its id). On a partitioned topic every
operation but peek applies to each partition, as in Pulsar."""

from __future__ import annotations

from typing import Any

from managed_ledger.position import EARLIEST, LATEST, Entry, Position
from server import web
from server.policies.message_expiry import expire_messages
from server.topics.subscriptions.subscription import Subscription
from server.topics.topic import Topic

from .errors import (BAD_REQUEST, CONFLICT, METHOD_NOT_ALLOWED, NOT_FOUND, PRECONDITION_FAILED, no_content,
                     query_flag, read_json, require, rest_handler)
from .messages import entry_response
from .topic_access import TOPIC_PATH, TopicAccess

SUB = TOPIC_PATH + "/subscription/{subscription}"
_READ_BATCH = 100


def _int_path(request: web.Request, key: str, minimum: int) -> int:
    raw = request.match_info[key]
    require(raw.lstrip("-").isdigit(), BAD_REQUEST, f"{key} must be an integer")
    value = int(raw)
    require(value >= minimum, PRECONDITION_FAILED, f"{key} must be >= {minimum}")
    return value


def message_position(body: Any) -> Position:
    """A MessageId JSON {ledgerId, entryId, ...}; Pulsar's earliest (-1:-1) and latest (max:max)."""
    require(isinstance(body, dict), BAD_REQUEST, "A message id must be a JSON object {ledgerId, entryId}")
    ledger_id, entry_id = body.get("ledgerId"), body.get("entryId")
    require(isinstance(ledger_id, int) and isinstance(entry_id, int), BAD_REQUEST,
            "ledgerId and entryId must be integers")
    if ledger_id < 0 or entry_id < 0:
        return EARLIEST
    return LATEST if (ledger_id, entry_id) == (LATEST.ledger_id, LATEST.entry_id) else Position(ledger_id, entry_id)


async def unacked_entries(subscription: Subscription, limit: int) -> list[Entry]:
    """The first `limit` entries after mark-delete that the subscription has not acknowledged."""
    cursor, ledger = subscription.cursor, subscription.topic.ledger
    found: list[Entry] = []
    position = ledger.next_position(cursor.mark_delete_position)
    while len(found) < limit:
        entries = await ledger.read_entries(position, _READ_BATCH)
        if not entries:
            break
        found.extend(e for e in entries if not cursor.is_deleted(e.position))
        position = ledger.next_position(entries[-1].position)
    return found[:limit]


async def expire(topic: Topic, subscription: Subscription, seconds: int) -> None:
    """Acknowledge every message published more than `seconds` ago (Pulsar's expireMessages)."""
    await expire_messages(topic, seconds, [subscription])


def routes(access: TopicAccess) -> list[web.RouteDef]:
    return _lifecycle_routes(access) + _cursor_routes(access) + _peek_routes(access)


def _lifecycle_routes(access: TopicAccess) -> list[web.RouteDef]:
    @rest_handler
    async def list_subscriptions(request: web.Request) -> web.Response:
        names: set[str] = set()
        for topic in await access.targets(access.name(request)):
            names.update(topic.subscriptions)
        return web.json_response(sorted(names))

    @rest_handler
    async def create(request: web.Request) -> web.Response:
        start = message_position(await read_json(request, {"ledgerId": LATEST.ledger_id, "entryId": LATEST.entry_id}))
        sub_name = request.match_info["subscription"]
        require(bool(sub_name.strip()), PRECONDITION_FAILED, "Subscription name must not be empty")
        topics = await access.targets(access.name(request), create=True)
        created = [await topic.add_subscription(sub_name, start) for topic in topics]
        require(all(created), CONFLICT, "Subscription already exists for topic")
        return no_content()

    @rest_handler
    async def delete(request: web.Request) -> web.Response:
        sub_name = request.match_info["subscription"]
        topics = await access.targets(access.name(request))
        require(any(sub_name in t.subscriptions for t in topics), NOT_FOUND, "Subscription not found")
        for topic in topics:
            if sub_name in topic.subscriptions:
                await topic.remove_subscription(sub_name, query_flag(request, "force"))
        return no_content()

    return [
        web.get(TOPIC_PATH + "/subscriptions", list_subscriptions),
        web.put(SUB, create),
        web.delete(SUB, delete),
    ]


def _cursor_routes(access: TopicAccess) -> list[web.RouteDef]:
    async def each_subscription(request: web.Request):
        sub_name = request.match_info["subscription"]
        for topic in await access.targets(access.name(request)):
            yield topic, await access.subscription(topic, sub_name)

    @rest_handler
    async def skip(request: web.Request) -> web.Response:
        count = _int_path(request, "count", 0)
        async for _, subscription in each_subscription(request):
            subscription.cursor.delete([e.position for e in await unacked_entries(subscription, count)])
        return no_content()

    @rest_handler
    async def skip_all(request: web.Request) -> web.Response:
        async for _, subscription in each_subscription(request):
            subscription.clear_backlog()
        return no_content()

    @rest_handler
    async def expire_messages(request: web.Request) -> web.Response:
        seconds = _int_path(request, "seconds", 0)
        async for topic, subscription in each_subscription(request):
            await expire(topic, subscription, seconds)
        return no_content()

    @rest_handler
    async def expire_all(request: web.Request) -> web.Response:
        seconds = _int_path(request, "seconds", 0)
        for topic in await access.targets(access.name(request)):
            for subscription in list(topic.subscriptions.values()):
                await expire(topic, subscription, seconds)
        return no_content()

    @rest_handler
    async def reset_by_time(request: web.Request) -> web.Response:
        timestamp = _int_path(request, "timestamp", 0)
        async for topic, subscription in each_subscription(request):
            await subscription.reset(await topic.find_position_by_publish_time(timestamp))
        return no_content()

    @rest_handler
    async def reset_by_id(request: web.Request) -> web.Response:
        body = await read_json(request)
        position = message_position(body)
        name = access.name(request)
        partition = body.get("partitionIndex", -1) if await access.partitions(name) else -1
        require(partition is None or isinstance(partition, int), BAD_REQUEST, "partitionIndex must be an integer")
        topic = await access.topic(name.partition(partition) if partition is not None and partition >= 0 else name)
        subscription = await access.subscription(topic, request.match_info["subscription"])
        if query_flag(request, "isExcluded") and position not in (EARLIEST, LATEST):
            position = topic.ledger.next_position(position)
        await subscription.reset(position)
        return no_content()

    return [
        web.post(SUB + "/skip/{count}", skip),
        web.post(SUB + "/skip_all", skip_all),
        web.post(SUB + "/expireMessages/{seconds}", expire_messages),
        web.post(TOPIC_PATH + "/all_subscription/expireMessages/{seconds}", expire_all),
        web.post(SUB + "/resetcursor/{timestamp}", reset_by_time),
        web.post(SUB + "/resetcursor", reset_by_id),
    ]


def _peek_routes(access: TopicAccess) -> list[web.RouteDef]:
    async def single_topic(request: web.Request) -> Topic:
        name = access.name(request)
        require(not await access.partitions(name), METHOD_NOT_ALLOWED,
                "Peek messages on a partitioned topic is not allowed")
        return await access.topic(name)

    @rest_handler
    async def peek(request: web.Request) -> web.Response:
        position = _int_path(request, "position", 1)
        topic = await single_topic(request)
        subscription = await access.subscription(topic, request.match_info["subscription"])
        entries = await unacked_entries(subscription, position)
        require(len(entries) == position, NOT_FOUND, "Message not found")
        return entry_response(entries[-1])

    @rest_handler
    async def examine(request: web.Request) -> web.Response:
        topic = await single_topic(request)
        initial = request.query.get("initialPosition", "latest").lower()
        require(initial in ("earliest", "latest"), BAD_REQUEST, "initialPosition must be earliest or latest")
        raw = request.query.get("messagePosition", "1")
        require(raw.isdigit() and int(raw) >= 1, PRECONDITION_FAILED, "messagePosition must be >= 1")
        entry = await _entry_at(topic, initial == "earliest", int(raw))
        require(entry is not None, NOT_FOUND, "Message not found")
        return entry_response(entry)

    @rest_handler
    async def by_id(request: web.Request) -> web.Response:
        """Pulsar's getMessageById: the entry at ledger/entry, whatever the subscriptions did."""
        position = Position(_int_path(request, "ledger", 0), _int_path(request, "entry", 0))
        entry = await (await single_topic(request)).ledger.read_entry(position)
        require(entry is not None, NOT_FOUND, "Message not found")
        return entry_response(entry)

    return [
        web.get(SUB + "/position/{position}", peek),
        web.get(TOPIC_PATH + "/examinemessage", examine),
        web.get(TOPIC_PATH + "/ledger/{ledger}/entry/{entry}", by_id),
    ]


async def _entry_at(topic: Topic, from_earliest: bool, offset: int) -> Entry | None:
    """The offset-th entry from the start (1 = first) or from the end (1 = last)."""
    ledger = topic.ledger
    index = offset - 1 if from_earliest else ledger.number_of_entries - offset
    if index < 0:
        return None
    for ledger_id, entries, _ in ledger.ledgers_info():
        if index < entries:
            return await ledger.read_entry(Position(ledger_id, index))
        index -= entries
    return None
