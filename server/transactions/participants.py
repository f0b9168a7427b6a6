"""TransactionParticipants on a broker: a coordinator ends a transaction on a partition's
transaction buffer and a subscription's pending acks by loading the topic here (as an admin
operation loads it: never created) and calling them. In a cluster, a topic another broker
serves is handed to `remote` (server/cluster/txn_forwarding.py), which reaches its owner.

A topic that no longer exists, a subscription that is gone, or one without transactional
state (a non-persistent topic) has nothing to end: that is success, as the contract says.
"""

from __future__ import annotations

from typing import Any, Protocol

from server.errors import ServiceNotReady, TopicNotFound
from server.topics.topic_name import TopicName
from server.transactions.interfaces import TransactionParticipants, TxnID


class LoadedTopics(Protocol):
    async def get_topic(self, name: TopicName, create: bool = True) -> Any: ...


class LocalParticipants:
    def __init__(self, topics: LoadedTopics, remote: TransactionParticipants | None = None) -> None:
        self._topics = topics
        self.remote = remote

    async def end_on_partition(self, topic: str, txn: TxnID, action: int) -> None:
        try:
            loaded = await self._load(topic)
        except ServiceNotReady:
            if self.remote is None:
                raise
            await self.remote.end_on_partition(topic, txn, action)
            return
        buffer = getattr(loaded, "transaction_buffer", None)
        if buffer is not None:
            await buffer.end_txn(txn, action)

    async def end_on_subscription(self, topic: str, subscription: str, txn: TxnID, action: int) -> None:
        try:
            loaded = await self._load(topic)
        except ServiceNotReady:
            if self.remote is None:
                raise
            await self.remote.end_on_subscription(topic, subscription, txn, action)
            return
        found = loaded.subscriptions.get(subscription) if loaded is not None else None
        pending = getattr(found, "pending_acks", None)
        if pending is not None:
            await pending.end_txn(txn, action)

    async def _load(self, topic: str) -> Any:
        name = TopicName.parse(topic)
        if not name.persistent:
            return None
        try:
            return await self._topics.get_topic(name, create=False)
        except TopicNotFound:
            return None
