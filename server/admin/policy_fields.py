"""Namespace policies served one field at a time (/admin/v2/namespaces/{t}/{ns}/{policy}).

Each entry names the REST path, the Policies JSON field it stores (Pulsar's own names, read by
the rest of the broker through server/policies/) and its check (server/policies/policy_values.py,
shared with `pulsard namespace-policies set`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from server.policies.auto_topic_creation import AUTO_TOPIC_CREATION
from server.policies.inactive_topics import INACTIVE_TOPIC_POLICIES
from server.policies.message_expiry import MESSAGE_TTL
from server.policies.namespace_policies import (ALLOW_AUTO_UPDATE_SCHEMA, AUTO_SUBSCRIPTION_CREATION,
                                                DEDUPLICATION_ENABLED, SCHEMA_COMPATIBILITY_STRATEGY)
from server.policies.policy_values import NAMESPACE_POLICY_CHECKS
from server.policies.retention import RETENTION_POLICIES

from .errors import BAD_REQUEST, RestError

AUTH_ACTIONS = ("produce", "consume", "functions", "sources", "sinks", "packages")


def auth_actions(body: Any) -> list[str]:
    if not isinstance(body, list) or not all(action in AUTH_ACTIONS for action in body):
        raise RestError(BAD_REQUEST, f"Actions must be a list of {', '.join(AUTH_ACTIONS)}")
    return sorted(set(body))


@dataclass(frozen=True)
class ScalarPolicy:
    path: str
    field: str
    default: Any = None
    set_method: str = "POST"

    @property
    def validate(self) -> Callable[[Any], Any]:
        """The field's check, shared with every other way policies are written."""
        return NAMESPACE_POLICY_CHECKS[self.field]


SCALAR_POLICIES = (
    ScalarPolicy("retention", RETENTION_POLICIES),
    ScalarPolicy("messageTTL", MESSAGE_TTL),
    ScalarPolicy("deduplication", DEDUPLICATION_ENABLED),
    ScalarPolicy("autoSubscriptionCreation", AUTO_SUBSCRIPTION_CREATION),
    ScalarPolicy("autoTopicCreation", AUTO_TOPIC_CREATION),
    ScalarPolicy("maxProducersPerTopic", "max_producers_per_topic"),
    ScalarPolicy("maxConsumersPerTopic", "max_consumers_per_topic"),
    ScalarPolicy("schemaCompatibilityStrategy", SCHEMA_COMPATIBILITY_STRATEGY, "UNDEFINED", "PUT"),
    ScalarPolicy("isAllowAutoUpdateSchema", ALLOW_AUTO_UPDATE_SCHEMA, True),
    ScalarPolicy("inactiveTopicPolicies", INACTIVE_TOPIC_POLICIES),
)
