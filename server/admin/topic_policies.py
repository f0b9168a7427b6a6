"""Topic-level policies over REST (/admin/v2/{domain}/{t}/{ns}/{topic}/{policy}), as Pulsar's
topic policy endpoints: GET answers the topic's own value (200 with no body when unset) or, with
`?applied=true`, the one in force (topic, else namespace, else broker; publishRate answers its
own value only, 204 when unset, as Pulsar 3.0.7 does); POST (PUT for the schema compatibility
strategy) sets it; DELETE clears it. The topic must exist. Pulsar's `isGlobal` (geo-replicated
policies) is not kept apart: there is one cluster."""

from __future__ import annotations

from typing import Any

from server import web
from server.policies.fields import BACKLOG_QUOTA_MAP, MESSAGE_TTL
from server.policies.broker_defaults import broker_default
from server.policies.catalog import BY_FIELD, SUBSCRIPTION_DISPATCH_RATE, SUBSCRIPTION_POLICIES, TOPIC_SPECS, PolicySpec
from server.policies.policy_values import BACKLOG_QUOTA_TYPES, backlog_quota, named
from server.topics.schema_compatibility import Strategy
from server.topics.topic_name import TopicName

from .errors import (BAD_REQUEST, NOT_FOUND, json_or_empty, json_or_no_content, no_content, query_flag, read_json,
                     require, rest_handler)
from .topic_access import TOPIC_PATH, TopicAccess


def routes(access: TopicAccess) -> list[web.RouteDef]:
    broker = access.broker
    policies = broker.topic_policies

    async def existing(request: web.Request) -> TopicName:
        name = await access.existing_namespace(request)
        found = await access.partitions(name) > 0 or await broker.topic_exists(name)
        require(found, NOT_FOUND, "Topic not found")
        return name

    async def applied(name: TopicName, field: str) -> Any:
        value = (await broker.applied.of(name)).get(field)
        return broker_default(field, broker.config) if value is None else value

    async def request_value(request: web.Request, spec: PolicySpec) -> Any:
        """The policy from the body; the message TTL comes as ?messageTTL=, as Pulsar takes it."""
        if spec.field == MESSAGE_TTL and "messageTTL" in request.query:
            body: Any = request.query["messageTTL"]
        else:
            body = await read_json(request)
        require(body is not None, BAD_REQUEST, f"{spec.topic_path} needs a value")
        value = named(spec.topic_path or spec.field, spec.check, body)
        return None if value == Strategy.UNDEFINED.value else value   # UNDEFINED: ask the namespace

    def handlers(spec: PolicySpec) -> list[web.RouteDef]:
        @rest_handler
        async def get(request: web.Request) -> web.Response:
            name = await existing(request)
            if spec.topic_own_only:
                return json_or_no_content(spec.topic_value(await policies.get(name)))
            if query_flag(request, "applied"):
                return json_or_empty(await applied(name, spec.field))
            own = spec.topic_value(await policies.get(name))
            return json_or_empty(spec.topic_default if own is None else own)

        @rest_handler
        async def set_(request: web.Request) -> web.Response:
            name = await existing(request)
            await policies.update(name, **spec.topic_fields(await request_value(request, spec)))
            return no_content()

        @rest_handler
        async def remove(request: web.Request) -> web.Response:
            await policies.update(await existing(request), **spec.topic_fields(None))
            return no_content()

        path = f"{TOPIC_PATH}/{spec.topic_path}"
        return [web.get(path, get), web.route(spec.topic_set_method, path, set_), web.delete(path, remove)]

    return [route for spec in TOPIC_SPECS for route in handlers(spec)] + _backlog_quota_routes(access, existing) \
        + _subscription_dispatch_routes(access, existing, applied)


def _backlog_quota_routes(access: TopicAccess, existing) -> list[web.RouteDef]:  # type: ignore[no-untyped-def]
    """Backlog quotas, a map by type: GET backlogQuotaMap, POST/DELETE backlogQuota?backlogQuotaType=."""
    broker = access.broker

    def quota_type(request: web.Request) -> str:
        kind = request.query.get("backlogQuotaType", "destination_storage")
        require(kind in BACKLOG_QUOTA_TYPES, BAD_REQUEST, f"Unknown backlogQuotaType {kind!r}")
        return kind

    async def update(request: web.Request, quota: dict[str, Any] | None) -> web.Response:
        name = await existing(request)
        quotas = dict((await broker.topic_policies.get(name)).get("backLogQuotaMap") or {})
        if quota is None:
            quotas.pop(quota_type(request), None)
        else:
            quotas[quota_type(request)] = quota
        await broker.topic_policies.update(name, backLogQuotaMap=quotas or None)
        return no_content()

    @rest_handler
    async def get_quotas(request: web.Request) -> web.Response:
        name = await existing(request)
        if query_flag(request, "applied"):
            quotas = (await broker.applied.of(name)).get(BACKLOG_QUOTA_MAP)
            return web.json_response(quotas or broker_default(BACKLOG_QUOTA_MAP, broker.config))
        return web.json_response((await broker.topic_policies.get(name)).get("backLogQuotaMap") or {})

    @rest_handler
    async def set_quota(request: web.Request) -> web.Response:
        return await update(request, backlog_quota(await read_json(request)))

    @rest_handler
    async def remove_quota(request: web.Request) -> web.Response:
        return await update(request, None)

    return [web.get(TOPIC_PATH + "/backlogQuotaMap", get_quotas), web.post(TOPIC_PATH + "/backlogQuota", set_quota),
            web.delete(TOPIC_PATH + "/backlogQuota", remove_quota)]


def _subscription_dispatch_routes(access: TopicAccess, existing, applied) -> list[web.RouteDef]:  # type: ignore[no-untyped-def]
    """One subscription's dispatch rate, {topic}/{subscription}/dispatchRate, kept in the topic's
    policies (subscriptionPolicies) as Pulsar keeps it; GET ?applied=true falls back to the
    topic's subscription dispatch rate in force. As Pulsar, a rate that limits nothing is not
    stored, and the subscription need not exist."""
    policies = access.broker.topic_policies
    spec = BY_FIELD[SUBSCRIPTION_DISPATCH_RATE]

    async def update(request: web.Request, rate: dict[str, Any] | None) -> web.Response:
        name, sub_name = await existing(request), request.match_info["subscription"]
        overrides = dict((await policies.get(name)).get(SUBSCRIPTION_POLICIES) or {})
        own = {key: value for key, value in (overrides.get(sub_name) or {}).items() if key != "dispatchRate"}
        if rate is not None:
            own["dispatchRate"] = rate
        if own:
            overrides[sub_name] = own
        else:
            overrides.pop(sub_name, None)
        await policies.update(name, **{SUBSCRIPTION_POLICIES: overrides or None})
        return no_content()

    @rest_handler
    async def get(request: web.Request) -> web.Response:
        name, sub_name = await existing(request), request.match_info["subscription"]
        overrides = (await policies.get(name)).get(SUBSCRIPTION_POLICIES) or {}
        rate = (overrides.get(sub_name) or {}).get("dispatchRate")
        if rate is None and query_flag(request, "applied"):
            rate = await applied(name, SUBSCRIPTION_DISPATCH_RATE)
        return json_or_empty(rate)

    @rest_handler
    async def set_(request: web.Request) -> web.Response:
        rate = named("dispatchRate", spec.check, await read_json(request))
        if spec.in_force(rate) is None:
            await existing(request)
            return no_content()
        return await update(request, rate)

    @rest_handler
    async def remove(request: web.Request) -> web.Response:
        return await update(request, None)

    path = TOPIC_PATH + "/{subscription}/dispatchRate"
    return [web.get(path, get), web.post(path, set_), web.delete(path, remove)]
