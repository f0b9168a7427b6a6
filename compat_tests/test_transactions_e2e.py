"""Transactions end to end with the official clients (transactionCoordinatorEnabled=true): the
Java client's enableTransaction(true) in one JVM run, and the Go client's EnableTransaction,
whose v0.19.0 sends a message's transaction id on CommandSend only. Commit and abort across two
topics and a partitioned one, interleaved transactions on one topic, an open transaction holding
later messages back, readers: committed messages once, aborted ones never.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from compat_tests.admin_http import AdminHttp
from compat_tests.helpers import unique_topic
from compat_tests.toolchains import go_scenarios, marked_java_scenarios, run_program, tail

TXN_CONFIG = {"transactionCoordinatorEnabled": "true"}
JVM_TIMEOUT_S = 120
GO_TIMEOUT_S = 45


@pytest.fixture(scope="module")
def txn_broker(tmp_path_factory):
    from compat_tests.conftest import _broker_fixture
    yield from _broker_fixture(tmp_path_factory, "txn-e2e", TXN_CONFIG)


def partitioned_topic(broker) -> str:
    """A new topic of 3 partitions."""
    name = unique_topic("txn-partitioned")
    response = AdminHttp(broker.web_url).put(f"/admin/v2/persistent/public/default/{name}/partitions", json=3)
    assert response.status_code == 204, response.text
    return f"persistent://public/default/{name}"


@pytest.fixture(scope="module")
def java_report(java_command, txn_broker):
    env = {**os.environ, "TXN_PARTITIONED": partitioned_topic(txn_broker)}
    return run_program([*java_command, "pulsard.compat.TxnBufferMain", txn_broker.service_url,
                        txn_broker.service_url], JVM_TIMEOUT_S, env)


@pytest.mark.timeout(JVM_TIMEOUT_S + 60)
@pytest.mark.parametrize("scenario", marked_java_scenarios("java", "TxnBufferScenario"))
def test_java_scenario(scenario, java_report):
    java_report.assert_passed(scenario)


@pytest.mark.timeout(GO_TIMEOUT_S + 60)
@pytest.mark.parametrize("scenario", go_scenarios("TestTxnBuffer"))
def test_go_scenario(scenario, go_binaries, txn_broker):
    go_binary = go_binaries[0]
    env = {**os.environ, "PULSAR_TXN_SERVICE_URL": txn_broker.service_url,
           "PULSAR_TXN_PARTITIONED": partitioned_topic(txn_broker)}
    done = subprocess.run(
        [str(go_binary), "-test.run", f"^{scenario}$", "-test.v", "-test.count=1", f"-test.timeout={GO_TIMEOUT_S}s"],
        cwd=go_binary.parent.parent, env=env, capture_output=True, text=True, timeout=GO_TIMEOUT_S + 15)
    output = f"{done.stdout}\n{tail(done.stderr)}"
    assert done.returncode == 0 and f"--- PASS: {scenario}" in done.stdout, \
        f"Go scenario {scenario} failed (exit {done.returncode}):\n{tail(output)}"
