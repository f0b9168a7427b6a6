"""Inactive topics are deleted, as Pulsar's broker does (brokerDeleteInactiveTopics*), so an
idle topic does not hold its ledger, cursors and memory for ever.

Every brokerDeleteInactiveTopicsFrequencySeconds the loaded topics are checked. A topic is
active while it has a producer or a connected consumer, and also, by the delete mode:
  - delete_when_no_subscriptions (default): while it has any subscription;
  - delete_when_subscriptions_caught_up: while any subscription has a backlog.
A topic inactive for brokerDeleteInactiveTopicsMaxInactiveDurationSeconds (unset: the check
frequency) is deleted with its data, subscriptions included. A namespace's
inactive_topic_policies (deleteWhileInactive, inactiveTopicDeleteMode,
maxInactiveDurationSeconds) overrides the broker's settings, as in Pulsar. A partition goes like
any topic; its partitioned topic's metadata stays, so it is created again on next use.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, Union

from server.config import BrokerConfig
from server.errors import BrokerError
from server.topics.non_persistent_topic import NonPersistentTopic
from server.topics.topic import Topic

from .change_events import is_system_topic
from .fields import (DELETE_MODES, DELETE_WHEN_NO_SUBSCRIPTIONS, DELETE_WHEN_SUBSCRIPTIONS_CAUGHT_UP,
                     INACTIVE_TOPIC_POLICIES)
from .monitored_broker import MonitoredBroker
from .periodic import PeriodicTask, in_turns

log = logging.getLogger(__name__)

AnyTopic = Union[Topic, NonPersistentTopic]


@dataclass(frozen=True)
class InactiveTopicPolicy:
    delete_while_inactive: bool
    mode: str
    max_inactive_s: float


def broker_policy(config: BrokerConfig) -> InactiveTopicPolicy:
    max_inactive = config.broker_delete_inactive_topics_max_inactive_duration_seconds
    if max_inactive < 0:
        max_inactive = config.broker_delete_inactive_topics_frequency_seconds
    mode = config.broker_delete_inactive_topics_mode
    if mode not in DELETE_MODES:
        log.warning("brokerDeleteInactiveTopicsMode %r unknown; using %s", mode, DELETE_WHEN_NO_SUBSCRIPTIONS)
        mode = DELETE_WHEN_NO_SUBSCRIPTIONS
    return InactiveTopicPolicy(config.broker_delete_inactive_topics_enabled, mode, max_inactive)


def policy_of(policies: dict[str, Any], default: InactiveTopicPolicy) -> InactiveTopicPolicy:
    """The namespace's inactive_topic_policies where set (admin-validated), else the broker's."""
    stored = policies.get(INACTIVE_TOPIC_POLICIES)
    if not isinstance(stored, dict):
        return default
    return InactiveTopicPolicy(
        stored.get("deleteWhileInactive", default.delete_while_inactive),
        stored.get("inactiveTopicDeleteMode", default.mode),
        stored.get("maxInactiveDurationSeconds", default.max_inactive_s),
    )


def is_active(topic: AnyTopic, mode: str) -> bool:
    if topic.producers or any(s.consumers for s in topic.subscriptions.values()):
        return True
    if not isinstance(topic, Topic):   # a non-persistent subscription holds nothing
        return False
    if mode == DELETE_WHEN_SUBSCRIPTIONS_CAUGHT_UP:
        return any(s.backlog() > 0 for s in topic.subscriptions.values())
    return bool(topic.subscriptions)


class InactiveTopicMonitor(PeriodicTask):
    def __init__(self, broker: MonitoredBroker) -> None:
        super().__init__("inactive topic check",
                         broker.config.broker_delete_inactive_topics_frequency_seconds, self.check)
        self._broker = broker
        self._default = broker_policy(broker.config)
        #: Topic name -> when it was first seen inactive (monotonic seconds).
        self._inactive_since: dict[str, float] = {}

    async def check(self) -> None:
        now = time.monotonic()
        loaded = [*self._broker.topics, *self._broker.non_persistent_topics]
        for key in set(self._inactive_since) - {str(t.name) for t in loaded}:
            del self._inactive_since[key]
        async for topic in in_turns(loaded):
            if is_system_topic(topic.name):   # the broker's own state: never inactive
                continue
            policy = policy_of(topic.policies, self._default)
            key = str(topic.name)
            if not policy.delete_while_inactive or is_active(topic, policy.mode):
                self._inactive_since.pop(key, None)
            elif now - self._inactive_since.setdefault(key, now) >= policy.max_inactive_s:
                await self._delete(topic)

    async def _delete(self, topic: AnyTopic) -> None:
        self._inactive_since.pop(str(topic.name), None)
        try:
            await self._broker.delete_topic(topic.name, force=False)
        except BrokerError as exc:   # a client came back meanwhile
            log.info("inactive topic %s not deleted: %s", topic.name, exc)
            return
        log.info("deleted inactive topic %s", topic.name)
