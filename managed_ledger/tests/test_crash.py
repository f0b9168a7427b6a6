"""kill -9 mid-stream (adds, checkpoints, garbage collection and compaction all running): every
acknowledged entry is readable after restart with its bytes, and the cursor comes back no
further back than its last persisted mark-delete."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from managed_ledger.position import Position

from .conftest import open_storage
from .crash_writer import CONFIG, CURSOR, TOPIC, payload

PROJECT_ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Observed:
    """What the killed writer reported before it died."""

    added: dict[Position, int] = field(default_factory=dict)
    persisted: Position = Position(-1, -1)

    def take(self, line: bytes) -> None:
        kind, *fields = line.split()
        numbers = [int(f) for f in fields]
        if kind == b"ADD":
            self.added[Position(numbers[0], numbers[1])] = numbers[2]
        elif kind == b"PERSISTED":
            self.persisted = max(self.persisted, Position(*numbers))


def run_and_kill(data_dir: Path, first_index: int, adds_before_kill: int, seen: Observed) -> int:
    """Start the writer, kill -9 it once it acknowledged enough; returns how many adds it
    acknowledged in this run."""
    process = subprocess.Popen(
        [sys.executable, "-m", "managed_ledger.tests.crash_writer", str(data_dir), str(first_index)],
        cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)})
    before = len(seen.added)
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == b"READY", process.stderr.read().decode()
        deadline = time.monotonic() + 30
        while len(seen.added) - before < adds_before_kill and time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            seen.take(line)
    finally:
        process.send_signal(signal.SIGKILL)
        rest, _ = process.communicate(timeout=30)
    for line in rest.splitlines(keepends=True):
        if line.endswith(b"\n"):
            seen.take(line)
    return len(seen.added) - before


async def test_acknowledged_entries_survive_kill_9(tmp_path: Path) -> None:
    rng = random.Random(7)
    seen = Observed()
    next_index = 0
    for _ in range(3):
        acknowledged = run_and_kill(tmp_path, next_index, rng.randint(200, 800), seen)
        assert acknowledged >= 200, "the writer did not get far enough"
        next_index = max(seen.added.values()) + 1000

        async with open_storage(tmp_path, **CONFIG) as factory:
            ledger = await factory.open_ledger(TOPIC)
            cursor = ledger.cursors[CURSOR]
            mark_delete = cursor.mark_delete_position
            assert mark_delete >= seen.persisted
            for position, index in sorted(seen.added.items()):
                if position <= mark_delete:
                    continue  # consumed: its ledger may have been trimmed
                entry = await ledger.read_entry(position)
                assert entry is not None, f"acknowledged {position} is missing"
                assert entry.data == payload(index)
            unconsumed = await ledger.read_entries(ledger.next_position(mark_delete), 10**6)
            assert len(unconsumed) == cursor.backlog()
            assert ledger.last_confirmed_entry >= max(seen.added)
