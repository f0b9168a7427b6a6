"""What each namespace Policies field may hold, checked once for every way in.

The admin REST API (one policy per request, or a whole Policies document at creation) and
`pulsard namespace-policies set` both store fields through these checks, so a misspelled key or
a value of the wrong type is refused when it is written (naming the field, with the nearest known
name) instead of being stored and then ignored, with a warning, at every policy check. Each
check returns the value to store (decimal strings taken as integers, as Pulsar's JSON reader does).
"""

from __future__ import annotations

import re
from typing import Any, Callable

from protocol import pulsar_api_pb2 as pb
from server.config_rules import did_you_mean
from server.topics.schema_compatibility import Strategy

from .auto_topic_creation import override_error
from .fields import BACKLOG_QUOTA_POLICIES, DELETE_MODES, DELETE_WHEN_NO_SUBSCRIPTIONS, SIZE_QUOTA, TIME_QUOTA

#: CommandSubscribe.SubType names, as Pulsar writes subscription types in policies.
SUBSCRIPTION_TYPE_NAMES = tuple(pb.CommandSubscribe.SubType.keys())
SCHEMA_COMPATIBILITY_STRATEGIES = tuple(strategy.value for strategy in Strategy)
BACKLOG_QUOTA_TYPES = (SIZE_QUOTA, TIME_QUOTA)
AUTH_MAPS = ("namespace_auth", "destination_auth", "subscription_auth_roles")
Check = Callable[[Any], Any]


class InvalidPolicy(ValueError):
    """A policy value of the wrong JSON type or shape (the admin API answers 400)."""


class PolicyOutOfRange(InvalidPolicy):
    """A policy value of the right type that is not allowed (the admin API answers 412)."""


def named(name: str, check: Check, value: Any) -> Any:
    """check(value), its refusal prefixed with where the value sits ("retention_policies: ...")."""
    try:
        return check(value)
    except InvalidPolicy as exc:
        raise type(exc)(f"{name}: {exc}") from None


def _object(value: Any, what: str, keys: tuple[str, ...]) -> dict[str, Any]:
    """value as a JSON object of (some of) `keys`; an unknown key is refused with the nearest."""
    if not isinstance(value, dict):
        raise InvalidPolicy(f"{what} must be a JSON object")
    for key in value:
        if key not in keys:
            raise InvalidPolicy(f"unknown field {key} in {what}{did_you_mean(key, list(keys))}")
    return value


def integer(body: dict, name: str, default: int) -> int:
    """An integer field of an object; a decimal string is taken too, as Pulsar's JSON reader
    coerces it (the Go client's tests post {"limit": "10240"})."""
    value = body.get(name, default)
    if isinstance(value, str) and re.fullmatch(r"-?[0-9]+", value):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidPolicy(f"{name} must be an integer, not {value!r}")
    return value


def non_negative_int(what: str) -> Check:
    def check(value: Any) -> int:
        if isinstance(value, str) and re.fullmatch(r"-?[0-9]+", value):
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidPolicy(f"{what} must be an integer, not {value!r}")
        if value < 0:
            raise PolicyOutOfRange(f"Invalid value for {what}: must be >= 0")
        return value
    return check


def boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise InvalidPolicy(f"Value must be true or false, not {value!r}")
    return value


def retention(body: Any) -> dict[str, int]:
    """RetentionPolicies {retentionTimeInMinutes, retentionSizeInMB}: -1 (infinite) or >= 0."""
    fields = ("retentionTimeInMinutes", "retentionSizeInMB")
    body = _object(body, "Retention policies", fields)
    time_minutes, size_mb = (integer(body, name, 0) for name in fields)
    if time_minutes < -1 or size_mb < -1:
        raise PolicyOutOfRange("Retention time and size must be -1 (infinite) or >= 0")
    return {"retentionTimeInMinutes": time_minutes, "retentionSizeInMB": size_mb}


def schema_strategy(body: Any) -> str:
    if not isinstance(body, str) or body.upper() not in SCHEMA_COMPATIBILITY_STRATEGIES:
        raise InvalidPolicy(f"Schema compatibility strategy must be one of {', '.join(SCHEMA_COMPATIBILITY_STRATEGIES)}")
    return body.upper()


def backlog_quota(body: Any) -> dict[str, Any]:
    """BacklogQuota {limitSize, limitTime, policy}; `limit` is the older name of limitSize."""
    body = _object(body, "Backlog quota", ("limit", "limitSize", "limitTime", "policy"))
    limit_size = integer(body, "limitSize", integer(body, "limit", -1))
    limit_time = integer(body, "limitTime", -1)
    policy = body.get("policy")
    if policy not in BACKLOG_QUOTA_POLICIES:
        raise InvalidPolicy(f"Backlog quota policy must be one of {', '.join(BACKLOG_QUOTA_POLICIES)}")
    return {"limitSize": limit_size, "limitTime": limit_time, "policy": policy}


def backlog_quota_map(body: Any) -> dict[str, Any]:
    """{destination_storage: BacklogQuota, message_age: BacklogQuota}."""
    return {kind: named(kind, backlog_quota, quota)
            for kind, quota in _object(body, "Backlog quota map", BACKLOG_QUOTA_TYPES).items()}


def auto_subscription_creation(body: Any) -> dict[str, bool]:
    """AutoSubscriptionCreationOverride {allowAutoSubscriptionCreation}."""
    body = _object(body, "autoSubscriptionCreationOverride", ("allowAutoSubscriptionCreation",))
    if not isinstance(body.get("allowAutoSubscriptionCreation"), bool):
        raise InvalidPolicy("Body must be {\"allowAutoSubscriptionCreation\": true|false}")
    return {"allowAutoSubscriptionCreation": body["allowAutoSubscriptionCreation"]}


def auto_topic_creation(body: Any) -> dict[str, Any]:
    """AutoTopicCreationOverride {allowAutoTopicCreation, topicType, defaultNumPartitions}."""
    fields = ("allowAutoTopicCreation", "topicType", "defaultNumPartitions")
    body = _object(body, "autoTopicCreationOverride", fields)
    if not isinstance(body.get("allowAutoTopicCreation"), bool):
        raise InvalidPolicy("Body must be {\"allowAutoTopicCreation\": true|false, ...}")
    error = override_error(body)
    if error is not None:
        raise PolicyOutOfRange(f"Invalid configuration for autoTopicCreationOverride. the detail is {error}")
    return {name: body[name] for name in fields if body.get(name) is not None}


def inactive_topic_policies(body: Any) -> dict[str, Any]:
    """InactiveTopicPolicies {inactiveTopicDeleteMode, maxInactiveDurationSeconds, deleteWhileInactive}."""
    body = _object(body, "Inactive topic policies",
                   ("inactiveTopicDeleteMode", "maxInactiveDurationSeconds", "deleteWhileInactive"))
    mode = body.get("inactiveTopicDeleteMode", DELETE_WHEN_NO_SUBSCRIPTIONS)
    if mode not in DELETE_MODES:
        raise InvalidPolicy(f"inactiveTopicDeleteMode must be one of {', '.join(DELETE_MODES)}")
    max_inactive = integer(body, "maxInactiveDurationSeconds", 0)
    if max_inactive < 0:
        raise PolicyOutOfRange("maxInactiveDurationSeconds must be >= 0")
    return {"inactiveTopicDeleteMode": mode, "maxInactiveDurationSeconds": max_inactive,
            "deleteWhileInactive": boolean(body.get("deleteWhileInactive", False))}


def auth_policies(body: Any) -> dict[str, Any]:
    """AuthPolicies: role grants of the namespace, of its topics, and subscription roles."""
    body = _object(body, "Auth policies", AUTH_MAPS)
    for name, entries in body.items():
        if not isinstance(entries, dict):
            raise InvalidPolicy(f"{name} must be a JSON object")
    return body


def clusters(body: Any) -> list[str]:
    if not isinstance(body, list) or not all(isinstance(name, str) for name in body):
        raise InvalidPolicy("must be a list of cluster names")
    return body


def persistence(body: Any) -> dict[str, Any]:
    """PersistencePolicies: ledgers' ensemble >= write quorum >= ack quorum > 0, and the
    highest rate of mark-delete persists per second (0: every one)."""
    fields = ("bookkeeperEnsemble", "bookkeeperWriteQuorum", "bookkeeperAckQuorum", "managedLedgerMaxMarkDeleteRate")
    body = _object(body, "Persistence policies", fields)
    ensemble, write_quorum, ack_quorum = (integer(body, name, 0) for name in fields[:3])
    rate = body.get("managedLedgerMaxMarkDeleteRate", 0)
    if isinstance(rate, bool) or not isinstance(rate, (int, float)):
        raise InvalidPolicy(f"managedLedgerMaxMarkDeleteRate must be a number, not {rate!r}")
    if not ensemble >= write_quorum >= ack_quorum > 0:
        raise InvalidPolicy(f"Bookkeeper Ensemble ({ensemble}) >= WriteQuorum ({write_quorum}) >= "
                            f"AckQuorum ({ack_quorum}) > 0 is required")
    if rate < 0:
        raise InvalidPolicy("managedLedgerMaxMarkDeleteRate must be >= 0")
    return {fields[0]: ensemble, fields[1]: write_quorum, fields[2]: ack_quorum, fields[3]: rate}


def publish_rate(body: Any) -> dict[str, int]:
    """PublishRate {publishThrottlingRateInMsg, publishThrottlingRateInByte}; <= 0: no limit."""
    fields = ("publishThrottlingRateInMsg", "publishThrottlingRateInByte")
    body = _object(body, "Publish rate", fields)
    return {name: integer(body, name, -1) for name in fields}


def dispatch_rate(body: Any) -> dict[str, Any]:
    """DispatchRate {dispatchThrottlingRateInMsg, dispatchThrottlingRateInByte,
    relativeToPublishRate, ratePeriodInSecond}; a rate <= 0 is no limit."""
    fields = ("dispatchThrottlingRateInMsg", "dispatchThrottlingRateInByte", "relativeToPublishRate",
              "ratePeriodInSecond")
    body = _object(body, "Dispatch rate", fields)
    period = integer(body, "ratePeriodInSecond", 1)
    if period <= 0:
        raise PolicyOutOfRange("ratePeriodInSecond must be > 0")
    return {fields[0]: integer(body, fields[0], -1), fields[1]: integer(body, fields[1], -1),
            fields[2]: boolean(body.get(fields[2], False)), fields[3]: period}


def subscribe_rate(body: Any) -> dict[str, int]:
    """SubscribeRate {subscribeThrottlingRatePerConsumer, ratePeriodInSecond}."""
    fields = ("subscribeThrottlingRatePerConsumer", "ratePeriodInSecond")
    body = _object(body, "Subscribe rate", fields)
    period = integer(body, "ratePeriodInSecond", 30)
    if period <= 0:
        raise PolicyOutOfRange("ratePeriodInSecond must be > 0")
    return {fields[0]: integer(body, fields[0], -1), fields[1]: period}


def delayed_delivery(body: Any) -> dict[str, Any]:
    """DelayedDeliveryPolicies {active, tickTime (ms)}, Pulsar 3.0.7's; the
    maxDeliveryDelayInMillis of later versions' clients is taken and ignored, as 3.0.7 does."""
    body = _object(body, "Delayed delivery policies", ("active", "tickTime", "maxDeliveryDelayInMillis"))
    tick = integer(body, "tickTime", 1000)
    if tick <= 0:
        raise PolicyOutOfRange("tickTime must be > 0")
    integer(body, "maxDeliveryDelayInMillis", 0)
    return {"active": boolean(body.get("active", True)), "tickTime": tick}


def subscription_types(body: Any) -> list[str]:
    """A set of subscription type names (Exclusive, Shared, Failover, Key_Shared)."""
    if not isinstance(body, list) or not all(isinstance(name, str) for name in body):
        raise InvalidPolicy("subscriptionTypesEnabled must be a list of subscription types")
    unknown = [name for name in body if name not in SUBSCRIPTION_TYPE_NAMES]
    if unknown:
        raise InvalidPolicy(f"Unknown subscription type {unknown[0]}: one of {', '.join(SUBSCRIPTION_TYPE_NAMES)}")
    return sorted(set(body), key=SUBSCRIPTION_TYPE_NAMES.index)


def resource_group_name(body: Any) -> str:
    if not isinstance(body, str) or not body:
        raise InvalidPolicy("A resource group name is a non-empty string")
    return body


RESOURCE_GROUP_QUOTAS = ("publishRateInMsgs", "publishRateInBytes", "dispatchRateInMsgs", "dispatchRateInBytes")


def resource_group(body: Any) -> dict[str, int]:
    """ResourceGroup {publishRateInMsgs, publishRateInBytes, dispatchRateInMsgs,
    dispatchRateInBytes}: the quotas it sets (absent or null: unchanged, or -1 for a new group)."""
    body = _object(body, "ResourceGroup", RESOURCE_GROUP_QUOTAS)
    return {name: integer(body, name, -1) for name in RESOURCE_GROUP_QUOTAS if body.get(name) is not None}
