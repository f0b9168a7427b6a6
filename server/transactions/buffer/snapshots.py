"""Transaction buffer snapshots on the namespace's `__transaction_buffer_snapshot` system topic,
as Pulsar keeps them: one record per snapshot keyed by the topic's name, holding Pulsar's
TransactionBufferSnapshot fields (topicName, sequenceId, maxReadPositionLedgerId/EntryId,
aborts [{txnIdMostBits, txnIdLeastBits, abortedMarkerLedgerId, abortedMarkerEntryId}]) as JSON;
the newest record of a topic is its snapshot (server/topics/system_records.py). A deleted
topic's snapshot is removed by a record holding its name only (Pulsar writes an empty value),
so that a topic made again under that name starts without one.

Standalone, each namespace's records are read once, when a topic of it first loads, and kept in
memory (this broker appends the later ones itself): a topic then learns in a dictionary lookup
whether it has a snapshot, and a namespace without the system topic costs one existence check.
In a cluster (`forwarder` set) other brokers write too: a topic load reads on from where the
namespace's records were read last (from a read-only view of the log when another broker
serves the system topic), and a snapshot goes to the broker serving it.

As Pulsar compacts this topic, the broker serving it compacts it every COMPACT_EVERY records
(server/topics/compaction.py: the newest record per topic), and a first read takes the
compacted view, then the log after its horizon: not every snapshot ever taken.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
from dataclasses import dataclass, field
from typing import Protocol

from managed_ledger.position import Position
from protocol.entry import payload_of
from server.errors import BrokerError, ServiceNotReady
from server.policies.change_events import TRANSACTION_BUFFER_SNAPSHOT
from server.topics.system_records import RecordLedger, RecordTopic, append_record, read_records
from server.topics.topic_name import TopicName
from server.transactions.interfaces import TxnID

from .buffer import Snapshot

log = logging.getLogger(__name__)

WRITER_NAME = "pulsard-transaction-buffer"
#: Records appended by this broker to a namespace's snapshot topic between two compactions.
COMPACT_EVERY = 1000


class SnapshotTopic(RecordTopic, Protocol):
    async def compact(self) -> None:
        """Start compacting in the background (a BrokerError when one runs already)."""


class SystemTopics(Protocol):
    async def system_topic(self, name: TopicName, create: bool) -> SnapshotTopic | None:
        """The system topic, loaded, when this broker serves it (created if asked); None when
        another broker does, or when it does not exist and create is False."""

    async def system_topic_view(self, name: TopicName) -> RecordLedger | None:
        """A read-only view of its log, caught up now; None when it does not exist."""


class SnapshotForwarder(Protocol):
    async def append(self, topic: TopicName, record: bytes) -> None:
        """Have the broker serving the namespace's snapshot topic append the record; returns
        once it is durable and shown to read-only views."""


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


def encode_removal(topic: TopicName) -> bytes:
    return json.dumps({"topicName": str(topic)}).encode()


def decode(payload: bytes) -> tuple[str, Snapshot | None] | None:
    """(topic, snapshot or None when removed), or None for a record that is none."""
    try:
        record = json.loads(payload)
        if "maxReadPositionLedgerId" not in record:
            return record["topicName"], None
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
    #: the last record read (None: none yet)
    read_to: Position | None = None
    #: records this broker appended to the snapshot topic since it last compacted it
    appended: int = 0


class TopicSnapshots:
    """The SnapshotLog of every topic of this broker."""

    def __init__(self, topics: SystemTopics) -> None:
        self._topics = topics
        #: cluster mode: how a record reaches the broker serving the snapshot topic
        self.forwarder: SnapshotForwarder | None = None
        self._namespaces: dict[str, _Namespace] = {}
        self._sequence = itertools.count()

    async def latest(self, topic: TopicName) -> Snapshot | None:
        return (await self._read(topic.namespace)).snapshots.get(str(topic))

    async def write(self, topic: TopicName, snapshot: Snapshot) -> None:
        namespace = await self._read(topic.namespace)
        await self._append(topic, encode(topic, next(self._sequence), snapshot))
        namespace.snapshots[str(topic)] = snapshot

    async def remove(self, topic: TopicName) -> None:
        """The topic was deleted: forget its snapshot (nothing is written when it had none)."""
        namespace = await self._read(topic.namespace)
        if str(topic) in namespace.snapshots:
            await self._append(topic, encode_removal(topic))
            del namespace.snapshots[str(topic)]

    async def append_here(self, topic: TopicName, record: bytes) -> None:
        """A record forwarded by another broker of the cluster: ServiceNotReady unless this one
        serves the snapshot topic."""
        log_topic = await self._topics.system_topic(snapshot_topic(topic.namespace), create=True)
        if log_topic is None:
            raise ServiceNotReady(f"{snapshot_topic(topic.namespace)} is served by another broker")
        await self._append_here(log_topic, topic, record)

    async def _append(self, topic: TopicName, record: bytes) -> None:
        log_topic = await self._topics.system_topic(snapshot_topic(topic.namespace), create=True)
        if log_topic is not None:
            await self._append_here(log_topic, topic, record)
        elif self.forwarder is not None:
            await self.forwarder.append(topic, record)
        else:
            raise ServiceNotReady(f"{snapshot_topic(topic.namespace)} is served by another broker")

    async def _append_here(self, log_topic: SnapshotTopic, topic: TopicName, record: bytes) -> None:
        await append_record(log_topic, str(topic), record, WRITER_NAME)
        namespace = self._namespaces.setdefault(topic.namespace, _Namespace())
        namespace.appended += 1
        if namespace.appended >= COMPACT_EVERY:
            namespace.appended = 0
            try:
                await log_topic.compact()
            except BrokerError:   # one runs already
                pass

    async def _read(self, name: str) -> _Namespace:
        """The namespace's snapshots, read on as far as its log goes (standalone: once)."""
        namespace = self._namespaces.setdefault(name, _Namespace())
        if namespace.loaded and self.forwarder is None:
            return namespace
        async with namespace.lock:
            if namespace.loaded and self.forwarder is None:
                return namespace
            system_topic = snapshot_topic(name)
            log_topic = await self._topics.system_topic(system_topic, create=False)
            ledger = log_topic.ledger if log_topic is not None else await self._topics.system_topic_view(system_topic)
            if log_topic is not None and namespace.read_to is None:
                view = await log_topic.ledger.compacted_view()
                if view is not None:
                    kept = await view.read_all()
                    for entry in kept:
                        _apply(namespace, decode(bytes(payload_of(entry.data))))
                    namespace.read_to = view.horizon
                    log.info("%s: %d snapshots read from its compacted view (up to %s)", system_topic,
                             len(kept), view.horizon)
            if ledger is not None:
                for position, record in await read_records(ledger, namespace.read_to, decode):
                    namespace.read_to = position
                    _apply(namespace, record)
            namespace.loaded = True
        return namespace


def _apply(namespace: _Namespace, record: tuple[str, Snapshot | None] | None) -> None:
    if record is not None and record[1] is not None:
        namespace.snapshots[record[0]] = record[1]
    elif record is not None:
        namespace.snapshots.pop(record[0], None)
