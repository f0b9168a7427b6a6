"""The BookKeeper wire codec, entry format and ledger metadata serde, without bookies."""

from __future__ import annotations

import struct

import pytest
from crc32c import crc32c

from bookkeeper.bk.codec import (ADD_ENTRY, READ_ENTRY, READ_LAC, WRITE_LAC, Status,
                                 decode_response, encode_add, encode_read, encode_read_lac,
                                 encode_write_lac, field_bytes, field_varint, master_key,
                                 package_entry, package_lac, parse_fields, split_frames,
                                 unpack_entry, unpack_lac, varint)
from bookkeeper.bk.ledger_metadata import LedgerMetadata, LedgerState, Segment, ledger_path
from bookkeeper.bk.placement import write_set
from bookkeeper.errors import EntryCorruptedError


def test_varints_match_protobuf() -> None:
    assert varint(0) == b"\x00" and varint(300) == b"\xac\x02"
    assert varint(-1) == b"\xff" * 9 + b"\x01"      # int64 -1: ten bytes


def test_add_request_frame() -> None:
    body = package_entry(7, 3, 2, 100, b"payload")
    frame = b"".join(encode_add(42, 7, 3, master_key(b""), body, recovery=True))
    (size,) = struct.unpack(">i", frame[:4])
    assert size == len(frame) - 4
    fields = dict(parse_fields(memoryview(frame[4:])))
    header = dict(parse_fields(fields[1]))
    assert header == {1: 3, 2: ADD_ENTRY, 3: 42, 4: 100}
    add = dict(parse_fields(fields[101]))
    assert (add[1], add[2], bytes(add[3]), add[100]) == (7, 3, master_key(b""), 1)
    assert bytes(add[4]) == b"".join(body)


def test_read_request_for_the_last_entry_with_fencing() -> None:
    frame = encode_read(5, 9, -1, master_key(b"pw"), fence=True)
    fields = dict(parse_fields(memoryview(frame[4:])))
    read = dict(parse_fields(fields[100]))
    assert read[2] == 2**64 - 1 and read[100] == 1 and bytes(read[3]) == master_key(b"pw")
    assert dict(parse_fields(fields[1]))[2] == READ_ENTRY


def test_master_key_is_sha1_of_ledger_and_password() -> None:
    import hashlib
    assert master_key(b"") == hashlib.sha1(b"ledger").digest()


def test_entry_digest_is_crc32c_over_header_and_payload() -> None:
    header_and_digest, payload = package_entry(1, 2, 0, 5, b"hello")
    header = header_and_digest[:32]
    assert struct.unpack(">qqqq", header) == (1, 2, 0, 5)
    assert struct.unpack(">I", header_and_digest[32:]) == (crc32c(header + b"hello"),)
    stored = unpack_entry(header_and_digest + payload, 1, 2)
    assert (stored.lac, stored.length, stored.payload) == (0, 5, b"hello")
    with pytest.raises(EntryCorruptedError):
        unpack_entry(header_and_digest + b"hellO", 1, 2)
    with pytest.raises(EntryCorruptedError):
        unpack_entry(header_and_digest + payload, 1, 3)


def test_responses_decode_and_frames_split_whole() -> None:
    header = field_bytes(1, field_varint(1, 3) + field_varint(2, READ_ENTRY) + field_varint(3, 77))
    read = field_varint(1, Status.ENOENTRY) + field_varint(2, 9) + field_varint(3, 4)
    message = header + field_varint(2, 0) + field_bytes(100, read)
    stream = bytearray(struct.pack(">i", len(message)) + message) * 2
    frames, used = split_frames(stream[:-3])
    assert len(frames) == 1 and used == len(message) + 4
    response = decode_response(frames[0])
    assert (response.txn_id, response.operation, response.status) == (77, READ_ENTRY, Status.ENOENTRY)
    assert (response.ledger_id, response.entry_id) == (9, 4)


def test_explicit_lac_requests_bodies_and_responses() -> None:
    body = package_lac(7, 41)
    assert body[:16] == struct.pack(">qq", 7, 41) and body[16:] == struct.pack(">I", crc32c(body[:16]))
    assert unpack_lac(body, 7) == 41
    for bad, ledger in ((body[:-1] + bytes([body[-1] ^ 1]), 7), (body, 8), (body[:-1], 7)):
        with pytest.raises(EntryCorruptedError):
            unpack_lac(bad, ledger)
    fields = dict(parse_fields(memoryview(encode_write_lac(3, 7, 41, master_key(b""), body)[4:])))
    assert dict(parse_fields(fields[1]))[2] == WRITE_LAC
    write = dict(parse_fields(fields[103]))
    assert (write[1], write[2], bytes(write[3]), bytes(write[4])) == (7, 41, master_key(b""), body)
    fields = dict(parse_fields(memoryview(encode_read_lac(4, 7)[4:])))
    assert dict(parse_fields(fields[1]))[2] == READ_LAC and dict(parse_fields(fields[104])) == {1: 7}
    last_entry = b"".join(package_entry(7, 40, 39, 100, b"x"))
    header = field_bytes(1, field_varint(1, 3) + field_varint(2, READ_LAC) + field_varint(3, 4))
    inner = field_varint(1, 0) + field_varint(2, 7) + field_bytes(3, body) + field_bytes(4, last_entry)
    response = decode_response(memoryview(header + field_varint(2, 0) + field_bytes(104, inner)))
    assert (response.operation, response.status, response.ledger_id) == (READ_LAC, Status.EOK, 7)
    assert (response.lac_body, response.body, response.entry_id) == (body, last_entry, -1)


def test_ledger_metadata_roundtrip_and_paths() -> None:
    metadata = LedgerMetadata(3, 2, 2, (Segment(0, ("a:1", "b:2", "c:3")),),
                              custom=(("application", b"pulsard"),), ctime_ms=123)
    changed = metadata.with_ensemble(10, ("a:1", "d:4", "c:3")).closed(19, 2000)
    assert LedgerMetadata.decode(changed.encode()) == changed
    assert changed.encode().startswith(b"BookieMetadataFormatVersion\t3\n")
    assert changed.state is LedgerState.CLOSED
    assert changed.ensemble_at(9) == ("a:1", "b:2", "c:3")
    assert changed.ensemble_at(10) == ("a:1", "d:4", "c:3")
    assert changed.with_ensemble(10, ("x:1", "y:2", "z:3")).segments[-1].first_entry_id == 10
    assert len(changed.with_ensemble(10, ("x:1", "y:2", "z:3")).segments) == 2
    assert ledger_path("/ledgers", 4) == "/ledgers/00/0000/L0004"
    assert ledger_path("/ledgers", 1234567890) == "/ledgers/12/3456/L7890"
    assert ledger_path("/ledgers", 2**31) == "/ledgers/000/0000/0021/4748/L3648"


def test_write_sets_stripe_by_entry_id() -> None:
    assert write_set(0, 3, 2) == [0, 1]
    assert write_set(2, 3, 2) == [2, 0]
    assert write_set(4, 3, 3) == [1, 2, 0]
