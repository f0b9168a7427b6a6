"""Namespace policies served one field at a time (/admin/v2/namespaces/{t}/{ns}/{policy}).

Each entry names the REST path, the Policies JSON field it stores (Pulsar's own names, read by
the rest of the broker through server/namespace_policies.py) and how a request body is checked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from server.policies.auto_topic_creation import AUTO_TOPIC_CREATION, override_error
from server.policies.inactive_topics import (DELETE_MODES, DELETE_WHEN_NO_SUBSCRIPTIONS,
                                             INACTIVE_TOPIC_POLICIES)
from server.policies.namespace_policies import (ALLOW_AUTO_UPDATE_SCHEMA, AUTO_SUBSCRIPTION_CREATION,
                                                SCHEMA_COMPATIBILITY_STRATEGY)
from server.topics.schema_compatibility import Strategy

from .errors import BAD_REQUEST, PRECONDITION_FAILED, RestError

SCHEMA_COMPATIBILITY_STRATEGIES = tuple(strategy.value for strategy in Strategy)
BACKLOG_QUOTA_TYPES = ("destination_storage", "message_age")
BACKLOG_QUOTA_POLICIES = ("producer_request_hold", "producer_exception", "consumer_backlog_eviction")
AUTH_ACTIONS = ("produce", "consume", "functions", "sources", "sinks", "packages")


def _non_negative_int(what: str) -> Callable[[Any], int]:
    def check(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise RestError(BAD_REQUEST, f"{what} must be an integer")
        if value < 0:
            raise RestError(PRECONDITION_FAILED, f"Invalid value for {what}: must be >= 0")
        return value
    return check


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise RestError(BAD_REQUEST, "Value must be true or false")
    return value


def _int_field(body: dict, name: str, default: int) -> int:
    """An integer field; a decimal string is taken too, as Pulsar's JSON reader coerces it
    (the Go client's tests post {"limit": "10240"})."""
    value = body.get(name, default)
    if isinstance(value, str) and re.fullmatch(r"-?[0-9]+", value):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise RestError(BAD_REQUEST, f"{name} must be an integer")
    return value


def _retention(body: Any) -> dict[str, int]:
    if not isinstance(body, dict):
        raise RestError(BAD_REQUEST, "Retention policies must be a JSON object")
    time_minutes = _int_field(body, "retentionTimeInMinutes", 0)
    size_mb = _int_field(body, "retentionSizeInMB", 0)
    if time_minutes < -1 or size_mb < -1:
        raise RestError(PRECONDITION_FAILED, "Retention time and size must be -1 (infinite) or >= 0")
    return {"retentionTimeInMinutes": time_minutes, "retentionSizeInMB": size_mb}


def schema_strategy(body: Any) -> str:
    if not isinstance(body, str) or body.upper() not in SCHEMA_COMPATIBILITY_STRATEGIES:
        raise RestError(BAD_REQUEST, f"Schema compatibility strategy must be one of {', '.join(SCHEMA_COMPATIBILITY_STRATEGIES)}")
    return body.upper()


def backlog_quota(body: Any) -> dict[str, Any]:
    """BacklogQuota {limitSize, limitTime, policy}; `limit` is the older name of limitSize."""
    if not isinstance(body, dict):
        raise RestError(BAD_REQUEST, "Backlog quota must be a JSON object")
    limit_size = _int_field(body, "limitSize", _int_field(body, "limit", -1))
    limit_time = _int_field(body, "limitTime", -1)
    policy = body.get("policy")
    if policy not in BACKLOG_QUOTA_POLICIES:
        raise RestError(BAD_REQUEST, f"Backlog quota policy must be one of {', '.join(BACKLOG_QUOTA_POLICIES)}")
    return {"limitSize": limit_size, "limitTime": limit_time, "policy": policy}


def _auto_subscription_creation(body: Any) -> dict[str, bool]:
    """AutoSubscriptionCreationOverride {allowAutoSubscriptionCreation}."""
    if not isinstance(body, dict) or not isinstance(body.get("allowAutoSubscriptionCreation"), bool):
        raise RestError(BAD_REQUEST, "Body must be {\"allowAutoSubscriptionCreation\": true|false}")
    return {"allowAutoSubscriptionCreation": body["allowAutoSubscriptionCreation"]}


def _auto_topic_creation(body: Any) -> dict[str, Any]:
    """AutoTopicCreationOverride {allowAutoTopicCreation, topicType, defaultNumPartitions}."""
    if not isinstance(body, dict) or not isinstance(body.get("allowAutoTopicCreation"), bool):
        raise RestError(BAD_REQUEST, "Body must be {\"allowAutoTopicCreation\": true|false, ...}")
    error = override_error(body)
    if error is not None:
        raise RestError(PRECONDITION_FAILED,
                        f"Invalid configuration for autoTopicCreationOverride. the detail is {error}")
    fields = ("allowAutoTopicCreation", "topicType", "defaultNumPartitions")
    return {name: body[name] for name in fields if body.get(name) is not None}


def _inactive_topic_policies(body: Any) -> dict[str, Any]:
    """InactiveTopicPolicies {inactiveTopicDeleteMode, maxInactiveDurationSeconds, deleteWhileInactive}."""
    if not isinstance(body, dict):
        raise RestError(BAD_REQUEST, "Inactive topic policies must be a JSON object")
    mode = body.get("inactiveTopicDeleteMode", DELETE_WHEN_NO_SUBSCRIPTIONS)
    if mode not in DELETE_MODES:
        raise RestError(BAD_REQUEST, f"inactiveTopicDeleteMode must be one of {', '.join(DELETE_MODES)}")
    max_inactive = _int_field(body, "maxInactiveDurationSeconds", 0)
    if max_inactive < 0:
        raise RestError(PRECONDITION_FAILED, "maxInactiveDurationSeconds must be >= 0")
    return {"inactiveTopicDeleteMode": mode, "maxInactiveDurationSeconds": max_inactive,
            "deleteWhileInactive": _boolean(body.get("deleteWhileInactive", False))}


def auth_actions(body: Any) -> list[str]:
    if not isinstance(body, list) or not all(action in AUTH_ACTIONS for action in body):
        raise RestError(BAD_REQUEST, f"Actions must be a list of {', '.join(AUTH_ACTIONS)}")
    return sorted(set(body))


@dataclass(frozen=True)
class ScalarPolicy:
    path: str
    field: str
    validate: Callable[[Any], Any]
    default: Any = None
    set_method: str = "POST"


SCALAR_POLICIES = (
    ScalarPolicy("retention", "retention_policies", _retention),
    ScalarPolicy("messageTTL", "message_ttl_in_seconds", _non_negative_int("message TTL")),
    ScalarPolicy("deduplication", "deduplicationEnabled", _boolean),
    ScalarPolicy("autoSubscriptionCreation", AUTO_SUBSCRIPTION_CREATION, _auto_subscription_creation),
    ScalarPolicy("autoTopicCreation", AUTO_TOPIC_CREATION, _auto_topic_creation),
    ScalarPolicy("maxProducersPerTopic", "max_producers_per_topic", _non_negative_int("maxProducersPerTopic")),
    ScalarPolicy("maxConsumersPerTopic", "max_consumers_per_topic", _non_negative_int("maxConsumersPerTopic")),
    ScalarPolicy("schemaCompatibilityStrategy", SCHEMA_COMPATIBILITY_STRATEGY, schema_strategy, "UNDEFINED", "PUT"),
    ScalarPolicy("isAllowAutoUpdateSchema", ALLOW_AUTO_UPDATE_SCHEMA, _boolean, True),
    ScalarPolicy("inactiveTopicPolicies", INACTIVE_TOPIC_POLICIES, _inactive_topic_policies),
)
