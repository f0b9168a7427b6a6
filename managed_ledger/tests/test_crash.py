"""kill -9 mid-stream: every acknowledged entry is readable after restart, with its bytes."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from managed_ledger.position import Position

from .conftest import open_storage
from .crash_writer import CONFIG, TOPIC, payload

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def run_and_kill(data_dir: Path, first_index: int, lines_before_kill: int) -> list[tuple[Position, int]]:
    """Start the writer, kill -9 it after it acknowledged enough, return what it acknowledged."""
    process = subprocess.Popen(
        [sys.executable, "-m", "managed_ledger.tests.crash_writer", str(data_dir), str(first_index)],
        cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)})
    acknowledged: list[tuple[Position, int]] = []
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == b"READY", process.stderr.read().decode()
        deadline = time.monotonic() + 30
        while len(acknowledged) < lines_before_kill and time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            acknowledged.append(_parse(line))
    finally:
        process.send_signal(signal.SIGKILL)
        rest, _ = process.communicate(timeout=30)
    for line in rest.splitlines(keepends=True):
        if line.endswith(b"\n"):
            acknowledged.append(_parse(line))
    assert len(acknowledged) >= lines_before_kill, "the writer did not get far enough"
    return acknowledged


def _parse(line: bytes) -> tuple[Position, int]:
    ledger_id, entry_id, index = (int(field) for field in line.split())
    return Position(ledger_id, entry_id), index


async def test_acknowledged_entries_survive_kill_9(tmp_path: Path) -> None:
    rng = random.Random(7)
    acknowledged: dict[Position, int] = {}
    next_index = 0
    for _ in range(3):
        batch = run_and_kill(tmp_path, next_index, rng.randint(200, 800))
        acknowledged.update(batch)
        next_index = max(index for _, index in batch) + 1000

        async with open_storage(tmp_path, **CONFIG) as factory:
            ledger = await factory.open_ledger(TOPIC)
            for position, index in sorted(acknowledged.items()):
                entry = await ledger.read_entry(position)
                assert entry is not None, f"acknowledged {position} is missing"
                assert entry.data == payload(index)
            everything = await ledger.read_entries(ledger.first_position(), 10**6)
            assert len(everything) == ledger.number_of_entries >= len(acknowledged)
            assert ledger.last_confirmed_entry >= max(acknowledged)
