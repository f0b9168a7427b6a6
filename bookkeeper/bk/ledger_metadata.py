"""Ledger metadata in BookKeeper's own format and place, so BookKeeper's tools read our ledgers.

Format v3 (meta/LedgerMetadataSerDe.java): the text ``BookieMetadataFormatVersion\\t3\\n``, then
a varint length and a ``LedgerMetadataFormat`` protobuf: quorumSize=1, ensembleSize=2, length=3,
lastEntryId=4, state=5 (OPEN=1, IN_RECOVERY=2, CLOSED=3), segment=6 {ensembleMember=1 repeated,
firstEntryId=2}, digestType=7 (CRC32C=3), password=8, ackQuorumSize=9, ctime=10,
customMetadata=11 {key=1, value=2}, cToken=12.

Place (HierarchicalLedgerManager): ``<root>/DD/DDDD/LDDDD`` from the id formatted %010d and
split 2-4-4 (ids from 2^31-1 on: %019d split 3-4-4-4-4). Ids come from an ephemeral sequential
``<root>/idgen/ID-`` node, deleted at once (ZkLedgerIdGenerator). Updates are CAS on the znode
version.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace

from .codec import field_bytes, field_varint, parse_fields, read_varint, signed64, varint

HEADER = b"BookieMetadataFormatVersion\t3\n"
DIGEST_CRC32C = 3
_INT_MAX = 2**31 - 1


class LedgerState(enum.IntEnum):
    OPEN = 1
    IN_RECOVERY = 2
    CLOSED = 3


@dataclass(frozen=True, slots=True)
class Segment:
    first_entry_id: int
    ensemble: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class LedgerMetadata:
    ensemble_size: int
    write_quorum: int
    ack_quorum: int
    segments: tuple[Segment, ...]
    state: LedgerState = LedgerState.OPEN
    last_entry_id: int = -1
    length: int = 0
    digest_type: int = DIGEST_CRC32C
    password: bytes = b""
    ctime_ms: int = 0
    custom: tuple[tuple[str, bytes], ...] = ()
    ctoken: int = 0
    extra: tuple = field(default=(), compare=False)

    def ensemble_at(self, entry_id: int) -> tuple[str, ...]:
        """The ensemble of the segment holding entry_id (the last one starting at or before it)."""
        chosen = self.segments[0]
        for segment in self.segments:
            if segment.first_entry_id <= entry_id:
                chosen = segment
            else:
                break
        return chosen.ensemble

    @property
    def last_ensemble(self) -> tuple[str, ...]:
        return self.segments[-1].ensemble

    def with_ensemble(self, first_entry_id: int, ensemble: tuple[str, ...]) -> LedgerMetadata:
        """A new last segment from first_entry_id (replacing one that starts there)."""
        kept = tuple(s for s in self.segments if s.first_entry_id < first_entry_id)
        return replace(self, segments=kept + (Segment(first_entry_id, ensemble),))

    def closed(self, last_entry_id: int, length: int) -> LedgerMetadata:
        return replace(self, state=LedgerState.CLOSED, last_entry_id=last_entry_id, length=length)

    def encode(self) -> bytes:
        out = [field_varint(1, self.write_quorum), field_varint(2, self.ensemble_size),
               field_varint(3, self.length), field_varint(4, self.last_entry_id),
               field_varint(5, self.state)]
        for segment in self.segments:
            members = b"".join(field_bytes(1, m.encode()) for m in segment.ensemble)
            out.append(field_bytes(6, members + field_varint(2, segment.first_entry_id)))
        out += [field_varint(7, self.digest_type), field_bytes(8, self.password),
                field_varint(9, self.ack_quorum)]
        if self.ctime_ms:
            out.append(field_varint(10, self.ctime_ms))
        for key, value in self.custom:
            out.append(field_bytes(11, field_bytes(1, key.encode()) + field_bytes(2, value)))
        out.append(field_varint(12, self.ctoken))
        message = b"".join(out)
        return HEADER + varint(len(message)) + message

    @classmethod
    def decode(cls, raw: bytes) -> LedgerMetadata:
        if not raw.startswith(HEADER):
            raise ValueError("not BookKeeper ledger metadata of format version 3")
        view = memoryview(raw)
        size, pos = read_varint(view, len(HEADER))
        values: dict[str, object] = {}
        segments: list[Segment] = []
        custom: list[tuple[str, bytes]] = []
        ack_quorum = None
        for number, value in parse_fields(view[pos:pos + size]):
            if number == 1:
                values["write_quorum"] = value
            elif number == 2:
                values["ensemble_size"] = value
            elif number == 3:
                values["length"] = signed64(value)  # type: ignore[arg-type]
            elif number == 4:
                values["last_entry_id"] = signed64(value)  # type: ignore[arg-type]
            elif number == 5:
                values["state"] = LedgerState(value)
            elif number == 6:
                members: list[str] = []
                first = 0
                for sub, sub_value in parse_fields(value):  # type: ignore[arg-type]
                    if sub == 1:
                        members.append(bytes(sub_value).decode())  # type: ignore[arg-type]
                    elif sub == 2:
                        first = signed64(sub_value)  # type: ignore[arg-type]
                segments.append(Segment(first, tuple(members)))
            elif number == 7:
                values["digest_type"] = value
            elif number == 8:
                values["password"] = bytes(value)  # type: ignore[arg-type]
            elif number == 9:
                ack_quorum = value
            elif number == 10:
                values["ctime_ms"] = value
            elif number == 11:
                key, item = "", b""
                for sub, sub_value in parse_fields(value):  # type: ignore[arg-type]
                    if sub == 1:
                        key = bytes(sub_value).decode()  # type: ignore[arg-type]
                    elif sub == 2:
                        item = bytes(sub_value)  # type: ignore[arg-type]
                custom.append((key, item))
            elif number == 12:
                values["ctoken"] = value
        values["ack_quorum"] = ack_quorum if ack_quorum is not None else values["write_quorum"]
        return cls(segments=tuple(segments), custom=tuple(custom), **values)  # type: ignore[arg-type]


def ledger_path(root: str, ledger_id: int) -> str:
    """HierarchicalLedgerManager's znode of a ledger (LongHierarchical past 2^31-2)."""
    if ledger_id < _INT_MAX:
        digits = f"{ledger_id:010d}"
        return f"{root}/{digits[0:2]}/{digits[2:6]}/L{digits[6:10]}"
    digits = f"{ledger_id:019d}"
    return f"{root}/{digits[0:3]}/{digits[3:7]}/{digits[7:11]}/{digits[11:15]}/L{digits[15:19]}"
