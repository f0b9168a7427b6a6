"""The JSON of a topic's stats, partitioned stats and internal stats, in Pulsar's shapes
(TopicStats, PartitionedTopicStats, PersistentTopicInternalStats)."""

from __future__ import annotations

from typing import Any

from protocol import pulsar_api_pb2 as pb
from server.topics.topic import Topic

SubType = pb.CommandSubscribe.SubType
AccessMode = pb.ProducerAccessMode
#: Counters summed when partitions are aggregated.
_SUMMED = ("msgRateIn", "msgThroughputIn", "msgRateOut", "msgThroughputOut", "bytesInCounter", "msgInCounter",
           "bytesOutCounter", "msgOutCounter", "storageSize", "backlogSize")
_SUBSCRIPTION_SUMMED = ("msgBacklog", "msgBacklogNoDelayed", "unackedMessages", "msgRateOut", "msgThroughputOut",
                        "msgOutCounter", "bytesOutCounter", "msgRateRedeliver")


def topic_stats(topic: Any, window_s: float) -> dict[str, Any]:
    """TopicStats of a persistent or non-persistent topic."""
    stats, rates = topic.stats, topic.stats.rates(window_s)
    persistent = isinstance(topic, Topic)
    return {
        "msgRateIn": rates.msg_rate_in, "msgThroughputIn": rates.msg_throughput_in,
        "msgRateOut": rates.msg_rate_out, "msgThroughputOut": rates.msg_throughput_out,
        "bytesInCounter": stats.bytes_in, "msgInCounter": stats.messages_in,
        "bytesOutCounter": stats.bytes_out, "msgOutCounter": stats.messages_out,
        "averageMsgSize": stats.bytes_in / stats.messages_in if stats.messages_in else 0.0,
        "storageSize": topic.ledger.total_size if persistent else 0,
        "backlogSize": _backlog_bytes(topic) if persistent else 0,
        "publishers": [_publisher(p) for p in topic.producers],
        "waitingPublishers": 0,
        "subscriptions": {name: _subscription(sub, persistent, window_s)
                          for name, sub in sorted(topic.subscriptions.items())},
        "replication": {},
        "deduplicationStatus": "Enabled" if topic.deduplication is not None else "Disabled",
        "topicEpoch": topic.access.epoch,
    }


def _backlog_bytes(topic: Topic) -> int:
    """Bytes the slowest durable subscription has yet to consume, estimated from the mean entry
    size (Pulsar estimates it from ledger sizes too)."""
    backlogs = [sub.backlog() for sub in topic.subscriptions.values() if sub.durable]
    entries = topic.ledger.number_of_entries
    if not backlogs or not entries:
        return 0
    return topic.ledger.total_size * max(backlogs) // entries


def _publisher(producer: Any) -> dict[str, Any]:
    return {
        "producerId": producer.producer_id, "producerName": producer.name,
        "accessMode": AccessMode.Name(producer.access_mode), "address": producer.connection.remote,
        "clientVersion": producer.connection.client_version, "metadata": dict(producer.metadata),
    }


def _subscription(sub: Any, persistent: bool, window_s: float) -> dict[str, Any]:
    consumers, rates = sub.consumers, sub.stats.rates(window_s)
    return {
        "msgRateOut": rates.msg_rate_out, "msgThroughputOut": rates.msg_throughput_out,
        "msgOutCounter": sub.stats.messages_out, "bytesOutCounter": sub.stats.bytes_out,
        "msgRateRedeliver": rates.msg_rate_redeliver, "msgBacklog": sub.backlog(), "msgBacklogNoDelayed": sub.backlog(),
        "unackedMessages": sum(c.unacked_messages for c in consumers),
        "type": SubType.Name(sub.sub_type) if sub.sub_type is not None else "Exclusive",
        "isDurable": sub.durable if persistent else False, "isReplicated": False,
        "blockedSubscriptionOnUnackedMsgs": sub.blocked_on_unacked,
        "consumers": [_consumer(c, window_s) for c in consumers],
    }


def _consumer(consumer: Any, window_s: float) -> dict[str, Any]:
    return {
        "consumerName": consumer.name, "availablePermits": consumer.permits,
        "msgRateRedeliver": consumer.stats.rates(window_s).msg_rate_redeliver,
        "unackedMessages": consumer.unacked_messages, "blockedConsumerOnUnackedMsgs": consumer.blocked_on_unacked,
        "address": consumer.connection.remote, "clientVersion": consumer.connection.client_version,
        "priorityLevel": consumer.priority_level, "metadata": dict(consumer.metadata),
        "connectedSince": consumer.connected_since,
    }


def partitioned_stats(partitions: dict[str, dict[str, Any]], count: int, per_partition: bool) -> dict[str, Any]:
    """PartitionedTopicStats: the partitions' stats summed, publishers and subscriptions merged."""
    total: dict[str, Any] = {key: 0 for key in _SUMMED}
    total.update(publishers=[], subscriptions={}, replication={}, metadata={"partitions": count})
    for stats in partitions.values():
        for key in _SUMMED:
            total[key] += stats[key]
        total["publishers"].extend(stats["publishers"])
        for name, sub in stats["subscriptions"].items():
            merged = total["subscriptions"].setdefault(name, {**sub, **{key: 0 for key in _SUBSCRIPTION_SUMMED},
                                                               "consumers": []})
            for key in _SUBSCRIPTION_SUMMED:
                merged[key] += sub[key]
            merged["consumers"].extend(sub["consumers"])
    total["averageMsgSize"] = total["bytesInCounter"] / total["msgInCounter"] if total["msgInCounter"] else 0.0
    total["partitions"] = partitions if per_partition else {}
    return total


def internal_stats(topic: Topic) -> dict[str, Any]:
    """PersistentTopicInternalStats: the managed ledger's ledgers and its cursors."""
    return ledger_internal_stats(topic.ledger)


def ledger_internal_stats(ledger: Any) -> dict[str, Any]:
    """ManagedLedgerInternalStats, of a topic's ledger or a transaction log's."""
    ledgers = ledger.ledgers_info()
    current = ledgers[-1] if ledgers else (-1, 0, 0)
    return {
        "numberOfEntries": ledger.number_of_entries, "totalSize": ledger.total_size,
        "currentLedgerEntries": current[1], "currentLedgerSize": current[2],
        "lastConfirmedEntry": str(ledger.last_confirmed_entry),
        "state": "LedgerOpened", "waitingCursorsCount": 0, "pendingAddEntriesCount": 0,
        "ledgers": [{"ledgerId": lid, "entries": entries, "size": size, "offloaded": False}
                    for lid, entries, size in ledgers],
        "cursors": {name: _cursor(cursor) for name, cursor in sorted(ledger.cursors.items())},
        "schemaLedgers": [], "compactedLedger": {"ledgerId": -1, "entries": -1, "size": -1, "offloaded": False},
    }


def _cursor(cursor: Any) -> dict[str, Any]:
    return {
        "markDeletePosition": str(cursor.mark_delete_position), "readPosition": str(cursor.read_position),
        "numberOfEntriesSinceFirstNotAckedMessage": cursor.backlog(), "cursorLedger": cursor.cursor_ledger,
        "state": "Open", "active": True, "properties": {},
        # pulsard's own: the entry no copy of which can be read that holds the cursor, and those skipped
        "heldAtLostEntry": None if cursor.held_at_lost is None else str(cursor.held_at_lost),
        "lostEntriesSkipped": cursor.skipped_lost_entries,
    }
