"""The LastLogMark: the journal position up to which every entry is in the entry logs.

Stored as ``<ledger dir>/lastMark``: ``[u64 journal file id][u64 offset][u32 crc32c]``, written
to a temporary file, fsynced, renamed over the old one and the directory fsynced, so a crash
leaves either the old mark or the new one. Recovery replays the journal from the mark; journal
files wholly before it are deleted.
"""

from __future__ import annotations

import logging
import os
import struct
from dataclasses import dataclass
from pathlib import Path

from native import crc32c

from .journal import fsync_directory

logger = logging.getLogger(__name__)

MARK_FILE = "lastMark"
_MARK = struct.Struct(">QQ")
_CRC = struct.Struct(">I")


@dataclass(frozen=True, order=True, slots=True)
class LastLogMark:
    file_id: int
    offset: int


START_OF_JOURNAL = LastLogMark(0, 0)


def read_mark(ledger_dir: Path) -> LastLogMark:
    """The recorded mark, or the start of the journal when none was ever written."""
    try:
        raw = (ledger_dir / MARK_FILE).read_bytes()
    except FileNotFoundError:
        return START_OF_JOURNAL
    body = raw[: _MARK.size]
    if len(raw) != _MARK.size + _CRC.size or _CRC.unpack_from(raw, _MARK.size)[0] != crc32c(body):
        # Only a broken disk gets here (the file is replaced atomically): replaying the whole
        # journal is always correct, merely slower.
        logger.error("%s is corrupt; replaying the whole journal", ledger_dir / MARK_FILE)
        return START_OF_JOURNAL
    return LastLogMark(*_MARK.unpack(body))


def write_mark(ledger_dir: Path, mark: LastLogMark) -> None:
    body = _MARK.pack(mark.file_id, mark.offset)
    temporary = ledger_dir / (MARK_FILE + ".tmp")
    with open(temporary, "wb") as f:
        f.write(body + _CRC.pack(crc32c(body)))
        f.flush()
        os.fsync(f.fileno())
    os.replace(temporary, ledger_dir / MARK_FILE)
    fsync_directory(ledger_dir)
