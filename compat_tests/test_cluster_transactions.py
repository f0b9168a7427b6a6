"""Transactions in a cluster (two brokers on the session's ZooKeeper + bookies, the official
Java and Go clients with transactions enabled): the coordinators are the 16 partitions of the assign
topic, each served by the broker owning its bundle; a transaction produces to two topics served
by different brokers, so whichever broker coordinates it ends it on the other's topic too."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from compat_tests.cluster_brokers import BrokerGroup, http
from compat_tests.test_cluster import create_namespace, topics_in_distinct_bundles
from compat_tests.test_cluster_topic_policies import place_on
from compat_tests.toolchains import run_program, tail
from server.topics.topic_name import TopicName

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]

JVM_TIMEOUT_S = 150
ASSIGN = "persistent://pulsar/system/transaction_coordinator_assign"


@pytest.fixture(scope="module")
def brokers(cluster, tmp_path_factory):
    group = BrokerGroup(cluster, tmp_path_factory.mktemp("cluster-transactions"), 2,
                        transactionCoordinatorEnabled="true")
    try:
        yield group.start().brokers
    finally:
        group.stop()


def committed(broker) -> int:
    status, text = http("GET", f"{broker.web_url}/metrics")
    assert status == 200
    return sum(int(n) for n in re.findall(r'^pulsar_txn_committed_total\{[^}]*\} (\d+)$', text, re.MULTILINE))


def test_java_client_commits_across_two_brokers(brokers, java_command):
    a, b = brokers
    name = TopicName.parse(ASSIGN)
    status, body = http("GET", f"{a.web_url}/admin/v2/persistent/{name.namespace}/{name.local_name}/partitions")
    assert status == 200 and body["partitions"] == 16, body
    create_namespace(a, "public/txn-cluster")
    first, second = topics_in_distinct_bundles("public/txn-cluster", 2, "txn")
    place_on(a, first)
    place_on(b, second)
    report = run_program([*java_command, "pulsard.compat.CoordinatorMain", a.service_url, b.service_url,
                          "coordinatorCommitsAcrossTopics"], JVM_TIMEOUT_S,
                         env={**os.environ, "TXN_TOPICS": f"{first},{second}"})
    report.assert_passed("coordinatorCommitsAcrossTopics")
    assert committed(a) + committed(b) == 20

    # the coordinators' bundles released (closed there), then taken again by whichever broker
    status, body = http("PUT", f"{a.web_url}/admin/v2/namespaces/pulsar/system/unload")
    assert status == 204, body
    closed = sum(len(re.findall(r"transaction coordinator \d+ closed", broker.log_path.read_text()))
                 for broker in brokers)
    assert closed == 16, "every coordinator closes with its bundle"
    report = run_program([*java_command, "pulsard.compat.CoordinatorMain", b.service_url, a.service_url,
                          "coordinatorCommitsAcrossTopics"], JVM_TIMEOUT_S,
                         env={**os.environ, "TXN_TOPICS": f"{first},{second}"})
    report.assert_passed("coordinatorCommitsAcrossTopics")


def test_an_open_transaction_moves_with_its_topic(brokers, connect):
    """The transaction buffer recovers on the broker a topic moves to, from the snapshot the
    first one wrote (to a snapshot topic either of them serves) and the log after it: the
    aborted transaction stays hidden, the open one holds what follows it until it commits there."""
    from compat_tests.test_transaction_buffer import received, subscribe
    from compat_tests.helpers import expect_nothing
    from compat_tests.txn_requests import ABORT, COMMIT, TxnProducer

    a, b = brokers
    create_namespace(a, "public/txn-moves")
    (topic,) = topics_in_distinct_bundles("public/txn-moves", 1, "moving")
    place_on(a, topic)
    producer = TxnProducer(a, topic)
    producer.sent(b"b1", (0, 1))
    producer.sent(b"p1")
    assert producer.end((0, 1), ABORT).error == 0
    producer.sent(b"a1", (0, 2))
    producer.sent(b"p2")
    producer.close()
    a.stop()   # its bundles are free at once
    try:
        place_on(b, topic)
        consumer = subscribe(connect(b), topic)
        assert received(consumer, 1) == [b"p1"]
        expect_nothing(consumer)
        producer = TxnProducer(b, topic)
        try:
            assert producer.end((0, 2), COMMIT).error == 0
            assert received(consumer, 2) == [b"a1", b"p2"]
            expect_nothing(consumer)
        finally:
            producer.close()
    finally:
        a.start(timeout=60)


def test_go_client_transactions_in_a_cluster(brokers, go_binaries):
    """The Go client v0.19.0 (a transaction's id on CommandSend only): aborted messages never
    delivered, and consume-transform-produce committed, with 16 coordinators on two brokers."""
    a, _ = brokers
    scenarios = ("TestTxnBufferAbortedMessagesAreNeverDelivered", "TestTxnPendingAckConsumeTransformProduce")
    done = subprocess.run(
        [str(go_binaries[0]), "-test.run", f"^({'|'.join(scenarios)})$", "-test.v", "-test.count=1",
         "-test.timeout=90s"], cwd=go_binaries[0].parent.parent, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PULSAR_TXN_SERVICE_URL": a.service_url})
    for scenario in scenarios:
        assert f"--- PASS: {scenario}" in done.stdout, f"{scenario} failed:\n{tail(done.stdout + done.stderr)}"
