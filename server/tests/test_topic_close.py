"""A topic's close closes every part whatever the others do: after a lost ZooKeeper session the
deduplication snapshot cannot be written, yet the managed ledger must still close, or the
factory keeps it cached and a later load on this broker reuses it, stale."""

from __future__ import annotations

import logging
from types import SimpleNamespace

from managed_ledger.errors import MetadataSessionLostError
from server.config import BrokerConfig
from server.topics.topic import Topic
from server.topics.topic_name import TopicName


class Ledger:
    cursors: dict = {}
    closed = False

    async def close(self) -> None:
        self.closed = True


class LostSessionDeduplication:
    async def close(self) -> None:
        raise MetadataSessionLostError("ZooKeeper SessionExpiredError on /topic-state/t/deduplication")


async def test_the_managed_ledger_closes_when_the_deduplication_snapshot_fails(caplog) -> None:
    broker = SimpleNamespace(config=BrokerConfig())
    ledger = Ledger()
    topic = Topic(broker, TopicName.parse("persistent://public/default/t"), ledger,
                  deduplication=LostSessionDeduplication())
    with caplog.at_level(logging.WARNING):
        await topic.close()
    assert ledger.closed
    assert [r.getMessage() for r in caplog.records] == [
        "closing topic persistent://public/default/t: its deduplication snapshot failed: "
        "ZooKeeper SessionExpiredError on /topic-state/t/deduplication"]
    assert not any(r.exc_info for r in caplog.records)
