"""Messages inside a stored entry, for the places that look inside, off the hot path: topic
compaction, and the admin API's peek and examine (which decompress).

An entry's payload is compressed with the codec its metadata names; a batched payload is
``num_messages_in_batch`` x ``[u32 size][SingleMessageMetadata][payload]``. ``unpack`` yields
the messages of any entry (a plain entry is one message with batch index -1); ``repack``
builds an entry holding only some of a batch's messages, compressed with the same codec,
with a fresh checksum. Never used on the hot path.
"""

from __future__ import annotations

import functools
import struct
import zlib
from dataclasses import dataclass

from protocol import pulsar_api_pb2 as pb
from protocol.entry import make_entry, payload_of, read_metadata
from protocol.errors import ProtocolError

_U32 = struct.Struct(">I")


@dataclass(frozen=True, slots=True)
class Message:
    """One message of an entry: its key (None without one), whether it is a tombstone
    (empty payload or null_value), and where it sits in the batch (-1: not batched)."""

    key: str | None
    tombstone: bool
    batch_index: int
    single: pb.SingleMessageMetadata | None = None
    payload: bytes = b""


@functools.cache
def _codecs() -> dict:
    """codec -> (compress, decompress(data, uncompressed size)), as the clients encode them.
    Built on first use: a broker that never looks inside a compressed batch does not load the
    codec libraries (about 4 MiB)."""
    import cramjam
    import lz4.block

    return {
        pb.NONE: (lambda data: data, lambda data, size: data),
        pb.LZ4: (lambda data: lz4.block.compress(data, store_size=False),
                 lambda data, size: lz4.block.decompress(data, uncompressed_size=size)),
        pb.ZLIB: (zlib.compress, lambda data, size: zlib.decompress(data)),
        pb.ZSTD: (lambda data: bytes(cramjam.zstd.compress(data)),
                  lambda data, size: bytes(cramjam.zstd.decompress(data))),
        pb.SNAPPY: (lambda data: bytes(cramjam.snappy.compress_raw(data)),
                    lambda data, size: bytes(cramjam.snappy.decompress_raw(data))),
    }


def _codec(codec: int):
    try:
        return _codecs()[codec]
    except KeyError:
        raise ProtocolError(f"unknown compression codec {codec}") from None


def decompress(codec: int, data: bytes, size: int) -> bytes:
    try:
        return _codec(codec)[1](data, size)
    except ProtocolError:
        raise
    except Exception as exc:   # each codec library has its own error types
        raise ProtocolError(f"payload does not decompress: {exc}") from None


def compress(codec: int, data: bytes) -> bytes:
    return _codec(codec)[0](data)


def unpack(entry: bytes) -> list[Message]:
    """The messages of an entry (ProtocolError when it cannot be read, e.g. encrypted)."""
    metadata = read_metadata(entry)
    payload = bytes(payload_of(entry))
    if not metadata.HasField("num_messages_in_batch"):
        key = metadata.partition_key if metadata.HasField("partition_key") else None
        empty = (metadata.null_value or not payload) if metadata.compression == pb.NONE \
            else (metadata.null_value or metadata.uncompressed_size == 0)
        return [Message(key, empty, -1)]
    if metadata.encryption_keys:
        raise ProtocolError("an encrypted batch cannot be compacted")
    data = decompress(metadata.compression, payload, metadata.uncompressed_size)
    return list(_singles(data, metadata.num_messages_in_batch))


def _singles(data: bytes, count: int):
    offset = 0
    for index in range(count):
        if offset + 4 > len(data):
            raise ProtocolError(f"batch ends before message {index} of {count}")
        (size,) = _U32.unpack_from(data, offset)
        offset += 4
        single = pb.SingleMessageMetadata()
        try:
            single.ParseFromString(data[offset:offset + size])
        except Exception as exc:
            raise ProtocolError(f"SingleMessageMetadata {index} does not parse: {exc}") from None
        offset += size
        body = data[offset:offset + single.payload_size]
        offset += single.payload_size
        key = single.partition_key if single.HasField("partition_key") else None
        yield Message(key, single.null_value or not body or single.compacted_out, index, single, body)


def repack(entry: bytes, kept: list[Message]) -> bytes:
    """The batch entry with only `kept` of its messages (same metadata and codec)."""
    metadata = read_metadata(entry)
    parts = []
    for message in kept:
        single = message.single.SerializeToString()
        parts.append(_U32.pack(len(single)) + single + message.payload)
    raw = b"".join(parts)
    metadata.num_messages_in_batch = len(kept)
    metadata.uncompressed_size = len(raw)
    return make_entry(metadata, compress(metadata.compression, raw))
