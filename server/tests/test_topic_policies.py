"""TopicPolicies reading `__change_events` where it is served or through a read-only view of it
(as a broker of a cluster that does not serve it), over the embedded storage: changes made
elsewhere are read and heard of, forwarded changes are read back at once, the reader goes on
from its position when it becomes the writer, and a deleted log leaves no policies."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from managed_ledger.config import StorageConfig
from managed_ledger.errors import ManagedLedgerStorageError
from managed_ledger.factory import open_factory
from server.errors import PersistenceError
from server.policies.change_events import change_events_topic
from server.policies.topic_policies import TopicPolicies
from server.topics.topic_name import TopicName

NAMESPACE = "public/default"
LOG = str(change_events_topic(NAMESPACE))
TOPIC = TopicName.parse(f"persistent://{NAMESPACE}/t")


class LogTopic:
    """The loaded `__change_events` topic, as far as TopicPolicies uses it."""

    def __init__(self, ledger) -> None:
        self.ledger = ledger

    def publish(self, entries, num_messages, on_done) -> None:
        self.ledger.append_run(entries, on_done)


class Logs:
    """ChangeEventLogs of one broker: served here or not, as the test says."""

    def __init__(self, factory, served_here: bool) -> None:
        self.factory = factory
        self.served_here = served_here
        self.topic: LogTopic | None = None
        self.reads = 0
        self.broken = False

    async def change_events(self, namespace: str, create: bool) -> LogTopic | None:
        self.reads += 1
        if not self.served_here:
            return None
        if self.topic is None:
            if not create and not await self.factory.ledger_exists(LOG):
                return None
            self.topic = LogTopic(await self.factory.open_ledger(LOG))
        return self.topic

    async def change_events_view(self, namespace: str):
        if self.broken:
            raise ManagedLedgerStorageError("bookies away")
        view = await self.factory.open_read_only(LOG)
        return None if view is None else BreakableView(view, self)


class BreakableView:
    """A read-only view whose storage fails while its logs say `broken`."""

    def __init__(self, view, logs: Logs) -> None:
        self._view = view
        self._logs = logs

    async def refresh(self) -> bool:
        if self._logs.broken:
            raise ManagedLedgerStorageError("bookies away")
        return await self._view.refresh()

    def __getattr__(self, name: str):
        return getattr(self._view, name)


class ForwardTo:
    def __init__(self, owner: TopicPolicies) -> None:
        self.owner = owner

    async def append(self, topic: TopicName, policies) -> None:
        await self.owner.append_here(topic, policies)


async def test_changes_are_read_where_the_log_is_not_served_and_reach_it_when_made_there(tmp_path: Path) -> None:
    factory = await open_factory(StorageConfig(tmp_path, retention_time_minutes=-1, retention_size_mb=-1))
    try:
        owner_logs, reader_logs = Logs(factory, served_here=True), Logs(factory, served_here=False)
        owner, reader = TopicPolicies(owner_logs), TopicPolicies(reader_logs)
        heard: list[TopicName] = []
        reader.add_listener(heard.append)
        assert await reader.get(TOPIC) == {}   # no log yet
        await owner.update(TOPIC, messageTTLInSeconds=60)
        assert await reader.get(TOPIC) == {}   # as read so far
        await reader.catch_up(NAMESPACE)
        assert await reader.get(TOPIC) == {"messageTTLInSeconds": 60} and heard == [TOPIC]
        await reader.catch_up(NAMESPACE)
        assert heard == [TOPIC]   # nothing new: nobody told

        reader.forwarder = ForwardTo(owner)   # a change made by the reader is appended by the owner
        await reader.update(TOPIC.partition(0), maxProducerPerTopic=2)   # partitions share the parent's
        expected = {"messageTTLInSeconds": 60, "maxProducerPerTopic": 2}
        assert await reader.get(TOPIC) == expected == await owner.get(TOPIC)

        await owner_logs.topic.ledger.close()   # the log moves to the reader's broker
        owner_logs.served_here, reader_logs.served_here = False, True
        await reader.update(TOPIC, messageTTLInSeconds=None)
        assert await reader.get(TOPIC) == {"maxProducerPerTopic": 2}
        fresh = TopicPolicies(Logs(factory, served_here=False))   # replays the whole log
        assert await fresh.get(TOPIC) == {"maxProducerPerTopic": 2}

        await reader_logs.topic.ledger.close()
        reader_logs.topic, reader_logs.served_here = None, False
        await factory.delete_ledger(LOG)   # with its namespace
        heard.clear()
        await reader.catch_up(NAMESPACE)
        assert await reader.get(TOPIC) == {} and heard == [TOPIC]
    finally:
        await factory.close()


async def test_concurrent_catch_ups_share_reads(tmp_path: Path) -> None:
    """Topics of a namespace loading together (a broker taking bundles over) each need the
    events as of their call: one read begun after all of them serves them all."""
    factory = await open_factory(StorageConfig(tmp_path))
    try:
        owner, logs = TopicPolicies(Logs(factory, served_here=True)), Logs(factory, served_here=False)
        reader = TopicPolicies(logs)
        await owner.update(TOPIC, messageTTLInSeconds=60)
        await reader.catch_up(NAMESPACE)
        await owner.update(TOPIC, maxProducerPerTopic=2)
        logs.reads = 0
        states = await asyncio.gather(*[reader.catch_up(NAMESPACE) for _ in range(20)])
        assert logs.reads == 2   # the first caller's read, then one for the 19 that came meanwhile
        assert all(state.policies[str(TOPIC)] == {"messageTTLInSeconds": 60, "maxProducerPerTopic": 2}
                   for state in states)
    finally:
        await factory.close()


async def test_a_topic_loads_with_the_policies_read_before_while_the_log_cannot_be_read(tmp_path: Path) -> None:
    factory = await open_factory(StorageConfig(tmp_path))
    try:
        owner, logs = TopicPolicies(Logs(factory, served_here=True)), Logs(factory, served_here=False)
        reader = TopicPolicies(logs)
        await owner.update(TOPIC, messageTTLInSeconds=60)
        await reader.catch_up(NAMESPACE)
        logs.broken = True
        with pytest.raises(PersistenceError):
            await reader.catch_up(NAMESPACE)
        await reader.catch_up_if_readable(NAMESPACE)
        assert await reader.get(TOPIC) == {"messageTTLInSeconds": 60}
        reader.forget(NAMESPACE)   # never read: nothing to go on with
        with pytest.raises(PersistenceError):
            await reader.catch_up_if_readable(NAMESPACE)
        logs.broken = False
        await reader.catch_up_if_readable(NAMESPACE)
        assert await reader.get(TOPIC) == {"messageTTLInSeconds": 60}
    finally:
        await factory.close()
