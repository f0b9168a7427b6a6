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



def _outcomes() -> "txn_crash_harness.Outcomes":
    outcomes = txn_crash_harness.Outcomes()
    for line in ("COMMITTED 0:1 0,1", "ABORTED 0:2 2", "ABANDONED 0:4 2", "UNKNOWN 0:3 2", "UNKNOWN 0:5 0,1",
                 "ERROR ack: TransactionConflict"):
        outcomes.record(line + "\n")
    return outcomes


def test_the_check_passes_a_good_run():
    txn_crash_harness.check({"0:1": [0, 1], "0:3": [2]}, _outcomes(), 3)
    assert _outcomes().conflicts == 1


@pytest.mark.parametrize("visible, violation", [
    ({"0:1": [0, 1], "0:3": [2, 2]}, "more than once"),
    ({"0:1": [0, 1]}, "missing"),
    ({"0:1": [0, 1], "0:2": [2]}, "never committed"),
    ({"0:1": [0, 1], "0:4": [2]}, "never committed"),
    ({"0:1": [0], "0:5": [1], "0:3": [2]}, "partly visible"),
    ({"0:5": [0, 1], "0:3": [2]}, "not visible"),
    ({"0:1": [0, 1], "0:9": [2]}, "unknown to the worker"),
])
def test_the_check_finds_each_violation(visible, violation):
    with pytest.raises(AssertionError, match=violation):
        txn_crash_harness.check(visible, _outcomes(), 3)
