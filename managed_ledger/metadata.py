"""Where managed-ledger and cursor state lives in the metadata store, and its encoding.

Layout (names are percent-encoded, since topic names hold ``://`` and ``/``)::

    /managed-ledgers/<name>            {"ledgers": [{"id", "entries", "size", "closed_at"}, ...],
                                        "compacted": {"ledger", "horizon": [l, e]},
                                        "terminated": [l, e]}
    /managed-ledgers/<name>/<cursor>   {"mark_delete": [l, e], "acked": [[l, first, last]...],
                                        "batch_acks": [[l, e, [words...]], ...],
                                        "ledger": id (a cursor ledger, cursor_store.py)}

The cursors of a managed ledger are the children of its node.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from urllib.parse import quote, unquote

from .ledger_list import LedgerInfo
from .position import Position

MANAGED_LEDGERS_PATH = "/managed-ledgers"


def encode_name(name: str) -> str:
    return quote(name, safe="")


def decode_name(component: str) -> str:
    return unquote(component)


def managed_ledger_path(name: str) -> str:
    return f"{MANAGED_LEDGERS_PATH}/{encode_name(name)}"


def cursor_path(ledger_path: str, cursor_name: str) -> str:
    """The node of a cursor under its managed ledger's (managed_ledger_path)."""
    return f"{ledger_path}/{encode_name(cursor_name)}"


@dataclass(frozen=True, slots=True)
class CompactedLedger:
    """Where the compacted view is: its ledger and the last topic position it covers."""

    ledger_id: int
    horizon: Position


@dataclass(slots=True)
class ManagedLedgerMetadata:
    ledgers: list[LedgerInfo] = field(default_factory=list)
    compacted: CompactedLedger | None = None
    #: The last entry of a terminated ledger (no appends after it, ever); None while open.
    terminated: Position | None = None

    def encode(self) -> bytes:
        ledgers = [{"id": info.ledger_id, "entries": info.entries, "size": info.size,
                    "closed_at": info.closed_at_ms} for info in self.ledgers]
        fields: dict = {"ledgers": ledgers}
        if self.compacted is not None:
            horizon = self.compacted.horizon
            fields["compacted"] = {"ledger": self.compacted.ledger_id,
                                   "horizon": [horizon.ledger_id, horizon.entry_id]}
        if self.terminated is not None:
            fields["terminated"] = [self.terminated.ledger_id, self.terminated.entry_id]
        return json.dumps(fields, separators=(",", ":")).encode()

    @classmethod
    def decode(cls, raw: bytes) -> ManagedLedgerMetadata:
        fields = json.loads(raw)
        compacted = fields.get("compacted")
        terminated = fields.get("terminated")
        return cls([LedgerInfo(item["id"], item["entries"], item["size"], item.get("closed_at", 0))
                    for item in fields["ledgers"]],
                   CompactedLedger(compacted["ledger"], Position(*compacted["horizon"])) if compacted else None,
                   Position(*terminated) if terminated else None)

    def ledger_ids(self) -> set[int]:
        """Every bookkeeper ledger this managed ledger owns (the compacted one included)."""
        ids = {info.ledger_id for info in self.ledgers}
        if self.compacted is not None:
            ids.add(self.compacted.ledger_id)
        return ids


@dataclass(slots=True)
class CursorState:
    """What a durable cursor persists: enough to rebuild its acknowledgement state."""

    mark_delete: Position
    acked: list[tuple[int, int, int]] = field(default_factory=list)
    batch_acks: dict[Position, list[int]] = field(default_factory=dict)
    #: in the cursor's node: the cursor ledger whose last entry holds a newer state (cursor_store.py)
    ledger: int | None = None

    def encode(self) -> bytes:
        fields: dict = {
            "mark_delete": [self.mark_delete.ledger_id, self.mark_delete.entry_id],
            "acked": [list(r) for r in self.acked],
            "batch_acks": [[p.ledger_id, p.entry_id, words]
                           for p, words in self.batch_acks.items()],
        }
        if self.ledger is not None:
            fields["ledger"] = self.ledger
        return json.dumps(fields, separators=(",", ":")).encode()

    @classmethod
    def decode(cls, raw: bytes) -> CursorState:
        fields = json.loads(raw)
        return cls(
            mark_delete=Position(*fields["mark_delete"]),
            acked=[(ledger, first, last) for ledger, first, last in fields["acked"]],
            batch_acks={Position(ledger, entry): words
                        for ledger, entry, words in fields["batch_acks"]},
            ledger=fields.get("ledger"),
        )
