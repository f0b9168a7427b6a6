"""Transactions in a cluster (two brokers on the session's ZooKeeper + bookies, the official
Java client with enableTransaction(true)): the coordinators are the 16 partitions of the assign
topic, each served by the broker owning its bundle; a transaction produces to two topics served
by different brokers, so whichever broker coordinates it ends it on the other's topic too."""

from __future__ import annotations

import os
import re

import pytest

from compat_tests.cluster_brokers import BrokerGroup, http
from compat_tests.test_cluster import create_namespace, topics_in_distinct_bundles
from compat_tests.test_cluster_topic_policies import place_on
from compat_tests.toolchains import run_program
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
