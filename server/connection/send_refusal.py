"""Why a SEND is refused before it reaches its producer, in Pulsar's error codes."""

from __future__ import annotations

from protocol import pulsar_api_pb2 as pb
from protocol.codec import Send
from protocol.entry import METADATA_OFFSET, payload_of


def refusal_of(send: Send, max_message_size: int, topic_limit: int = 0) -> tuple[int, str] | None:
    """None when the SEND may be published; else its (ServerError, message). The payload's
    exact size is worked out only for an entry long enough to exceed the limit, as an entry
    is the payload plus a few bytes of header and metadata. A topic's own maxMessageSize
    (topic_limit, 0 for none) bounds the whole entry, checksum and metadata included, and
    spares chunks, as Pulsar's isExceedMaximumMessageSize does."""
    if not send.checksum_ok:
        return pb.ChecksumError, "Checksum of the message does not match its content"
    if send.metadata_error is not None:   # refused as a corrupt message
        return pb.ChecksumError, send.metadata_error
    if len(send.entry) > max_message_size + METADATA_OFFSET:
        payload_size = len(payload_of(send.entry))
        if payload_size > max_message_size:
            return pb.NotAllowedError, f"Message of {payload_size} bytes exceeds maxMessageSize {max_message_size}"
    if topic_limit and len(send.entry) > topic_limit and not send.is_chunk:
        return pb.NotAllowedError, "Exceed maximum message size"
    return None
