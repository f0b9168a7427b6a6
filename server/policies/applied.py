"""The policies in force for a topic: its own, else its namespace's, else the broker's.

Every module that enforces a policy asks here (`AppliedPolicies.of(topic)`) and reads the
returned view under the namespace's Policies field names (catalog.applied_view); where a field
is absent it applies the broker's configuration. Nothing else reads raw policy documents.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from log_limits.repeats import RepeatLimitedLog
from managed_ledger.errors import MetadataStoreError
from managed_ledger.interned import interned
from server.config import BrokerConfig
from server.errors import BrokerError
from server.topics.subscriptions.delayed_delivery import DelayedDeliveryPolicy
from server.topics.topic import Topic
from server.topics.topic_name import TopicName

from .catalog import DELAYED_DELIVERY, applied_view
from .change_events import is_system_topic
from .monitored_broker import MonitoredBroker
from .namespace_policies import DEDUPLICATION_ENABLED, NamespacePolicies
from .periodic import PeriodicTask, in_turns
from .persistence import persistence_of
from .rate_limits import BrokerRateLimits
from .retention import RETENTION_POLICIES, retention_of
from .topic_policies import TopicPolicies

log = logging.getLogger(__name__)
_repeats = RepeatLimitedLog(log)

if TYPE_CHECKING:
    from server.topics.non_persistent_topic import NonPersistentTopic

#: System topics keep everything: their events are the state they hold.
SYSTEM_TOPIC_POLICIES = {RETENTION_POLICIES: {"retentionTimeInMinutes": -1, "retentionSizeInMB": -1}}


class AppliedPolicies:
    def __init__(self, namespaces: NamespacePolicies, topics: TopicPolicies, cluster: str) -> None:
        self.namespaces = namespaces
        self.topics = topics
        self._cluster = cluster
        #: namespace -> (its Policies, the view of a topic without policies of its own): the
        #: topics of a namespace share one view, not a copy each
        self._plain_views: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}

    async def of(self, topic: TopicName) -> dict[str, Any]:
        """The view in force; shared by many topics, so callers must not change it."""
        namespace = await self.namespaces.shared(topic.namespace) or {}
        if is_system_topic(topic):
            return {**namespace, **SYSTEM_TOPIC_POLICIES}
        own = await self.topics.get(topic)
        if own:
            return applied_view(namespace, own, self._cluster)
        plain = self._plain_views.get(topic.namespace)
        if plain is None or plain[0] is not namespace:
            plain = self._plain_views[topic.namespace] = (namespace, applied_view(namespace, {}, self._cluster))
        return plain[1]


def deduplication_on(view: dict[str, Any], config: BrokerConfig) -> bool:
    value = view.get(DEDUPLICATION_ENABLED)
    return config.broker_deduplication_enabled if value is None else bool(value)


def delayed_delivery_of(view: dict[str, Any], config: BrokerConfig) -> DelayedDeliveryPolicy:
    """Pulsar's delayed_delivery_policies {active, tickTime}: each field the topic's, else the
    namespace's, else delayedDeliveryEnabled / delayedDeliveryTickTimeMillis."""
    policy = view.get(DELAYED_DELIVERY) or {}
    return interned(DelayedDeliveryPolicy(bool(policy.get("active", config.delayed_delivery_enabled)),
                                          int(policy.get("tickTime", config.delayed_delivery_tick_time_millis))))


def apply_policies(topic: "Topic | NonPersistentTopic", view: dict[str, Any], config: BrokerConfig,
                   rate_limits: BrokerRateLimits) -> None:
    """Give a loaded topic the policies in force: those read when needed from topic.policies,
    and those kept as state (a persistent topic's delayed delivery and deduplication, its
    ledger's retention and persistence; its rate limits, except on a system topic, which holds
    the broker's own state)."""
    topic.policies = view
    if isinstance(topic, Topic):
        topic.delayed_delivery = delayed_delivery_of(view, config)
        topic.set_deduplication(deduplication_on(view, config))
        topic.ledger.set_retention(retention_of(view, config))
        topic.ledger.set_persistence(persistence_of(view, config))
    if not is_system_topic(topic.name):
        rate_limits.apply(topic, view)


class NamespacePoliciesWatch(PeriodicTask):
    """Namespace policies changed elsewhere (through another broker of a cluster, or by the
    `pulsard namespace-policies` tool) reach the loaded topics within a second, as Pulsar's
    metadata watches bring them; one read per namespace with loaded topics or kept Policies."""

    INTERVAL_S = 1.0

    def __init__(self, broker: MonitoredBroker) -> None:
        super().__init__("namespace policies watch", self.INTERVAL_S, self.check)
        self._broker = broker

    async def check(self) -> None:
        for namespace in self._broker.loaded_namespaces() | self._broker.policies.cached():
            try:
                await self._check(namespace)
            except (MetadataStoreError, BrokerError) as exc:   # ZooKeeper away: the next round reads again
                _repeats.warning(type(exc), "policies of %s not read: %s", namespace, exc)

    async def _check(self, namespace: str) -> None:
        """Only a changed document costs a pass over the loaded topics."""
        if not await self._broker.policies.reload(namespace):
            return
        async for topic in in_turns([*self._broker.topics, *self._broker.non_persistent_topics]):
            if topic.name.namespace == namespace:
                await self._broker.refresh_policies(topic)
