"""Whether the last run on a data directory stopped cleanly, so that start-up may skip the
orphan-ledger sweep, whose cost grows with the number of topics (a read of every managed
ledger's metadata).

A clean stop sweeps the orphans itself, once every managed ledger is closed, and then leaves
a mark in the data directory. A start takes the mark away (durably, before it writes anything)
and skips the sweep if the mark was there. A start that finds none (after a kill -9 or a stop
that failed) sweeps, as every start did before.
"""

from __future__ import annotations

import os
from pathlib import Path

from bookkeeper.journal import fsync_directory

MARK_NAME = "stopped-cleanly"


def take_mark(data_dir: Path) -> bool:
    """True if the last run stopped cleanly; the mark is gone (on disk) when this returns."""
    try:
        (data_dir / MARK_NAME).unlink()
    except FileNotFoundError:
        return False
    fsync_directory(data_dir)
    return True


def leave_mark(data_dir: Path) -> None:
    fd = os.open(data_dir / MARK_NAME, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    fsync_directory(data_dir)
