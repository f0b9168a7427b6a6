"""Topic-level policies over REST (/admin/v2/{domain}/{t}/{ns}/{topic}/{policy}), as Pulsar's
topic policy endpoints: GET answers the topic's own value (204 when unset) or, with
`?applied=true`, the one in force; PUT sets it; DELETE clears it. The topic must exist."""

from __future__ import annotations

from server import web
from server.policies.policy_values import schema_strategy
from server.policies.topic_policies import TOPIC_SCHEMA_COMPATIBILITY_STRATEGY, TopicPolicies
from server.topics.schema_registry import SchemaRegistry
from server.topics.topic_name import TopicName

from .errors import (BAD_REQUEST, NOT_FOUND, json_or_no_content, no_content, query_flag, read_json, require,
                     rest_handler)
from .topic_access import TOPIC_PATH, TopicAccess


def routes(access: TopicAccess, registry: SchemaRegistry) -> list[web.RouteDef]:
    policies = TopicPolicies(access.broker.metadata)

    async def existing(request: web.Request) -> TopicName:
        name = await access.existing_namespace(request)
        found = await access.partitions(name) > 0 or await access.broker.topic_exists(name)
        require(found, NOT_FOUND, "Topic not found")
        return name

    @rest_handler
    async def get_strategy(request: web.Request) -> web.Response:
        name = await existing(request)
        if query_flag(request, "applied"):
            return web.json_response((await registry.strategy(name)).value)
        value = (await policies.get(name)).get(TOPIC_SCHEMA_COMPATIBILITY_STRATEGY)
        return json_or_no_content(None if value == "UNDEFINED" else value)

    @rest_handler
    async def set_strategy(request: web.Request) -> web.Response:
        name = await existing(request)
        body = await read_json(request)
        require(body is not None, BAD_REQUEST, "schemaCompatibilityStrategy needs a JSON body")
        await policies.update(name, **{TOPIC_SCHEMA_COMPATIBILITY_STRATEGY: schema_strategy(body)})
        return no_content()

    @rest_handler
    async def remove_strategy(request: web.Request) -> web.Response:
        name = await existing(request)
        await policies.update(name, **{TOPIC_SCHEMA_COMPATIBILITY_STRATEGY: None})
        return no_content()

    path = TOPIC_PATH + "/schemaCompatibilityStrategy"
    return [web.get(path, get_strategy), web.put(path, set_strategy), web.delete(path, remove_strategy)]
