"""A few cycles of the crash harness (benchmarks/crash_harness.py runs many): SIGKILL at random
instants under producers with deduplication and an acknowledging consumer; every receipted
message exactly once and in order per producer, no acknowledged message redelivered beyond the
crash bound."""

from __future__ import annotations

import importlib.util
import sys

from compat_tests.broker import REPO_ROOT

_spec = importlib.util.spec_from_file_location("crash_harness", REPO_ROOT / "benchmarks" / "crash_harness.py")
crash_harness = importlib.util.module_from_spec(_spec)
sys.modules["crash_harness"] = crash_harness
_spec.loader.exec_module(crash_harness)


def test_random_kills_lose_and_duplicate_nothing(tmp_path):
    figures = crash_harness.run(cycles=3, producers=2, seed=20261122, work_dir=tmp_path, log=lambda line: None)
    assert figures["stored"] >= figures["receipted"] > 0     # run() checked each one exactly once
    assert figures["acked"] > 0
