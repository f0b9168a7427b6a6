"""Stored entries: the bytes of a message from the checksum magic onward.

Layout: ``[u16 0x0e01][u32 crc32c][u32 metaSize][MessageMetadata][payload]``, with the
CRC32C (Castagnoli) covering metaSize + metadata + payload. The broker stores and
re-sends these bytes unchanged, so consumers verify the producer's own checksum.
The broker only ever reads the top-level metadata; payloads may be compressed,
encrypted or batched and are never unpacked here.
"""

from __future__ import annotations

import struct

from google.protobuf.message import DecodeError

from native import crc32c
from protocol import pulsar_api_pb2 as pb
from protocol.errors import ProtocolError

_parse_metadata = pb.MessageMetadata.FromString

MAGIC_CRC32C = 0x0E01
"""First two bytes of every stored entry: a CRC32C follows."""

_MAGIC_AND_CRC = struct.Struct(">HI")
_U32 = struct.Struct(">I")
_HEADER = struct.Struct(">HII")   # magic, crc32c, metaSize: read in one go on every SEND
CHECKSUM_OFFSET = _MAGIC_AND_CRC.size
"""Where the u32 metaSize, and with it the checksummed region, starts inside an entry."""
METADATA_OFFSET = CHECKSUM_OFFSET + _U32.size
"""Where the MessageMetadata starts inside an entry."""


def make_entry(metadata: pb.MessageMetadata, payload: bytes) -> bytes:
    """Build a stored entry, as a producer would send it, from metadata and payload."""
    meta = metadata.SerializeToString()
    body = _U32.pack(len(meta)) + meta + payload
    return _MAGIC_AND_CRC.pack(MAGIC_CRC32C, crc32c(body)) + body


def entry_from_frame_payload(payload: memoryview) -> tuple[bytes, bool]:
    """Turn the payload part of a SEND/MESSAGE frame into a stored entry.

    Returns ``(entry, checksum_ok)``. A payload sent without magic + checksum (very
    old clients) gets both prepended, so every stored entry has the same layout.
    A bad checksum is reported, not raised: the broker answers SEND_ERROR
    ChecksumError and the rest of the entry is then not inspected (a corrupted
    metaSize must not turn a checksum failure into a protocol violation).
    """
    if len(payload) >= METADATA_OFFSET:
        magic, expected, meta_size = _HEADER.unpack_from(payload)
        if magic == MAGIC_CRC32C:
            entry = bytes(payload)
            if crc32c(payload[CHECKSUM_OFFSET:]) != expected:
                return entry, False
            if meta_size == 0 or METADATA_OFFSET + meta_size > len(payload):
                _check_metadata_size(payload, CHECKSUM_OFFSET)   # raises
            return entry, True
    elif len(payload) >= 2 and payload[0] == MAGIC_CRC32C >> 8 and payload[1] == MAGIC_CRC32C & 0xFF:
        raise ProtocolError(f"payload of {len(payload)} bytes is too short for magic, checksum and metadata size")
    if len(payload) < _U32.size:
        raise ProtocolError(f"payload of {len(payload)} bytes is too short for a metadata size")
    _check_metadata_size(payload, 0)
    return _MAGIC_AND_CRC.pack(MAGIC_CRC32C, crc32c(payload)) + payload, True


def verify_checksum(entry: bytes | memoryview) -> bool:
    """Whether the entry's CRC32C matches its metaSize + metadata + payload."""
    _check_magic(entry)
    _, expected = _MAGIC_AND_CRC.unpack_from(entry)
    return crc32c(memoryview(entry)[CHECKSUM_OFFSET:]) == expected


def read_metadata(entry: bytes | memoryview) -> pb.MessageMetadata:
    """Parse the entry's top-level MessageMetadata (never the batch inside)."""
    end = _metadata_end(entry)
    try:   # FromString on a small bytes copy: the cheapest parse protobuf offers (bad UTF-8 too)
        metadata = _parse_metadata(bytes(entry[METADATA_OFFSET:end]))
    except (DecodeError, UnicodeDecodeError) as exc:
        raise ProtocolError(f"MessageMetadata does not parse: {exc}") from None
    if not metadata.IsInitialized():
        missing = ", ".join(metadata.FindInitializationErrors())
        raise ProtocolError(f"MessageMetadata lacks required fields: {missing}")
    return metadata


def payload_of(entry: bytes | memoryview) -> memoryview:
    """The payload after the metadata, without copying."""
    return memoryview(entry)[_metadata_end(entry):]


def _metadata_end(entry: bytes | memoryview) -> int:
    if len(entry) < METADATA_OFFSET:
        _check_magic(entry)   # raises: too short
    magic, _, meta_size = _HEADER.unpack_from(entry)
    end = METADATA_OFFSET + meta_size
    if magic != MAGIC_CRC32C or meta_size == 0 or end > len(entry):
        _check_magic(entry)
        _check_metadata_size(memoryview(entry), CHECKSUM_OFFSET)   # one of them raises
    return end


def _check_magic(entry: bytes | memoryview) -> None:
    if len(entry) < METADATA_OFFSET:
        raise ProtocolError(f"entry of {len(entry)} bytes is too short for magic, checksum and metadata size")
    magic, _ = _MAGIC_AND_CRC.unpack_from(entry)
    if magic != MAGIC_CRC32C:
        raise ProtocolError(f"entry starts with 0x{magic:04x}, not the checksum magic 0x{MAGIC_CRC32C:04x}")


def _check_metadata_size(view: memoryview, size_at: int) -> int:
    """Validate the u32 metaSize at ``size_at``; return where the metadata ends."""
    (meta_size,) = _U32.unpack_from(view, size_at)
    end = size_at + _U32.size + meta_size
    if meta_size == 0 or end > len(view):
        raise ProtocolError(f"metadata size {meta_size} does not fit a payload of {len(view)} bytes")
    return end
