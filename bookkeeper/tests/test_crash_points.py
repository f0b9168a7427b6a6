"""kill -9 at each step of a flush, a checkpoint, a compaction, a start-up replay and a journal
rotation: after restart every
acknowledged entry reads back with its bytes, deleted ledgers stay deleted, and the bookie
keeps working (no manual repair)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from bookkeeper.errors import NoSuchLedgerError

from .conftest import open_bookkeeper
from .crash_bookie import TARGETS, payload

PROJECT_ROOT = Path(__file__).resolve().parents[2]
POINTS = sorted(TARGETS)


def run_until_killed(root: Path, point: str) -> list[str]:
    process = subprocess.run(
        [sys.executable, "-m", "bookkeeper.tests.crash_bookie", str(root), point],
        cwd=PROJECT_ROOT, capture_output=True, timeout=60,
        env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)})
    assert process.returncode == -signal.SIGKILL, process.stderr.decode()
    return process.stdout.decode().splitlines()


@pytest.mark.parametrize("point", POINTS)
async def test_kill_at_each_storage_step_loses_no_acknowledged_entry(tmp_path: Path,
                                                                     point: str) -> None:
    lines = run_until_killed(tmp_path, point)
    assert "SURVIVED" not in lines
    kept = int(next(line.split()[1] for line in lines if line.startswith("KEPT")))
    doomed = int(next(line.split()[1] for line in lines if line.startswith("DOOMED")))
    acked = [tuple(map(int, line.split()[1:])) for line in lines if line.startswith("ACK")]
    kept_entries = [entry for ledger, entry in acked if ledger == kept]
    assert len(kept_entries) >= 100 and kept_entries == list(range(len(kept_entries)))
    last = kept_entries[-1]

    for _restart in range(2):
        async with open_bookkeeper(tmp_path) as bk:
            handle = await bk.open_ledger(kept, recovery=False)
            assert handle.last_add_confirmed >= last   # an add written but not yet acked may be there too
            assert await handle.read_entries(0, last) == [payload(kept, e) for e in range(last + 1)]
            if "DELETED" in lines:
                with pytest.raises(NoSuchLedgerError):
                    await bk.open_ledger(doomed)
            else:
                doomed_handle = await bk.open_ledger(doomed, recovery=False)
                assert await doomed_handle.read_entries(0, 99) == \
                    [payload(doomed, e) for e in range(100)]
            await bk.bookie.checkpointer.collect_garbage()
