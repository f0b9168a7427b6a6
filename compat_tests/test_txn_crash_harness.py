"""A few cycles of the transactional crash harness (benchmarks/txn_crash_harness.py runs many):
SIGKILL at random instants under a consume-transform-produce worker on the Go client's
transactions, to a partitioned output topic; every input in the output exactly once, committed
transactions wholly visible, aborted ones not at all, the input subscription's backlog 0 after a
last restart."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from compat_tests.broker import REPO_ROOT

_spec = importlib.util.spec_from_file_location("txn_crash_harness", REPO_ROOT / "benchmarks" / "txn_crash_harness.py")
txn_crash_harness = importlib.util.module_from_spec(_spec)
sys.modules["txn_crash_harness"] = txn_crash_harness
_spec.loader.exec_module(txn_crash_harness)


@pytest.mark.timeout(180)      # the worker's build included; a stuck backlog fails after 60 s
def test_random_kills_under_transactions_lose_and_double_nothing(tmp_path):
    figures = txn_crash_harness.run(cycles=2, messages=600, batch=5, abort_ratio=0.1, partitions=3,
                                    seed=20261127, work_dir=tmp_path, log=lambda line: None)
    # run() checked every input exactly once and each transaction's visibility against its outcome
    assert figures["committed"] > 0 and figures["aborted"] > 0
