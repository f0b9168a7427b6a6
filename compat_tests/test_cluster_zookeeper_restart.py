"""ZooKeeper stopped under produce / consume load, and started again on the same data dir
(issue 28). ZooKeeper keeps its sessions across a restart, so the brokers' sessions survive an
outage shorter or longer than their timeout (4 s): their topics keep working (writes to the
open ledgers go on; what needs ZooKeeper waits), and every receipted message is read back once,
in order, with deduplication on."""

from __future__ import annotations

import time

import pulsar
import pytest

from bookkeeper.cluster_kit import LocalCluster
from compat_tests.cluster_brokers import BrokerGroup
from compat_tests.cluster_load import Load, problems_logged, serves_again
from compat_tests.prerequisites import prerequisite
from compat_tests.test_cluster import create_namespace

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(420)]

MAX_ERROR_LINES = 10


@pytest.fixture(scope="module")
def own_cluster(request):
    """ZooKeeper is restarted here: not the shared cluster."""
    prerequisite("ZooKeeper and BookKeeper jars").result(request.config)
    cluster = LocalCluster(bookies=3)
    try:
        yield cluster.start()
    finally:
        cluster.stop()


@pytest.mark.parametrize("down_s", [2, 8])
def test_zookeeper_restarted_under_load(own_cluster, tmp_path, down_s):
    group = BrokerGroup(own_cluster, tmp_path, 2, brokerDeleteInactiveTopicsEnabled=False).start()
    a, b = group.brokers
    client = pulsar.Client(f"pulsar://127.0.0.1:{a.broker_port},127.0.0.1:{b.broker_port}",
                           operation_timeout_seconds=30,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    create_namespace(a, "public/zk-restart", deduplication=True)
    topic = f"persistent://public/zk-restart/load-{down_s}"
    load = None
    try:
        load = Load(client, topic).start()
        load.wait_receipts(100)
        offsets = [broker.log_path.stat().st_size for broker in group.brokers]
        own_cluster.stop_zookeeper()
        time.sleep(down_s)
        own_cluster.restart_zookeeper()
        load.wait_receipts(200)
        pauses = load.finish()
        print(f"ZooKeeper down {down_s} s: {len(load.receipts)} receipted, {load.redelivered()} "
              f"redelivered; {pauses}")
        serves_again(client, topic)
        for broker, offset in zip(group.brokers, offsets):
            assert broker.is_running()
            errors = problems_logged(broker, offset)
            assert len(errors) <= MAX_ERROR_LINES, "\n".join(errors[-40:])
    finally:
        if load is not None:
            load.close()
        client.close()
        group.stop()
        own_cluster.restart_zookeeper()
