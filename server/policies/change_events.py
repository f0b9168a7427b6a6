"""The namespace's `__change_events` system topic: where topic policies live, as in Pulsar.

Each change of a topic's policies is one message, keyed by the topic's name, holding Pulsar's
PulsarEvent shape {eventType: TOPIC_POLICY, action, topicPoliciesEvent: {domain, tenant,
namespace, topic, policies}} as JSON (Pulsar writes the same record in Avro). The newest event
of a key is the topic's policies; a DELETE event removes them. The events are appended to the
topic's managed ledger like any message, so they are durable before the change is answered,
survive restarts and kill -9, and are read back by replaying the log: from the topic's own
ledger by the broker serving it, from a read-only view of that ledger by any other broker of a
cluster (each appended event is shown to such views at once, before the change is answered).
"""

from __future__ import annotations

import json
from typing import Any

from managed_ledger.position import Position
from server.topics.system_records import RecordLedger, RecordTopic, append_record, read_records
from server.topics.topic_name import TopicName

CHANGE_EVENTS = "__change_events"
TRANSACTION_BUFFER_SNAPSHOT = "__transaction_buffer_snapshot"
#: Topics Pulsar keeps for itself (SystemTopicNames): hidden from listings, never user-created.
SYSTEM_TOPIC_NAMES = (CHANGE_EVENTS, TRANSACTION_BUFFER_SNAPSHOT, "__transaction_buffer_snapshot_segments",
                      "__transaction_buffer_snapshot_indexes")
SYSTEM_TOPIC_SUFFIXES = ("__transaction_pending_ack",)
#: A transaction coordinator's log (pulsar/system/__transaction_log_{N}).
SYSTEM_TOPIC_PREFIXES = ("__transaction_log_",)
WRITER_NAME = "pulsard-topic-policies"

#: (topic key, its policies or None when removed)
Event = tuple[str, dict[str, Any] | None]


#: Where events are read: the topic's managed ledger, or a read-only view of it.
EventLedger = RecordLedger
#: What the event log needs of the loaded `__change_events` topic.
EventTopic = RecordTopic


def change_events_topic(namespace: str) -> TopicName:
    """Built, not parsed: a V1 namespace (this broker's heartbeat namespace) has one too."""
    tenant, local = namespace.split("/", 1)
    return TopicName("persistent", tenant, local, CHANGE_EVENTS)


def is_system_topic(name: TopicName) -> bool:
    local = name.partitioned_parent.local_name
    return (local in SYSTEM_TOPIC_NAMES or local.endswith(SYSTEM_TOPIC_SUFFIXES)
            or local.startswith(SYSTEM_TOPIC_PREFIXES))


def is_system_topic_name(name: str) -> bool:
    """is_system_topic of a full name; a name without "__" (most) is not parsed."""
    return "__" in name and is_system_topic(TopicName.parse(name))


def event_key(topic: TopicName) -> str:
    """Partitions share their partitioned topic's policies, as in Pulsar."""
    return str(topic.partitioned_parent)


def encode_event(topic: TopicName, policies: dict[str, Any] | None) -> bytes:
    parent = topic.partitioned_parent
    event = {"eventType": "TOPIC_POLICY", "action": "DELETE" if policies is None else "UPDATE",
             "topicPoliciesEvent": {"domain": parent.domain, "tenant": parent.tenant,
                                    "namespace": parent.namespace_local, "topic": parent.local_name,
                                    "policies": policies}}
    return json.dumps(event, sort_keys=True).encode()


def decode_event(payload: bytes) -> Event | None:
    """(topic key, its policies or None when removed); None for an event of another kind."""
    try:
        event = json.loads(payload)
        body = event["topicPoliciesEvent"]
        topic = TopicName(body["domain"], body["tenant"], body["namespace"], body["topic"])
    except (ValueError, KeyError, TypeError):
        return None
    if event.get("eventType") != "TOPIC_POLICY":
        return None
    policies = body.get("policies")
    removed = event.get("action") == "DELETE" or not isinstance(policies, dict)
    return str(topic), None if removed else policies


async def read_events(ledger: EventLedger, after: Position | None) -> list[tuple[Position, Event | None]]:
    """The events after position `after` (from the first one when None) up to the last
    confirmed entry, each with its position; None for an entry that is no topic-policy event."""
    return await read_records(ledger, after, decode_event)


async def append(topic: EventTopic, key: str, payload: bytes) -> None:
    """Append one event; returns once it is durable and shown to read-only views."""
    await append_record(topic, key, payload, WRITER_NAME)
