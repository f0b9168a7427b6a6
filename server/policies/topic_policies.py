"""Topic-level policies: Pulsar's TopicPolicies JSON (its field names, e.g. "maxProducerPerTopic"),
kept as events in the namespace's `__change_events` system topic (change_events.py), as
Pulsar's SystemTopicBasedTopicPoliciesService keeps them.

A namespace's events are replayed once, the first time a topic of it needs its policies, and
kept in memory; a change is appended (durable) before the cache and the listeners see it. A
partitioned topic's partitions share their parent's policies. An absent field means "use the
namespace's, else the broker's" (catalog.applied_view).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable, Protocol

from server.topics.topic_name import TopicName

from .change_events import EventTopic, append, encode_event, event_key, replay

log = logging.getLogger(__name__)


class SystemTopics(Protocol):
    async def change_events(self, namespace: str, create: bool) -> EventTopic | None:
        """The namespace's loaded `__change_events` topic; None when it does not exist and
        create is False."""


class TopicPolicies:
    """Read and update topics' policies documents; listeners hear of every change."""

    def __init__(self, system_topics: SystemTopics) -> None:
        self._system_topics = system_topics
        self._namespaces: dict[str, dict[str, dict[str, Any]]] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._listeners: list[Callable[[TopicName], None]] = []

    def add_listener(self, listener: Callable[[TopicName], None]) -> None:
        """listener(partitioned parent name) after each change, once it is durable."""
        self._listeners.append(listener)

    async def get(self, topic: TopicName) -> dict[str, Any]:
        return dict((await self._of_namespace(topic.namespace)).get(event_key(topic)) or {})

    async def update(self, topic: TopicName, **fields: Any) -> dict[str, Any]:
        """Set (or, with None, clear) fields of the topic's policies."""
        async with self._lock(topic.namespace):
            current = await self.get(topic)
            for name, value in fields.items():
                if value is None:
                    current.pop(name, None)
                else:
                    current[name] = value
            await self._write(topic, current or None)
        return current

    async def remove(self, topic: TopicName) -> None:
        """The topic was deleted: its policies go with it (a DELETE event)."""
        async with self._lock(topic.namespace):
            if event_key(topic) in await self._of_namespace(topic.namespace):
                await self._write(topic, None)

    def forget(self, namespace: str) -> None:
        """Drop a namespace's cache (it was deleted, or this broker no longer serves it)."""
        self._namespaces.pop(namespace, None)

    async def _write(self, topic: TopicName, policies: dict[str, Any] | None) -> None:
        events = await self._system_topics.change_events(topic.namespace, create=True)
        assert events is not None
        await append(events, event_key(topic), encode_event(topic, policies))
        cached = await self._of_namespace(topic.namespace)
        if policies is None:
            cached.pop(event_key(topic), None)
        else:
            cached[event_key(topic)] = policies
        for listener in self._listeners:
            listener(topic.partitioned_parent)

    async def _of_namespace(self, namespace: str) -> dict[str, dict[str, Any]]:
        cached = self._namespaces.get(namespace)
        if cached is None:
            events = await self._system_topics.change_events(namespace, create=False)
            loaded = await replay(events) if events is not None else {}
            cached = self._namespaces.setdefault(namespace, loaded)
        return cached

    def _lock(self, namespace: str) -> asyncio.Lock:
        return self._locks.setdefault(namespace, asyncio.Lock())
