"""The broker-level value of each policy (its standalone.conf keys), in the policy's JSON shape:
what `?applied=true` answers when neither the topic nor its namespace sets the policy."""

from __future__ import annotations

from typing import Any, Callable

from server.config import BrokerConfig

from .fields import (BACKLOG_QUOTA_MAP, COMPACTION_THRESHOLD, INACTIVE_TOPIC_POLICIES, MESSAGE_TTL, SIZE_QUOTA,
                     TIME_QUOTA)
from .catalog import (DEDUPLICATION_ENABLED, DEDUPLICATION_SNAPSHOT_INTERVAL, DELAYED_DELIVERY, DISPATCH_RATE,
                      PERSISTENCE, PUBLISH_RATE, SCHEMA_COMPATIBILITY_STRATEGY, SUBSCRIBE_RATE,
                      SUBSCRIPTION_DISPATCH_RATE)
from .policy_values import subscription_types
from .retention import RETENTION_POLICIES
from .topic_limits import (MAX_CONSUMERS, MAX_CONSUMERS_PER_SUBSCRIPTION, MAX_MESSAGE_SIZE, MAX_PRODUCERS,
                           MAX_SUBSCRIPTIONS, MAX_UNACKED_PER_CONSUMER, MAX_UNACKED_PER_SUBSCRIPTION,
                           SUBSCRIPTION_TYPES)


def _backlog_quotas(config: BrokerConfig) -> dict[str, Any]:
    policy = config.backlog_quota_default_retention_policy
    return {SIZE_QUOTA: {"limitSize": config.backlog_quota_default_limit_bytes, "limitTime": -1, "policy": policy},
            TIME_QUOTA: {"limitSize": -1, "limitTime": config.backlog_quota_default_limit_second, "policy": policy}}


def _inactive_topics(config: BrokerConfig) -> dict[str, Any]:
    max_inactive = config.broker_delete_inactive_topics_max_inactive_duration_seconds
    if max_inactive < 0:
        max_inactive = config.broker_delete_inactive_topics_frequency_seconds
    return {"inactiveTopicDeleteMode": config.broker_delete_inactive_topics_mode,
            "maxInactiveDurationSeconds": int(max_inactive),
            "deleteWhileInactive": config.broker_delete_inactive_topics_enabled}


def _dispatch_rate(messages: int, size: int) -> dict[str, Any]:
    """As Pulsar's broker-level DispatchRate: per second, not relative to the publish rate."""
    return {"dispatchThrottlingRateInMsg": messages, "dispatchThrottlingRateInByte": size,
            "relativeToPublishRate": False, "ratePeriodInSecond": 1}


#: Policies field -> its value from the broker's configuration.
BROKER_DEFAULTS: dict[str, Callable[[BrokerConfig], Any]] = {
    RETENTION_POLICIES: lambda c: {"retentionTimeInMinutes": c.storage.retention_time_minutes,
                                   "retentionSizeInMB": c.storage.retention_size_mb},
    MESSAGE_TTL: lambda c: c.ttl_duration_default_in_seconds,
    BACKLOG_QUOTA_MAP: _backlog_quotas,
    DEDUPLICATION_ENABLED: lambda c: c.broker_deduplication_enabled,
    DEDUPLICATION_SNAPSHOT_INTERVAL: lambda c: c.broker_deduplication_snapshot_interval_seconds,
    PERSISTENCE: lambda c: {"bookkeeperEnsemble": c.storage.ensemble_size,
                            "bookkeeperWriteQuorum": c.storage.write_quorum,
                            "bookkeeperAckQuorum": c.storage.ack_quorum,
                            "managedLedgerMaxMarkDeleteRate": c.storage.mark_delete_rate_limit},
    MAX_PRODUCERS: lambda c: c.max_producers_per_topic,
    MAX_CONSUMERS: lambda c: c.max_consumers_per_topic,
    MAX_CONSUMERS_PER_SUBSCRIPTION: lambda c: c.max_consumers_per_subscription,
    MAX_SUBSCRIPTIONS: lambda c: c.max_subscriptions_per_topic,
    SUBSCRIPTION_TYPES: lambda c: subscription_types(list(c.enabled_subscription_types)),   # in enum order
    MAX_UNACKED_PER_CONSUMER: lambda c: c.max_unacked_messages_per_consumer,
    MAX_UNACKED_PER_SUBSCRIPTION: lambda c: c.max_unacked_messages_per_subscription,
    DELAYED_DELIVERY: lambda c: {"active": c.delayed_delivery_enabled, "tickTime": c.delayed_delivery_tick_time_millis},
    INACTIVE_TOPIC_POLICIES: _inactive_topics,
    MAX_MESSAGE_SIZE: lambda c: c.max_message_size,
    COMPACTION_THRESHOLD: lambda c: c.broker_service_compaction_threshold_in_bytes,
    SCHEMA_COMPATIBILITY_STRATEGY: lambda c: c.schema_compatibility_strategy,
    PUBLISH_RATE: lambda c: {"publishThrottlingRateInMsg": c.max_publish_rate_per_topic_in_messages,
                             "publishThrottlingRateInByte": c.max_publish_rate_per_topic_in_bytes},
    DISPATCH_RATE: lambda c: _dispatch_rate(c.dispatch_throttling_rate_per_topic_in_msg,
                                            c.dispatch_throttling_rate_per_topic_in_byte),
    SUBSCRIPTION_DISPATCH_RATE: lambda c: _dispatch_rate(c.dispatch_throttling_rate_per_subscription_in_msg,
                                                         c.dispatch_throttling_rate_per_subscription_in_byte),
    SUBSCRIBE_RATE: lambda c: {"subscribeThrottlingRatePerConsumer": c.subscribe_throttling_rate_per_consumer,
                               "ratePeriodInSecond": c.subscribe_rate_period_per_consumer_in_second},
}


def broker_default(field: str, config: BrokerConfig) -> Any:
    """The broker's value of a policy; None where this broker has no key for it."""
    value = BROKER_DEFAULTS.get(field)
    return value(config) if value is not None else None
