"""The bookies' v3 wire protocol and BookKeeper's entry format, hand-rolled (no generated code).

Framing: a 4-byte big-endian length, then a protobuf ``Request`` or ``Response``
(bookkeeper-proto BookkeeperProtocol.proto). Only the messages the client needs are here:
ADD_ENTRY (normal and RECOVERY_ADD), READ_ENTRY (normal, FENCE_LEDGER, entry -1 = the
bookie's last entry), and WRITE_LAC / READ_LAC (the explicit LAC of an idle writer). Each request carries a header {version=3, operation, txnId}; the reply
echoes it, so replies are matched on (txnId, operation) and may come in any order.

An entry's body is built by the client and stored as-is by the bookie:
``ledgerId | entryId | lastAddConfirmed | length`` (int64 big-endian each, length being the
ledger's cumulative length including this entry), then the digest (CRC32C: 4 bytes over the
32 header bytes and the payload), then the payload. An explicit LAC's body is
``ledgerId | lac`` and the CRC32C of those 16 bytes (DigestManager's LAC format).
"""

from __future__ import annotations

import enum
import hashlib
import struct
from dataclasses import dataclass

from native import crc32c

from ..errors import EntryCorruptedError

VERSION_THREE = 3
READ_ENTRY = 1
ADD_ENTRY = 2
WRITE_LAC = 6
READ_LAC = 7
#: AddRequest.flag RECOVERY_ADD, ReadRequest.flag FENCE_LEDGER
FLAG_RECOVERY_ADD = 1
FLAG_FENCE_LEDGER = 1
#: entry id asking a bookie for the last entry it holds
LAST_ADD_CONFIRMED = -1
HIGH_PRIORITY = 100

ENTRY_HEADER = struct.Struct(">qqqq")
LAC_HEADER = struct.Struct(">qq")
DIGEST_CRC32C = struct.Struct(">I")
METADATA_LENGTH = ENTRY_HEADER.size
_FRAME = struct.Struct(">i")


class Status(enum.IntEnum):
    EOK = 0
    ENOLEDGER = 402
    ENOENTRY = 403
    EBADREQ = 404
    EIO = 501
    EUA = 502
    EBADVERSION = 503
    EFENCED = 504
    EREADONLY = 505
    ETOOMANYREQUESTS = 506
    EUNKNOWNLEDGERSTATE = 507

    @classmethod
    def of(cls, code: int) -> Status | int:
        try:
            return cls(code)
        except ValueError:
            return code


def master_key(password: bytes) -> bytes:
    """What every add (and fencing read) presents: SHA-1("ledger" + password)."""
    return hashlib.sha1(b"ledger" + password).digest()


# ---- protobuf primitives -------------------------------------------------------------------

_SMALL_VARINTS = [bytes((i,)) for i in range(128)]


def varint(value: int) -> bytes:
    if 0 <= value < 128:
        return _SMALL_VARINTS[value]
    if value < 0:
        value += 1 << 64  # int64 two's complement, 10 bytes
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def field_varint(number: int, value: int) -> bytes:
    return varint(number << 3) + varint(value)


def field_bytes(number: int, value: bytes) -> bytes:
    return varint(number << 3 | 2) + varint(len(value)) + value


def read_varint(data: memoryview | bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7


def signed64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def parse_fields(data: memoryview) -> list[tuple[int, int | memoryview]]:
    """(field number, int or memoryview) in order; unknown wire types raise."""
    fields: list[tuple[int, int | memoryview]] = []
    pos, end = 0, len(data)
    while pos < end:
        key, pos = read_varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = read_varint(data, pos)
            fields.append((number, value))
        elif wire == 2:
            size, pos = read_varint(data, pos)
            fields.append((number, data[pos:pos + size]))
            pos += size
        elif wire == 1:
            fields.append((number, int.from_bytes(data[pos:pos + 8], "little")))
            pos += 8
        elif wire == 5:
            fields.append((number, int.from_bytes(data[pos:pos + 4], "little")))
            pos += 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
    return fields


# ---- requests -------------------------------------------------------------------------------

def _header(operation: int, txn_id: int, priority: int) -> bytes:
    header = field_varint(1, VERSION_THREE) + field_varint(2, operation) + field_varint(3, txn_id)
    if priority:
        header += field_varint(4, priority)
    return field_bytes(1, header)


def encode_add(txn_id: int, ledger_id: int, entry_id: int, key: bytes, body: list[bytes],
               recovery: bool = False) -> list[bytes]:
    """The frame of an AddRequest as buffers for writelines (the payload is not copied)."""
    body_size = sum(len(part) for part in body)
    head = field_varint(1, ledger_id) + field_varint(2, entry_id) + field_bytes(3, key) + \
        varint(4 << 3 | 2) + varint(body_size)
    tail = field_varint(100, FLAG_RECOVERY_ADD) if recovery else b""
    add_size = len(head) + body_size + len(tail)
    request = _header(ADD_ENTRY, txn_id, HIGH_PRIORITY if recovery else 0) + \
        varint(101 << 3 | 2) + varint(add_size) + head
    frame_size = len(request) + body_size + len(tail)
    return [_FRAME.pack(frame_size) + request, *body, tail]


def encode_read(txn_id: int, ledger_id: int, entry_id: int, key: bytes | None = None,
                fence: bool = False) -> bytes:
    read = field_varint(1, ledger_id) + field_varint(2, entry_id)
    if fence:
        assert key is not None, "fencing needs the master key"
        read += field_bytes(3, key) + field_varint(100, FLAG_FENCE_LEDGER)
    request = _header(READ_ENTRY, txn_id, HIGH_PRIORITY if fence else 0) + field_bytes(100, read)
    return _FRAME.pack(len(request)) + request


def encode_write_lac(txn_id: int, ledger_id: int, lac: int, key: bytes, body: bytes) -> bytes:
    write = field_varint(1, ledger_id) + field_varint(2, lac) + field_bytes(3, key) + field_bytes(4, body)
    request = _header(WRITE_LAC, txn_id, 0) + field_bytes(103, write)
    return _FRAME.pack(len(request)) + request


def encode_read_lac(txn_id: int, ledger_id: int) -> bytes:
    request = _header(READ_LAC, txn_id, 0) + field_bytes(104, field_varint(1, ledger_id))
    return _FRAME.pack(len(request)) + request


# ---- responses ------------------------------------------------------------------------------

@dataclass(slots=True)
class Response:
    operation: int
    txn_id: int
    status: int
    ledger_id: int = -1
    entry_id: int = -1
    body: bytes | None = None
    max_lac: int = -1
    #: READ_LAC: the explicit LAC's body (body is then the bookie's last entry)
    lac_body: bytes | None = None


def decode_response(frame: memoryview) -> Response:
    operation = txn_id = 0
    status = inner_status = -1
    inner: memoryview | None = None
    for number, value in parse_fields(frame):
        if number == 1:
            for sub, sub_value in parse_fields(value):  # type: ignore[arg-type]
                if sub == 2:
                    operation = sub_value  # type: ignore[assignment]
                elif sub == 3:
                    txn_id = sub_value  # type: ignore[assignment]
        elif number == 2:
            status = value  # type: ignore[assignment]
        elif number in (100, 101, 103, 104):
            inner = value  # type: ignore[assignment]
    response = Response(operation, txn_id, status)
    read_lac = operation == READ_LAC  # its fields 3 and 4 are bodies, not an entry id and body
    if inner is not None:
        for number, value in parse_fields(inner):
            if number == 1:
                inner_status = value  # type: ignore[assignment]
            elif number == 2:
                response.ledger_id = signed64(value)  # type: ignore[arg-type]
            elif number == 3 and read_lac:
                response.lac_body = bytes(value)  # type: ignore[arg-type]
            elif number == 3:
                response.entry_id = signed64(value)  # type: ignore[arg-type]
            elif number == 4:
                response.body = bytes(value)  # type: ignore[arg-type]
            elif number == 5:
                response.max_lac = signed64(value)  # type: ignore[arg-type]
    if response.status == Status.EOK and inner_status not in (-1, Status.EOK):
        response.status = inner_status
    return response


def split_frames(buffer: bytearray) -> tuple[list[memoryview], int]:
    """Whole frames at the start of buffer, and how many bytes they took."""
    frames: list[memoryview] = []
    view = memoryview(buffer)
    pos = 0
    while len(buffer) - pos >= 4:
        (size,) = _FRAME.unpack_from(buffer, pos)
        if len(buffer) - pos - 4 < size:
            break
        frames.append(view[pos + 4:pos + 4 + size])
        pos += 4 + size
    return frames, pos


# ---- entries ----------------------------------------------------------------------------------

def package_entry(ledger_id: int, entry_id: int, lac: int, length: int,
                  payload: bytes) -> list[bytes]:
    """Header + CRC32C digest (one buffer) and the payload (untouched)."""
    header = ENTRY_HEADER.pack(ledger_id, entry_id, lac, length)
    return [header + DIGEST_CRC32C.pack(crc32c(payload, crc32c(header))), payload]


@dataclass(frozen=True, slots=True)
class StoredEntry:
    ledger_id: int
    entry_id: int
    lac: int
    length: int
    payload: bytes


def unpack_entry(body: bytes, ledger_id: int, entry_id: int | None = None) -> StoredEntry:
    """Check the digest and the ids of a stored body; EntryCorruptedError otherwise."""
    if len(body) < METADATA_LENGTH + 4:
        raise EntryCorruptedError(f"ledger {ledger_id}: entry body of {len(body)} bytes")
    got_ledger, got_entry, lac, length = ENTRY_HEADER.unpack_from(body)
    (digest,) = DIGEST_CRC32C.unpack_from(body, METADATA_LENGTH)
    view = memoryview(body)
    payload = view[METADATA_LENGTH + 4:]
    if crc32c(payload, crc32c(view[:METADATA_LENGTH])) != digest:
        raise EntryCorruptedError(f"ledger {ledger_id} entry {got_entry}: digest mismatch")
    if got_ledger != ledger_id or (entry_id is not None and got_entry != entry_id):
        raise EntryCorruptedError(f"asked ledger {ledger_id} entry {entry_id}, "
                                  f"got {got_ledger}/{got_entry}")
    return StoredEntry(got_ledger, got_entry, lac, length, bytes(payload))


def package_lac(ledger_id: int, lac: int) -> bytes:
    header = LAC_HEADER.pack(ledger_id, lac)
    return header + DIGEST_CRC32C.pack(crc32c(header))


def unpack_lac(body: bytes, ledger_id: int) -> int:
    """The LAC of an explicit-LAC body, its digest and ledger id checked."""
    if len(body) != LAC_HEADER.size + DIGEST_CRC32C.size:
        raise EntryCorruptedError(f"ledger {ledger_id}: explicit LAC body of {len(body)} bytes")
    got_ledger, lac = LAC_HEADER.unpack_from(body)
    (digest,) = DIGEST_CRC32C.unpack_from(body, LAC_HEADER.size)
    if crc32c(body[:LAC_HEADER.size]) != digest or got_ledger != ledger_id:
        raise EntryCorruptedError(f"ledger {ledger_id}: bad explicit LAC (ledger {got_ledger})")
    return lac
