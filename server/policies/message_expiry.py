"""Message TTL: messages older than the namespace's message_ttl_in_seconds (else the broker's
ttlDurationDefaultInSeconds; 0 = never) are acknowledged on every subscription, checked every
messageExpiryCheckIntervalInMinutes, as Pulsar's message expiry monitor does.

The newest expired entry is found by a binary search on publish time over the log
(find_newest_matching); each subscription's mark-delete then moves up to it. A batch expires
as one entry, by its publish time (work per entry, never per message).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, Iterable

from server.config import BrokerConfig
from server.topics.topic import publish_time

from .fields import MESSAGE_TTL
from .monitored_broker import MonitoredBroker
from .periodic import PeriodicTask, in_turns

if TYPE_CHECKING:
    from server.topics.subscriptions.subscription import Subscription
    from server.topics.topic import Topic

log = logging.getLogger(__name__)


def ttl_of(policies: dict[str, Any], config: BrokerConfig) -> int:
    """Seconds a message lives unacknowledged; 0 = forever. A bad stored value is ignored."""
    value = policies.get(MESSAGE_TTL)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if value is not None:
        log.warning("ignoring %s=%r: not a non-negative integer", MESSAGE_TTL, value)
    return config.ttl_duration_default_in_seconds


async def expire_messages(topic: "Topic", ttl_s: int,
                          subscriptions: "Iterable[Subscription] | None" = None) -> None:
    """Acknowledge, on the given subscriptions (default: every one), the entries published
    more than ttl_s ago. Also the admin API's expireMessages."""
    cutoff_ms = int(time.time() * 1000) - ttl_s * 1000
    newest = await topic.ledger.find_newest_matching(lambda entry: publish_time(entry) <= cutoff_ms)
    if newest is None:
        return
    for subscription in list(topic.subscriptions.values() if subscriptions is None else subscriptions):
        if subscription.expire_up_to(newest):
            log.info("%s / %s: messages up to %s expired (older than %d s)", topic.name,
                     subscription.name, newest, ttl_s)


class MessageExpiryMonitor(PeriodicTask):
    def __init__(self, broker: MonitoredBroker) -> None:
        super().__init__("message expiry check",
                         broker.config.message_expiry_check_interval_in_minutes * 60, self.check)
        self._broker = broker

    async def check(self) -> None:
        async for topic in in_turns(self._broker.topics):
            ttl_s = ttl_of(topic.policies, self._broker.config)
            if ttl_s > 0 and topic.subscriptions:
                await expire_messages(topic, ttl_s)
