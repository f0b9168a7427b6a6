"""The namespace's `__change_events` system topic: where topic policies live, as in Pulsar.

Each change of a topic's policies is one message, keyed by the topic's name, holding Pulsar's
PulsarEvent shape {eventType: TOPIC_POLICY, action, topicPoliciesEvent: {domain, tenant,
namespace, topic, policies}} as JSON (Pulsar writes the same record in Avro). The newest event
of a key is the topic's policies; a DELETE event removes them. The events are appended to the
topic's managed ledger like any message, so they are durable before the change is answered,
survive restarts and kill -9, and are read back by replaying the log.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from typing import Any, Callable, Protocol

from managed_ledger.interfaces import ManagedLedger
from managed_ledger.position import Position
from protocol import pulsar_api_pb2 as pb
from protocol.entry import make_entry, payload_of
from server.topics.topic_name import TopicName

CHANGE_EVENTS = "__change_events"
#: Topics Pulsar keeps for itself (SystemTopicNames): hidden from listings, never user-created.
SYSTEM_TOPIC_NAMES = (CHANGE_EVENTS, "__transaction_buffer_snapshot", "__transaction_buffer_snapshot_segments",
                      "__transaction_buffer_snapshot_indexes")
SYSTEM_TOPIC_SUFFIXES = ("__transaction_pending_ack",)
WRITER_NAME = "pulsard-topic-policies"
_READ_BATCH = 256


class EventTopic(Protocol):
    """What the event log needs of the loaded `__change_events` topic."""

    ledger: ManagedLedger

    def publish(self, entries: list[bytes], num_messages: int,
                on_done: Callable[[Position | None, BaseException | None], None]) -> None: ...


def change_events_topic(namespace: str) -> TopicName:
    """Built, not parsed: a V1 namespace (this broker's heartbeat namespace) has one too."""
    tenant, local = namespace.split("/", 1)
    return TopicName("persistent", tenant, local, CHANGE_EVENTS)


def is_system_topic(name: TopicName) -> bool:
    local = name.partitioned_parent.local_name
    return local in SYSTEM_TOPIC_NAMES or local.endswith(SYSTEM_TOPIC_SUFFIXES)


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


def decode_event(payload: bytes) -> tuple[str, dict[str, Any] | None] | None:
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


async def replay(topic: EventTopic) -> dict[str, dict[str, Any]]:
    """Every topic's policies as the log holds them now (the newest event of each key)."""
    ledger, policies = topic.ledger, {}
    position = ledger.first_position()
    while position <= ledger.last_confirmed_entry:
        entries = await ledger.read_entries(position, _READ_BATCH)
        if not entries:
            break
        for entry in entries:
            decoded = decode_event(bytes(payload_of(entry.data)))
            if decoded is not None:
                key, value = decoded
                if value is None:
                    policies.pop(key, None)
                else:
                    policies[key] = value
        position = ledger.next_position(entries[-1].position)
    return policies


_sequence = itertools.count()


async def append(topic: EventTopic, key: str, payload: bytes) -> None:
    """Append one event; returns once it is durable."""
    metadata = pb.MessageMetadata(producer_name=WRITER_NAME, sequence_id=next(_sequence),
                                  publish_time=int(time.time() * 1000), partition_key=key)
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def on_done(_position: Position | None, error: BaseException | None) -> None:
        if not done.done():
            done.set_exception(error) if error is not None else done.set_result(None)

    topic.publish([make_entry(metadata, payload)], 1, on_done)
    await done

