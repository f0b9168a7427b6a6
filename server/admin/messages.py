"""Peek and examine: one stored entry as Pulsar's admin REST answers it (the payload, with
the message's metadata in X-Pulsar-* headers). Off the hot path, so the payload is
decompressed here, as Pulsar does, for the admin clients to split batches themselves."""

from __future__ import annotations

import json

from managed_ledger.position import Entry
from protocol import pulsar_api_pb2 as pb
from protocol.batch import decompress
from protocol.entry import payload_of, read_metadata
from protocol.errors import ProtocolError
from server import web
from server.topics.stats import pulsar_time
from server.topics.topic_base import key_values

from .errors import PRECONDITION_FAILED, RestError


def _decompress(metadata: pb.MessageMetadata, payload: bytes) -> bytes:
    """The payload as the producer built it, whichever codec (LZ4, ZLIB, ZSTD, SNAPPY)."""
    try:
        return decompress(metadata.compression, payload, metadata.uncompressed_size)
    except ProtocolError as exc:
        raise RestError(PRECONDITION_FAILED, f"Message cannot be decoded: {exc}") from None


def entry_response(entry: Entry) -> web.Response:
    metadata = read_metadata(entry.data)
    headers = {"X-Pulsar-Message-ID": str(entry.position), "X-Pulsar-producer-name": metadata.producer_name,
               "X-Pulsar-sequence-id": str(metadata.sequence_id),
               "X-Pulsar-publish-time": pulsar_time(metadata.publish_time)}
    if metadata.event_time:
        headers["X-Pulsar-event-time"] = pulsar_time(metadata.event_time)
    if metadata.HasField("deliver_at_time"):
        headers["X-Pulsar-deliver-at-time"] = pulsar_time(metadata.deliver_at_time)
    if metadata.HasField("num_messages_in_batch"):
        headers["X-Pulsar-num-batch-message"] = str(metadata.num_messages_in_batch)
        headers["X-Pulsar-batch-size"] = str(len(payload_of(entry.data)))
    if metadata.HasField("partition_key"):
        headers["X-Pulsar-partition-key"] = metadata.partition_key
    if metadata.properties:
        headers["X-Pulsar-PROPERTY"] = json.dumps(key_values(metadata.properties))
    body = _decompress(metadata, bytes(payload_of(entry.data)))
    return web.Response(body=body, headers=headers, content_type="application/octet-stream")
