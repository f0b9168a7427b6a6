"""Pending acks end to end with the official Java client (enableTransaction(true), one JVM run)
and Go client (EnableTransaction, its TestTxn* scenarios in one run) on a broker with
transactionCoordinatorEnabled=true: consume in a transaction then abort (delivered again),
commit (gone, also after kill -9), a conflicting ack refused, batch indexes (Java),
consume-transform-produce."""

from __future__ import annotations

import os
import subprocess

import pulsar
import pytest

from compat_tests.conftest import _broker_fixture
from compat_tests.helpers import read_all, unique_topic
from compat_tests.toolchains import go_scenarios, marked_java_scenarios, run_program, tail

TXN_CONFIG = {"transactionCoordinatorEnabled": "true", "acknowledgmentAtBatchIndexLevelEnabled": "true"}
JVM_TIMEOUT_S = 120
GO_TIMEOUT_S = 90
JAVA_COMMIT_TOPIC = unique_topic("java-txn-commit")
GO_COMMIT_TOPIC = unique_topic("go-txn-commit")


@pytest.fixture(scope="module")
def txn_broker(tmp_path_factory):
    yield from _broker_fixture(tmp_path_factory, "txn-clients", TXN_CONFIG)


@pytest.fixture(scope="module")
def java_report(java_command, txn_broker):
    env = {**os.environ, "PENDING_ACK_COMMIT_TOPIC": f"persistent://public/default/{JAVA_COMMIT_TOPIC}"}
    return run_program([*java_command, "pulsard.compat.PendingAckMain", txn_broker.service_url,
                        txn_broker.service_url], JVM_TIMEOUT_S, env)


@pytest.fixture(scope="module")
def go_output(go_binaries, txn_broker) -> str:
    go_binary = go_binaries[0]
    env = {**os.environ, "PULSAR_TXN_SERVICE_URL": txn_broker.service_url,
           "PENDING_ACK_COMMIT_TOPIC": f"persistent://public/default/{GO_COMMIT_TOPIC}"}
    done = subprocess.run(
        [str(go_binary), "-test.run", "^TestTxnPendingAck", "-test.v", "-test.count=1",
         f"-test.timeout={GO_TIMEOUT_S}s"],
        cwd=go_binary.parent.parent, env=env, capture_output=True, text=True, timeout=GO_TIMEOUT_S + 15)
    return f"{done.stdout}\n{tail(done.stderr)}"


@pytest.mark.timeout(JVM_TIMEOUT_S + 60)
@pytest.mark.parametrize("scenario", marked_java_scenarios("java", "PendingAckScenario"))
def test_java_scenario(scenario, java_report):
    java_report.assert_passed(scenario)


@pytest.mark.timeout(GO_TIMEOUT_S + 60)
@pytest.mark.parametrize("scenario", go_scenarios("TestTxnPendingAck"))
def test_go_scenario(scenario, go_output):
    assert f"--- PASS: {scenario}" in go_output, f"Go scenario {scenario} failed:\n{tail(go_output)}"


def test_committed_acks_survive_kill9(java_report, go_output, txn_broker, connect):
    """The commit scenarios' subscriptions stay consumed after kill -9 and a restart (their
    three messages are still in the topic)."""
    txn_broker.kill9()
    txn_broker.restart()
    client = connect(txn_broker)
    for topic in (JAVA_COMMIT_TOPIC, GO_COMMIT_TOPIC):
        assert len(read_all(client, topic)) == 3
        consumer = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
        with pytest.raises(pulsar.Timeout):
            consumer.receive(timeout_millis=1000)
        consumer.close()
