"""Every policy Pulsar has at namespace and topic level: where each is stored and served.

Pulsar names one policy differently at each level: the namespace's Policies field
("max_producers_per_topic", REST `maxProducersPerTopic`) and the topic's TopicPolicies field
("maxProducerPerTopic", REST `maxProducers`). A PolicySpec ties the two together with the check
of its value (policy_values.py). Some namespace fields are maps keyed by cluster name (the
rates): the REST API and the applied view show the local cluster's entry.

`applied_view` merges a topic's TopicPolicies over its namespace's Policies into one document
under the namespace's field names, so that every enforcing module reads one shape and falls
back to the broker's configuration where a field is absent (topic > namespace > broker).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from server.config_rules import did_you_mean

from . import policy_values as values
from .auto_topic_creation import AUTO_TOPIC_CREATION
from .fields import BACKLOG_QUOTA_MAP, COMPACTION_THRESHOLD, INACTIVE_TOPIC_POLICIES, MESSAGE_TTL
from .namespace_policies import (ALLOW_AUTO_UPDATE_SCHEMA, AUTO_SUBSCRIPTION_CREATION, DEDUPLICATION_ENABLED,
                                 SCHEMA_COMPATIBILITY_STRATEGY)
from .persistence import PERSISTENCE
from .retention import RETENTION_POLICIES
from .topic_limits import (MAX_CONSUMERS, MAX_CONSUMERS_PER_SUBSCRIPTION, MAX_MESSAGE_SIZE, MAX_PRODUCERS,
                           MAX_SUBSCRIPTIONS, MAX_UNACKED_PER_CONSUMER, MAX_UNACKED_PER_SUBSCRIPTION,
                           SUBSCRIPTION_TYPES)

Check = Callable[[Any], Any]

PUBLISH_RATE = "publishMaxMessageRate"
DISPATCH_RATE = "topicDispatchRate"
SUBSCRIPTION_DISPATCH_RATE = "subscriptionDispatchRate"
SUBSCRIBE_RATE = "clusterSubscribeRate"
DELAYED_DELIVERY = "delayed_delivery_policies"
SUBSCRIPTION_EXPIRATION = "subscription_expiration_time_minutes"
DEDUPLICATION_SNAPSHOT_INTERVAL = "deduplicationSnapshotIntervalSeconds"
RESOURCE_GROUP = "resource_group_name"
#: TopicPolicies only: {subscription: {"dispatchRate": DispatchRate}}, overrides of single subscriptions.
SUBSCRIPTION_POLICIES = "subscriptionPolicies"


@dataclass(frozen=True)
class PolicySpec:
    """One policy: `field` is its Policies name (also its name in the applied view)."""

    field: str
    check: Check
    namespace_path: str | None = None      # REST path under /admin/v2/namespaces/{t}/{ns}/
    topic_path: str | None = None          # REST path under /admin/v2/{domain}/{t}/{ns}/{topic}/
    topic_field: str | None = None         # TopicPolicies name (None: namespace level only)
    per_cluster: bool = False              # the namespace field is {cluster: value}
    namespace_default: Any = None          # what GET answers when the namespace has none
    topic_default: Any = None              # what GET answers when the topic has none
    namespace_set_method: str = "POST"
    topic_set_method: str = "POST"
    empty_body_clears: bool = False        # a namespace POST without a body removes the policy
    #: Whether a stored value limits nothing, so that the level below applies (Pulsar normalizes
    #: such a rate to none: a topic's {-1, -1} publish rate leaves its namespace's in force).
    limits_nothing: Callable[[Any], bool] | None = None
    #: GET on a topic answers the topic's own value whatever ?applied says, and 204 when it has
    #: none (Pulsar 3.0.7's publishRate).
    topic_own_only: bool = False

    def in_force(self, value: Any) -> Any:
        """value, or None where it is stored but limits nothing."""
        return None if value is None or (self.limits_nothing and self.limits_nothing(value)) else value

    def namespace_value(self, policies: dict[str, Any], cluster: str) -> Any:
        value = policies.get(self.field)
        if self.per_cluster:
            return value.get(cluster) if isinstance(value, dict) else None
        return value

    def namespace_fields(self, policies: dict[str, Any], cluster: str, value: Any) -> dict[str, Any]:
        """The Policies fields that store `value` (None: clear it) for this cluster."""
        if not self.per_cluster:
            return {self.field: value}
        entries = dict(policies.get(self.field) or {})
        if value is None:
            entries.pop(cluster, None)
        else:
            entries[cluster] = value
        return {self.field: entries or None}

    def topic_value(self, policies: dict[str, Any]) -> Any:
        if self.field == DELAYED_DELIVERY:   # two TopicPolicies fields, one REST body
            active, tick = policies.get("delayedDeliveryEnabled"), policies.get("delayedDeliveryTickTimeMillis")
            if active is None and tick is None:
                return None
            return {key: value for key, value in (("active", active), ("tickTime", tick)) if value is not None}
        return policies.get(self.topic_field) if self.topic_field else None

    def topic_fields(self, value: Any) -> dict[str, Any]:
        """The TopicPolicies fields that store `value` (None: clear it)."""
        if self.field == DELAYED_DELIVERY:
            value = value or {}
            return {"delayedDeliveryEnabled": value.get("active"), "delayedDeliveryTickTimeMillis": value.get("tickTime")}
        return {self.topic_field: value}


def _spec(field: str, check: Check, namespace_path: str | None, topic_path: str | None = None,
          topic_field: str | None = None, **options: Any) -> PolicySpec:
    return PolicySpec(field, check, namespace_path, topic_path, topic_field, **options)


def _no_positive(*fields: str) -> Callable[[Any], bool]:
    """limits_nothing of a rate: none of its limit fields is above 0."""
    return lambda value: not any(isinstance(value.get(name), int) and value[name] > 0 for name in fields)


_PUBLISH_LIMITS = _no_positive("publishThrottlingRateInMsg", "publishThrottlingRateInByte")
_DISPATCH_LIMITS = _no_positive("dispatchThrottlingRateInMsg", "dispatchThrottlingRateInByte")


SPECS: tuple[PolicySpec, ...] = (
    _spec(RETENTION_POLICIES, values.retention, "retention", "retention", "retentionPolicies"),
    _spec(MESSAGE_TTL, values.non_negative_int("message TTL"), "messageTTL", "messageTTL", "messageTTLInSeconds"),
    _spec(BACKLOG_QUOTA_MAP, values.backlog_quota_map, None, None, "backLogQuotaMap"),
    _spec(DEDUPLICATION_ENABLED, values.boolean, "deduplication", "deduplicationEnabled", "deduplicationEnabled"),
    _spec(DEDUPLICATION_SNAPSHOT_INTERVAL, values.non_negative_int("deduplication snapshot interval"),
          "deduplicationSnapshotInterval", "deduplicationSnapshotInterval", "deduplicationSnapshotIntervalSeconds",
          empty_body_clears=True),   # pulsar-admin's remove posts a null interval
    _spec(PERSISTENCE, values.persistence, "persistence", "persistence", "persistence"),
    _spec(PUBLISH_RATE, values.publish_rate, "publishRate", "publishRate", "publishRate", per_cluster=True,
          limits_nothing=_PUBLISH_LIMITS, topic_own_only=True),
    _spec(DISPATCH_RATE, values.dispatch_rate, "dispatchRate", "dispatchRate", "dispatchRate", per_cluster=True,
          limits_nothing=_DISPATCH_LIMITS),
    _spec(SUBSCRIPTION_DISPATCH_RATE, values.dispatch_rate, "subscriptionDispatchRate", "subscriptionDispatchRate",
          "subscriptionDispatchRate", per_cluster=True, limits_nothing=_DISPATCH_LIMITS),
    _spec(SUBSCRIBE_RATE, values.subscribe_rate, "subscribeRate", "subscribeRate", "subscribeRate", per_cluster=True,
          limits_nothing=_no_positive("subscribeThrottlingRatePerConsumer")),
    _spec(MAX_PRODUCERS, values.non_negative_int("maxProducersPerTopic"), "maxProducersPerTopic", "maxProducers",
          "maxProducerPerTopic"),
    _spec(MAX_CONSUMERS, values.non_negative_int("maxConsumersPerTopic"), "maxConsumersPerTopic", "maxConsumers",
          "maxConsumerPerTopic"),
    _spec(MAX_CONSUMERS_PER_SUBSCRIPTION, values.non_negative_int("maxConsumersPerSubscription"),
          "maxConsumersPerSubscription", "maxConsumersPerSubscription", "maxConsumersPerSubscription"),
    _spec(MAX_UNACKED_PER_CONSUMER, values.non_negative_int("maxUnackedMessagesPerConsumer"),
          "maxUnackedMessagesPerConsumer", "maxUnackedMessagesOnConsumer", "maxUnackedMessagesOnConsumer"),
    _spec(MAX_UNACKED_PER_SUBSCRIPTION, values.non_negative_int("maxUnackedMessagesPerSubscription"),
          "maxUnackedMessagesPerSubscription", "maxUnackedMessagesOnSubscription", "maxUnackedMessagesOnSubscription"),
    _spec(MAX_SUBSCRIPTIONS, values.non_negative_int("maxSubscriptionsPerTopic"), "maxSubscriptionsPerTopic",
          "maxSubscriptionsPerTopic", "maxSubscriptionsPerTopic"),
    _spec(SUBSCRIPTION_TYPES, values.subscription_types, "subscriptionTypesEnabled", "subscriptionTypesEnabled",
          "subscriptionTypesEnabled", namespace_default=[], topic_default=[]),   # Pulsar keeps an empty set
    _spec(DELAYED_DELIVERY, values.delayed_delivery, "delayedDelivery", "delayedDelivery"),
    _spec(INACTIVE_TOPIC_POLICIES, values.inactive_topic_policies, "inactiveTopicPolicies", "inactiveTopicPolicies",
          "inactiveTopicPolicies"),
    _spec(MAX_MESSAGE_SIZE, values.non_negative_int("maxMessageSize"), None, "maxMessageSize", "maxMessageSize"),
    _spec(SUBSCRIPTION_EXPIRATION, values.non_negative_int("subscriptionExpirationTimeMinutes"),
          "subscriptionExpirationTime"),
    _spec(COMPACTION_THRESHOLD, values.non_negative_int("compaction threshold"), "compactionThreshold",
          "compactionThreshold", "compactionThreshold", namespace_set_method="PUT"),
    _spec(SCHEMA_COMPATIBILITY_STRATEGY, values.schema_strategy, "schemaCompatibilityStrategy",
          "schemaCompatibilityStrategy", "schemaCompatibilityStrategy", namespace_default="UNDEFINED",
          namespace_set_method="PUT", topic_set_method="PUT"),
    _spec(ALLOW_AUTO_UPDATE_SCHEMA, values.boolean, "isAllowAutoUpdateSchema", namespace_default=True),
    _spec(AUTO_SUBSCRIPTION_CREATION, values.auto_subscription_creation, "autoSubscriptionCreation",
          "autoSubscriptionCreation", "autoSubscriptionCreationOverride"),
    _spec(AUTO_TOPIC_CREATION, values.auto_topic_creation, "autoTopicCreation"),
    _spec(RESOURCE_GROUP, values.resource_group_name, None),
)
BY_FIELD = {spec.field: spec for spec in SPECS}
NAMESPACE_SPECS = tuple(spec for spec in SPECS if spec.namespace_path)
TOPIC_SPECS = tuple(spec for spec in SPECS if spec.topic_path)


def applied_view(namespace: dict[str, Any], topic: dict[str, Any], cluster: str) -> dict[str, Any]:
    """The policies in force for a topic, under Policies field names: the topic's own over its
    namespace's, per-cluster maps read for this cluster, values that limit nothing left out.
    Backlog quotas merge by type, as Pulsar picks each type's quota from the topic first. An empty
    set of subscription types is no setting (Pulsar reads it as unset at both levels). The
    topic's per-subscription overrides come along under their TopicPolicies name."""
    view = dict(namespace)
    if not view.get(SUBSCRIPTION_TYPES):
        view.pop(SUBSCRIPTION_TYPES, None)
    for spec in SPECS:
        if spec.per_cluster:
            view.pop(spec.field, None)
            local = spec.in_force(spec.namespace_value(namespace, cluster))
            if local is not None:
                view[spec.field] = local
        own = spec.in_force(spec.topic_value(topic)) if spec.topic_field or spec.field == DELAYED_DELIVERY else None
        if own is None or own == []:
            continue
        if spec.field == BACKLOG_QUOTA_MAP:
            view[spec.field] = {**(namespace.get(BACKLOG_QUOTA_MAP) or {}), **own}
        elif spec.field == DELAYED_DELIVERY:
            view[spec.field] = {**(namespace.get(DELAYED_DELIVERY) or {}), **own}
        else:
            view[spec.field] = own
    if topic.get(SUBSCRIPTION_POLICIES):
        view[SUBSCRIPTION_POLICIES] = topic[SUBSCRIPTION_POLICIES]
    return view


#: Policies field (Pulsar's name) -> its check, for every field this broker applies.
NAMESPACE_POLICY_CHECKS: dict[str, Check] = {
    **{spec.field: spec.check for spec in SPECS},
    "auth_policies": values.auth_policies,
    "replication_clusters": values.clusters,
}


def check_fields(fields: dict[str, Any], known_only: bool = True) -> dict[str, Any]:
    """The fields as they are to be stored; InvalidPolicy naming the first bad one. A None value
    (clear the field) passes; unknown names are refused unless known_only is False (a whole
    Policies document from a Pulsar client carries fields this broker does not apply)."""
    checked = {}
    for name, value in fields.items():
        check = NAMESPACE_POLICY_CHECKS.get(name)
        if check is None and known_only:
            raise values.InvalidPolicy(
                f"unknown namespace policy {name}{did_you_mean(name, list(NAMESPACE_POLICY_CHECKS))}")
        checked[name] = value if value is None or check is None else values.named(name, check, value)
    return checked
