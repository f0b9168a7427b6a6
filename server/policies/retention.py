"""Which retention policy a topic follows, and the periodic check that applies it.

A namespace's Policies document may hold ``retention_policies`` =
``{"retentionTimeInMinutes": T, "retentionSizeInMB": S}`` (Pulsar's field names); without it
the broker's defaultRetentionTimeInMinutes / defaultRetentionSizeInMB apply. The decision of
what to delete is the managed ledger's (managed_ledger/retention.py); here the policy is
looked up and, every retentionCheckIntervalInSeconds, re-applied to every loaded topic and the
topic's ledgers trimmed, so time-based retention acts even on a topic nobody writes to.
"""

from __future__ import annotations

import logging
from typing import Any

from managed_ledger.interned import interned
from managed_ledger.retention import InvalidRetentionError, RetentionPolicy
from server.config import BrokerConfig
from server.errors import NotAllowed

from .monitored_broker import MonitoredBroker
from .periodic import PeriodicTask, in_turns

log = logging.getLogger(__name__)

RETENTION_POLICIES = "retention_policies"


def broker_default_retention(config: BrokerConfig) -> RetentionPolicy:
    return interned(RetentionPolicy(config.storage.retention_time_minutes, config.storage.retention_size_mb))


def parse_retention(document: Any) -> RetentionPolicy:
    """A retention_policies JSON object as a policy; NotAllowed (Pulsar's 412) if it is not one
    (the admin API can validate a request with this before storing it)."""
    if not isinstance(document, dict):
        raise NotAllowed(f"retention_policies must be an object, not {document!r}")
    time, size = document.get("retentionTimeInMinutes", 0), document.get("retentionSizeInMB", 0)
    if not isinstance(time, int) or not isinstance(size, int) or isinstance(time, bool) or isinstance(size, bool):
        raise NotAllowed(f"retention_policies: time and size must be integers, got {document!r}")
    try:
        return interned(RetentionPolicy(time, size))
    except InvalidRetentionError as exc:
        raise NotAllowed(f"Invalid retention policy: {exc}") from None


def retention_of(policies: dict[str, Any], config: BrokerConfig) -> RetentionPolicy:
    """The namespace's retention when it sets a valid one, else the broker default."""
    document = policies.get(RETENTION_POLICIES)
    if document is None:
        return broker_default_retention(config)
    try:
        return parse_retention(document)
    except NotAllowed as exc:
        log.warning("ignoring the namespace's retention policy: %s", exc)
        return broker_default_retention(config)


class RetentionMonitor(PeriodicTask):
    """Re-read each topic's policies (changed meanwhile, maybe through another broker) and trim
    its ledgers to its retention."""

    def __init__(self, broker: MonitoredBroker) -> None:
        super().__init__("retention check", broker.config.retention_check_interval_in_seconds, self.check)
        self._broker = broker

    async def check(self) -> None:
        async for topic in in_turns(self._broker.topics):
            await self._broker.refresh_policies(topic)
            await topic.ledger.trim()
