"""Backlog quotas: how far the slowest subscription may fall behind, and what happens past it.

A namespace's ``backlog_quota_map`` (Pulsar's Policies field) holds
``{"destination_storage": {"limitSize": bytes, "policy": P}, "message_age": {"limitTime": s,
"policy": P}}``; without it the broker's backlogQuotaDefaultLimitBytes /
backlogQuotaDefaultLimitSecond / backlogQuotaDefaultRetentionPolicy apply (-1 = no limit).
The backlog is the slowest durable subscription's: its estimated bytes after mark-delete, and
the age of its oldest unacknowledged entry. Checked when a producer is created and every
backlogQuotaCheckIntervalInSeconds, with Pulsar's three policies:

- producer_request_hold: producers are disconnected; re-creating them fails with
  ProducerBlockedQuotaExceededError, which the client retries, holding its sends until the
  backlog shrinks (or its send timeout fails them).
- producer_exception: producers are disconnected; re-creating them fails with
  ProducerBlockedQuotaExceededException, which fails the client's pending and new sends.
- consumer_backlog_eviction: the subscriptions over quota skip their oldest messages (down to
  90% of the size limit, or past every message older than the time limit).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from server.config import BrokerConfig
from server.errors import NotAllowed, ProducerBlockedQuotaExceededError, ProducerBlockedQuotaExceededException
from server.topics.topic import publish_time

from .fields import BACKLOG_QUOTA_MAP, BACKLOG_QUOTA_POLICIES, EVICTION, HOLD, SIZE_QUOTA, TIME_QUOTA
from .message_expiry import expire_messages
from .monitored_broker import MonitoredBroker
from .periodic import PeriodicTask, in_turns

if TYPE_CHECKING:
    from server.topics.subscriptions.subscription import Subscription
    from server.topics.topic import Topic

log = logging.getLogger(__name__)

#: Eviction by size stops at this share of the limit, as Pulsar's, so it does not run every check.
EVICTION_TARGET = 0.9


@dataclass(frozen=True, slots=True)
class BacklogQuota:
    limit: int      # bytes for destination_storage, seconds for message_age; < 0 = none
    policy: str

    @property
    def active(self) -> bool:
        return self.limit >= 0


def parse_quota(document: Any, limit_field: str) -> BacklogQuota:
    """One backlog_quota_map entry; NotAllowed (a 412 from the admin API) if malformed."""
    if not isinstance(document, dict):
        raise NotAllowed(f"backlog quota must be an object, not {document!r}")
    limit, policy = document.get(limit_field, -1), document.get("policy", HOLD)
    if not isinstance(limit, int) or isinstance(limit, bool) or policy not in BACKLOG_QUOTA_POLICIES:
        raise NotAllowed(f"Invalid backlog quota {document!r}: {limit_field} must be an integer "
                         f"and policy one of {', '.join(BACKLOG_QUOTA_POLICIES)}")
    return BacklogQuota(limit, policy)


def quotas_of(policies: dict[str, Any], config: BrokerConfig) -> dict[str, BacklogQuota]:
    """The size and the time quota of a namespace (a malformed stored one: the default)."""
    defaults = {
        SIZE_QUOTA: BacklogQuota(config.backlog_quota_default_limit_bytes,
                                 config.backlog_quota_default_retention_policy),
        TIME_QUOTA: BacklogQuota(config.backlog_quota_default_limit_second,
                                 config.backlog_quota_default_retention_policy),
    }
    stored = policies.get(BACKLOG_QUOTA_MAP) or {}
    quotas = dict(defaults)
    for kind, limit_field in ((SIZE_QUOTA, "limitSize"), (TIME_QUOTA, "limitTime")):
        if kind in stored:
            try:
                quotas[kind] = parse_quota(stored[kind], limit_field)
            except NotAllowed as exc:
                log.warning("ignoring the namespace's %s quota: %s", kind, exc)
    return quotas


def _slowest(topic: "Topic") -> "Subscription | None":
    durable = [s for s in topic.subscriptions.values() if s.durable]
    return min(durable, key=lambda s: s.cursor.mark_delete_position, default=None)


async def oldest_unacked_age_s(topic: "Topic", subscription: "Subscription") -> float:
    ledger = topic.ledger
    entry = await ledger.read_entry(ledger.next_position(subscription.cursor.mark_delete_position))
    return 0.0 if entry is None else time.time() - publish_time(entry) / 1000


async def exceeded_quota(topic: "Topic", quotas: dict[str, BacklogQuota]) -> BacklogQuota | None:
    """The first quota the slowest subscription is over, if any."""
    slowest = _slowest(topic)
    if slowest is None:
        return None
    size_quota, time_quota = quotas[SIZE_QUOTA], quotas[TIME_QUOTA]
    if size_quota.active and topic.ledger.size_after(slowest.cursor.mark_delete_position) > size_quota.limit:
        return size_quota
    if time_quota.active and await oldest_unacked_age_s(topic, slowest) > time_quota.limit:
        return time_quota
    return None


def _evict_by_size(topic: "Topic", limit: int) -> None:
    keep_from = topic.ledger.position_keeping(int(limit * EVICTION_TARGET))
    for subscription in list(topic.subscriptions.values()):
        if subscription.durable and topic.ledger.size_after(subscription.cursor.mark_delete_position) > limit:
            if subscription.expire_up_to(keep_from):
                log.info("%s / %s: backlog over %d bytes, skipped to %s", topic.name,
                         subscription.name, limit, keep_from)


class BacklogQuotas:
    """Quota checks for producer creation, and the periodic enforcement."""

    def __init__(self, broker: MonitoredBroker) -> None:
        self._broker = broker
        self.monitor = PeriodicTask("backlog quota check",
                                    broker.config.backlog_quota_check_interval_in_seconds, self.check_all)

    async def _quotas(self, topic: "Topic") -> dict[str, BacklogQuota]:
        return quotas_of(topic.policies, self._broker.config)

    async def check_producer_allowed(self, topic: "Topic") -> None:
        """Refuse a new producer while a hold or exception quota is exceeded."""
        if not self._broker.config.backlog_quota_check_enabled:
            return
        quota = await exceeded_quota(topic, await self._quotas(topic))
        if quota is None or quota.policy == EVICTION:
            return
        message = f"Cannot create producer on topic with backlog quota exceeded ({quota.policy})"
        if quota.policy == HOLD:
            raise ProducerBlockedQuotaExceededError(message)
        raise ProducerBlockedQuotaExceededException(message)

    async def check_all(self) -> None:
        if not self._broker.config.backlog_quota_check_enabled:
            return
        async for topic in in_turns(self._broker.topics):
            await self.enforce(topic)

    async def enforce(self, topic: "Topic") -> None:
        quotas = await self._quotas(topic)
        quota = await exceeded_quota(topic, quotas)
        if quota is None:
            return
        if quota.policy != EVICTION:
            log.info("%s: backlog quota exceeded (%s): disconnecting producers", topic.name, quota.policy)
            for producer in list(topic.producers):
                producer.close_by_broker()
                topic.remove_producer(producer)
        elif quota is quotas[SIZE_QUOTA]:
            _evict_by_size(topic, quota.limit)
        else:
            await expire_messages(topic, quota.limit)
