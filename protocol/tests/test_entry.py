"""Stored-entry helpers: layout, checksum, metadata and payload access."""

from __future__ import annotations

import struct

import crc32c
import pytest

from protocol import pulsar_api_pb2 as pb
from protocol.entry import MAGIC_CRC32C, make_entry, payload_of, read_metadata, verify_checksum
from protocol.errors import ProtocolError
from protocol.tests.framing import metadata


def test_layout() -> None:
    meta = metadata(12, partition_key="k", num_messages_in_batch=3)
    entry = make_entry(meta, b"body")
    meta_bytes = meta.SerializeToString()
    magic, crc, size = struct.unpack_from(">HII", entry)
    assert magic == MAGIC_CRC32C == 0x0E01
    assert size == len(meta_bytes)
    assert entry[10:10 + size] == meta_bytes and entry[10 + size:] == b"body"
    assert crc == crc32c.crc32c(entry[6:])


def test_checksum() -> None:
    entry = make_entry(metadata(), b"body")
    assert verify_checksum(entry) and verify_checksum(memoryview(entry))
    for position in (2, 6, 12, len(entry) - 1):
        damaged = bytearray(entry)
        damaged[position] ^= 0x80
        assert not verify_checksum(bytes(damaged))


def test_read_metadata_and_payload() -> None:
    meta = metadata(5, ordering_key=b"ok", deliver_at_time=99, num_messages_in_batch=2)
    entry = make_entry(meta, b"\x00\x01payload")
    assert read_metadata(entry) == meta
    view = payload_of(entry)
    assert isinstance(view, memoryview) and bytes(view) == b"\x00\x01payload"


def test_empty_payload() -> None:
    entry = make_entry(metadata(), b"")
    assert bytes(payload_of(entry)) == b"" and read_metadata(entry).producer_name == "p"


@pytest.mark.parametrize(
    "entry",
    [
        b"",
        b"\x0e\x01\x00\x00",  # too short
        struct.pack(">HII", 0x0E02, 0, 0) + b"x",  # wrong magic
        struct.pack(">HII", 0x0E01, 0, 100) + b"x",  # metadata beyond the entry
        struct.pack(">HII", 0x0E01, 0, 0) + b"x",  # empty metadata
    ],
)
def test_malformed_entries(entry: bytes) -> None:
    with pytest.raises(ProtocolError):
        read_metadata(entry)
    with pytest.raises(ProtocolError):
        payload_of(entry)


def test_verify_checksum_needs_the_magic() -> None:
    with pytest.raises(ProtocolError):
        verify_checksum(struct.pack(">HII", 0x1234, 0, 0))


def test_metadata_that_does_not_parse() -> None:
    with pytest.raises(ProtocolError, match="does not parse"):
        read_metadata(struct.pack(">HII", 0x0E01, 0, 2) + b"\xff\xff")


def test_metadata_missing_required_fields() -> None:
    partial = pb.MessageMetadata(producer_name="p").SerializePartialToString()
    with pytest.raises(ProtocolError, match="sequence_id"):
        read_metadata(struct.pack(">HII", 0x0E01, 0, len(partial)) + partial)


def test_metadata_with_invalid_utf8() -> None:
    entry = make_entry(metadata(partition_key="k\x01"), b"")
    with pytest.raises(ProtocolError, match="bad UTF-8"):
        read_metadata(entry.replace(b"k\x01", b"k\xfe"))
