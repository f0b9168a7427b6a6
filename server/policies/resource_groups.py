"""Resource groups: rate quotas shared by all the topics of the namespaces attached to a group.

A group is Pulsar's ResourceGroup {publishRateInMsgs, publishRateInBytes, dispatchRateInMsgs,
dispatchRateInBytes} (-1: no limit), kept in the configuration store at
/admin/resourcegroups/{name}, where Pulsar keeps it; a namespace names its group in its
Policies' resource_group_name. Each group has one publish throttle and one dispatch limit on
this broker, which every topic of its namespaces counts against (publish_throttle.py,
dispatch_throttle.py), so that the group as a whole keeps to its quota.

Pulsar divides a group's quota among the brokers that serve its topics, by the usage they
report to each other every resourceUsageTransportPublishIntervalInSecs; here each broker
enforces the whole quota for the topics it serves (all of them, standalone). Pulsar 3.0.7
enforces only the publish quotas; the dispatch quotas are enforced here as Pulsar 3.1 does.

The quotas are read again every second (a change made through another broker of a cluster)
and at once after a change made here; listeners hear of every change.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Callable

from managed_ledger.interfaces import MetadataStore

from .periodic import PeriodicTask
from .publish_throttle import PublishThrottle
from .rate_limiter import Rate, RatePair

log = logging.getLogger(__name__)

RESOURCE_GROUPS_ROOT = "/admin/resourcegroups"
WATCH_INTERVAL_S = 1.0


def group_path(name: str) -> str:
    return f"{RESOURCE_GROUPS_ROOT}/{name}"


class GroupLimits:
    """The buckets of one group on this broker."""

    def __init__(self, name: str) -> None:
        self.publish = PublishThrottle(f"of resource group {name}")
        self.dispatch = RatePair()
        self.quota: dict[str, Any] = {}

    def set_quota(self, quota: dict[str, Any]) -> None:
        self.quota = quota
        self.publish.set_rate(Rate(quota.get("publishRateInMsgs") or -1, quota.get("publishRateInBytes") or -1))
        self.dispatch.set_rate(Rate(quota.get("dispatchRateInMsgs") or -1, quota.get("dispatchRateInBytes") or -1))


class ResourceGroups:
    def __init__(self, store: MetadataStore) -> None:
        self._store = store
        self._groups: dict[str, GroupLimits] = {}
        self._listeners: list[Callable[[], None]] = []
        self.watch = PeriodicTask("resource group watch", WATCH_INTERVAL_S, self.load)

    def add_listener(self, listener: Callable[[], None]) -> None:
        self._listeners.append(listener)

    def limits(self, name: str | None) -> GroupLimits | None:
        """The buckets of a group; None for no group or one that does not exist."""
        return self._groups.get(name) if name else None

    async def load(self) -> None:
        """Read every group's quotas; apply those that changed, drop the deleted groups."""
        stored: dict[str, dict[str, Any]] = {}
        for name in await self._store.children(RESOURCE_GROUPS_ROOT):
            found = await self._store.get(group_path(name))
            if found is not None:
                stored[name] = json.loads(found[0])
        changed = False
        for name in set(self._groups) - set(stored):
            self._groups.pop(name).publish.release()
            changed = True
        for name, quota in stored.items():
            group = self._groups.get(name)
            if group is None:
                group = self._groups[name] = GroupLimits(name)
            if group.quota != quota:
                group.set_quota(quota)
                changed = True
                log.info("resource group %s: %s", name, quota)
        if changed:
            for listener in self._listeners:
                listener()
