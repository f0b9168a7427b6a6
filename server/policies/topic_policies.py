"""Topic-level policies: Pulsar's TopicPolicies JSON (its field names, e.g. "maxProducerPerTopic"),
kept as events in the namespace's `__change_events` system topic (change_events.py), as
Pulsar's SystemTopicBasedTopicPoliciesService keeps them.

Each broker keeps in memory the policies a namespace's events say, as far as it has read them:
from the `__change_events` topic's own ledger when it serves that topic, else (another broker of
a cluster serves it) from a read-only view of that ledger. It reads on when a topic of the
namespace loads, and every second while some are loaded (TopicPoliciesWatch), so changes made
through other brokers reach it within about a second. A change is appended by the broker serving
`__change_events`, its only writer: another broker sends it there (EventForwarder, cluster
mode), then reads it back. Listeners hear of every change read, whoever made it.

A partitioned topic's partitions share their parent's policies. An absent field means "use the
namespace's, else the broker's" (catalog.applied_view).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Protocol

from log_limits.repeats import RepeatLimitedLog
from managed_ledger.errors import ManagedLedgerError, MetadataStoreError
from managed_ledger.position import Position
from server.errors import BrokerError, PersistenceError, ServiceNotReady
from server.topics.topic_name import TopicName

from .change_events import (EventLedger, EventTopic, append, change_events_topic, encode_event, event_key,
                            read_events)
from .periodic import PeriodicTask

log = logging.getLogger(__name__)
_repeats = RepeatLimitedLog(log)   # a store or bookie down fails every round: one line per interval


class ReadOnlyEvents(EventLedger, Protocol):
    async def refresh(self) -> bool:
        """Catch up with the writer; False once the log does not exist."""


class ChangeEventLogs(Protocol):
    async def change_events(self, namespace: str, create: bool) -> EventTopic | None:
        """The namespace's `__change_events` topic, loaded, when this broker serves it; None
        when another broker serves it, or when it does not exist and create is False."""

    async def change_events_view(self, namespace: str) -> ReadOnlyEvents | None:
        """A read-only view of it, caught up now, when another broker serves it; else None."""


class EventForwarder(Protocol):
    async def append(self, topic: TopicName, policies: dict[str, Any] | None) -> None:
        """Have the broker serving the namespace's `__change_events` append the topic's event;
        returns once it is durable and shown to read-only views."""


@dataclass
class _Namespace:
    policies: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: the last entry read (None: none yet)
    read_to: Position | None = None
    #: where the events are read while another broker serves `__change_events`
    view: ReadOnlyEvents | None = None


class TopicPolicies:
    """Read and update topics' policies documents; listeners hear of every change."""

    def __init__(self, logs: ChangeEventLogs) -> None:
        self._logs = logs
        #: cluster mode: how a change reaches the broker serving `__change_events`
        self.forwarder: EventForwarder | None = None
        self._namespaces: dict[str, _Namespace] = {}
        self._reading: dict[str, asyncio.Lock] = {}
        #: calls of catch_up so far, and how many of them the last read began after
        self._asked: dict[str, int] = {}
        self._read_for: dict[str, int] = {}
        self._changing: dict[str, asyncio.Lock] = {}
        self._listeners: list[Callable[[TopicName], None]] = []

    def add_listener(self, listener: Callable[[TopicName], None]) -> None:
        """listener(partitioned parent name) after each change read, once it is durable."""
        self._listeners.append(listener)

    async def get(self, topic: TopicName) -> dict[str, Any]:
        state = self._namespaces.get(topic.namespace)
        if state is None:
            state = await self.catch_up(topic.namespace)
        return dict(state.policies.get(event_key(topic)) or {})

    async def update(self, topic: TopicName, **fields: Any) -> dict[str, Any]:
        """Set (or, with None, clear) fields of the topic's policies."""
        async with _lock(self._changing, topic.namespace):
            state = await self.catch_up(topic.namespace)
            current = dict(state.policies.get(event_key(topic)) or {})
            for name, value in fields.items():
                if value is None:
                    current.pop(name, None)
                else:
                    current[name] = value
            await self._change(topic, current or None, forward=True)
        return current

    async def remove(self, topic: TopicName) -> None:
        """The topic was deleted: its policies go with it (a DELETE event)."""
        async with _lock(self._changing, topic.namespace):
            if event_key(topic) in (await self.catch_up(topic.namespace)).policies:
                await self._change(topic, None, forward=True)

    async def append_here(self, topic: TopicName, policies: dict[str, Any] | None) -> None:
        """A change another broker forwarded: appended here (ServiceNotReady when this broker
        does not serve `__change_events`)."""
        await self._change(topic, policies, forward=False)

    def forget(self, namespace: str) -> None:
        """Drop a namespace's policies (it was deleted, or no topic of it is loaded here)."""
        self._namespaces.pop(namespace, None)

    def known_namespaces(self) -> list[str]:
        return list(self._namespaces)

    async def catch_up_if_readable(self, namespace: str) -> None:
        """catch_up, for a topic loading: when the events cannot be read now but were before,
        it goes with what was read (as it would have between two reads); never read:
        PersistenceError."""
        try:
            await self.catch_up(namespace)
        except PersistenceError as exc:
            if namespace not in self._namespaces:
                raise
            _repeats.warning(type(exc), "%s; going on with the topic policies read before", exc)

    async def catch_up(self, namespace: str) -> _Namespace:
        """Read the namespace's events appended since the last read (all of them the first
        time); PersistenceError when they cannot be read."""
        ticket = self._asked[namespace] = self._asked.get(namespace, 0) + 1
        async with _lock(self._reading, namespace):
            state = self._namespaces.get(namespace)
            if state is not None and self._read_for.get(namespace, 0) >= ticket:
                return state   # a read that began after this call ended meanwhile: many loads, one read
            covers = self._asked[namespace]
            state = state or _Namespace()
            before = dict(state.policies)
            try:
                ledger = await self._source(namespace, state)
                events = await read_events(ledger, state.read_to) if ledger is not None else []
            except (ManagedLedgerError, MetadataStoreError) as exc:
                raise PersistenceError(f"Failed to read the topic policies of {namespace}: {exc}") from exc
            for position, event in events:
                if event is not None:
                    key, policies = event
                    if policies is None:
                        state.policies.pop(key, None)
                    else:
                        state.policies[key] = policies
                state.read_to = position
            self._namespaces[namespace] = state
            self._read_for[namespace] = covers
        changed = {key for key in before.keys() | state.policies.keys() if before.get(key) != state.policies.get(key)}
        for key in sorted(changed):
            for listener in self._listeners:
                listener(TopicName.parse(key))
        return state

    async def _source(self, namespace: str, state: _Namespace) -> EventLedger | None:
        """The topic's own ledger where this broker serves it, else a view of it; None while
        the log does not exist. A log deleted since it was read (with its namespace) leaves
        no policies."""
        topic = await self._logs.change_events(namespace, create=False)
        if topic is not None:
            state.view = None
            return topic.ledger
        deleted = state.view is not None and not await state.view.refresh()
        if state.view is None or deleted:
            state.view = await self._logs.change_events_view(namespace)
            if deleted or state.view is None:
                state.policies, state.read_to = {}, None
        return state.view

    async def _change(self, topic: TopicName, policies: dict[str, Any] | None, forward: bool) -> None:
        """Append the event where `__change_events` is served, then read it back."""
        events = await self._logs.change_events(topic.namespace, create=True)
        if events is not None:
            await append(events, event_key(topic), encode_event(topic, policies))
        elif forward and self.forwarder is not None:
            await self.forwarder.append(topic, policies)
        else:
            raise ServiceNotReady(f"{change_events_topic(topic.namespace)} is not served by this broker")
        await self.catch_up(topic.namespace)


def _lock(locks: dict[str, asyncio.Lock], namespace: str) -> asyncio.Lock:
    return locks.setdefault(namespace, asyncio.Lock())


class TopicPoliciesWatch(PeriodicTask):
    """Changes made through other brokers reach the loaded topics within a second: each
    namespace with topics loaded here reads on (a look at the topic's own ledger where this
    broker serves `__change_events`); the others are forgotten, and read afresh when a topic of
    theirs loads again."""

    INTERVAL_S = 1.0

    def __init__(self, policies: TopicPolicies, loaded_namespaces: Callable[[], Iterable[str]]) -> None:
        super().__init__("topic policies watch", self.INTERVAL_S, self.check)
        self._policies = policies
        self._loaded_namespaces = loaded_namespaces

    async def check(self) -> None:
        loaded = set(self._loaded_namespaces())
        for namespace in self._policies.known_namespaces():
            if namespace not in loaded:
                self._policies.forget(namespace)
        for namespace in sorted(loaded):
            try:
                await self._policies.catch_up(namespace)
            except BrokerError as exc:
                _repeats.warning(type(exc), "topic policies of %s not read: %s", namespace, exc)
