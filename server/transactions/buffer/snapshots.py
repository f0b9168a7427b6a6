"""Transaction buffer snapshots on the namespace's `__transaction_buffer_snapshot` system topic,
as Pulsar keeps them: one record per snapshot keyed by the topic's name, holding Pulsar's
TransactionBufferSnapshot fields (topicName, sequenceId, maxReadPositionLedgerId/EntryId,
aborts [{txnIdMostBits, txnIdLeastBits, abortedMarkerLedgerId, abortedMarkerEntryId}]) as JSON;
the newest record of a topic is its snapshot (server/topics/system_records.py).

Each namespace's records are read once, when a topic of it first loads, and kept in memory
(this broker appends the later ones itself): a topic then learns in a dictionary lookup whether
it has a snapshot, and a namespace without the system topic costs one existence check.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from dataclasses import dataclass, field
from typing import Protocol

from managed_ledger.position import Position
from server.policies.change_events import TRANSACTION_BUFFER_SNAPSHOT
from server.topics.system_records import RecordTopic, append_record, read_records
from server.topics.topic_name import TopicName
from server.transactions.interfaces import TxnID

from .buffer import Snapshot

WRITER_NAME = "pulsard-transaction-buffer"


class SystemTopics(Protocol):
    async def system_topic(self, name: TopicName, create: bool) -> RecordTopic | None:
        """The system topic, loaded, when this broker serves it (created if asked); None when
        it does not exist and create is False."""


def snapshot_topic(namespace: str) -> TopicName:
    tenant, local = namespace.split("/", 1)
    return TopicName("persistent", tenant, local, TRANSACTION_BUFFER_SNAPSHOT)


def encode(topic: TopicName, sequence_id: int, snapshot: Snapshot) -> bytes:
    return json.dumps({
        "topicName": str(topic), "sequenceId": sequence_id,
        "maxReadPositionLedgerId": snapshot.max_read.ledger_id, "maxReadPositionEntryId": snapshot.max_read.entry_id,
        "aborts": [{"txnIdMostBits": txn.most_bits, "txnIdLeastBits": txn.least_bits,
                    "abortedMarkerLedgerId": at.ledger_id, "abortedMarkerEntryId": at.entry_id}
                   for txn, at in snapshot.aborted.items()],
    }).encode()


def decode(payload: bytes) -> tuple[str, Snapshot] | None:
    """(topic, snapshot), or None for a record that is none."""
    try:
        record = json.loads(payload)
        return record["topicName"], Snapshot(
            Position(record["maxReadPositionLedgerId"], record["maxReadPositionEntryId"]),
            {TxnID(a["txnIdMostBits"], a["txnIdLeastBits"]): Position(a["abortedMarkerLedgerId"],
                                                                      a["abortedMarkerEntryId"])
             for a in record["aborts"]})
    except (ValueError, KeyError, TypeError):
        return None


@dataclass
class _Namespace:
    snapshots: dict[str, Snapshot] = field(default_factory=dict)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    loaded: bool = False


class TopicSnapshots:
    """The SnapshotLog of every topic of this broker."""

    def __init__(self, topics: SystemTopics) -> None:
        self._topics = topics
        self._namespaces: dict[str, _Namespace] = {}
        self._sequence = itertools.count()

    async def latest(self, topic: TopicName) -> Snapshot | None:
        namespace = await self._namespace(topic.namespace)
        return namespace.snapshots.get(str(topic))

    async def write(self, topic: TopicName, snapshot: Snapshot) -> None:
        namespace = await self._namespace(topic.namespace)
        log_topic = await self._topics.system_topic(snapshot_topic(topic.namespace), create=True)
        assert log_topic is not None
        await append_record(log_topic, str(topic), encode(topic, next(self._sequence), snapshot), WRITER_NAME)
        namespace.snapshots[str(topic)] = snapshot

    async def _namespace(self, name: str) -> _Namespace:
        namespace = self._namespaces.setdefault(name, _Namespace())
        if not namespace.loaded:
            async with namespace.lock:
                if not namespace.loaded:
                    log_topic = await self._topics.system_topic(snapshot_topic(name), create=False)
                    if log_topic is not None:
                        for _position, record in await read_records(log_topic.ledger, None, decode):
                            if record is not None:
                                namespace.snapshots[record[0]] = record[1]
                    namespace.loaded = True
        return namespace
