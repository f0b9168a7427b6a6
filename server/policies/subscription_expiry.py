"""Subscription expiration: a durable subscription without consumers whose last activity is
older than the namespace's subscription_expiration_time_minutes (else the broker's
subscriptionExpirationTimeMinutes; 0 = never) is deleted, checked every
subscriptionExpiryCheckIntervalInMinutes, as Pulsar's PersistentTopic.checkInactiveSubscriptions.

A subscription is active when it is loaded and whenever a consumer joins, leaves or acknowledges
(Pulsar's cursor lastActive, which it does not read back after a restart either). Pulsar has no
topic-level value for it (TopicPolicies lacks the field); the compaction cursor is no
subscription, and this broker has no replicated subscriptions, which Pulsar exempts.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from managed_ledger.errors import ManagedLedgerError, MetadataStoreError
from server.config import BrokerConfig
from server.errors import BrokerError

from .catalog import SUBSCRIPTION_EXPIRATION
from .monitored_broker import MonitoredBroker
from .periodic import PeriodicTask, in_turns

log = logging.getLogger(__name__)


def expiration_s(policies: dict[str, Any], config: BrokerConfig) -> float:
    """Seconds of inactivity after which a subscription goes; 0 = never."""
    minutes = policies.get(SUBSCRIPTION_EXPIRATION)
    if minutes is None:
        minutes = config.subscription_expiration_time_minutes
    return minutes * 60


class SubscriptionExpiryMonitor(PeriodicTask):
    def __init__(self, broker: MonitoredBroker) -> None:
        super().__init__("subscription expiry check",
                         broker.config.subscription_expiry_check_interval_in_minutes * 60, self.check)
        self._broker = broker

    async def check(self) -> None:
        async for topic in in_turns(self._broker.topics):
            expiry_s = expiration_s(topic.policies, self._broker.config)
            if expiry_s <= 0:
                continue
            now = time.time()
            for subscription in list(topic.subscriptions.values()):
                if subscription.durable and not subscription.consumers and \
                        now - subscription.last_active > expiry_s:
                    await self._delete(topic, subscription.name, now - subscription.last_active)

    @staticmethod
    async def _delete(topic: Any, name: str, inactive_s: float) -> None:
        try:
            await topic.remove_subscription(name, force=False)
        except BrokerError as exc:   # a consumer came, or it was deleted, meanwhile
            log.info("%s / %s: expired subscription not deleted: %s", topic.name, name, exc)
            return
        except (ManagedLedgerError, MetadataStoreError) as exc:   # storage away: the next check tries again
            log.warning("%s / %s: expired subscription not deleted: %s", topic.name, name, exc)
            return
        log.info("%s / %s: subscription deleted: inactive for %.0f s", topic.name, name, inactive_s)
