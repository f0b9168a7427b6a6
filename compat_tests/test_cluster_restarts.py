"""The cluster restarted piece by piece under produce / consume load, on a cluster of its own
(issue 28), with deduplication on: every receipted message is read back once, in order.

- ZooKeeper stopped and started again on the same data dir. It keeps its sessions across a
  restart, so the brokers' sessions survive an outage shorter or longer than their timeout
  (4 s), and the brokers keep them: their topics keep working (writes to the open ledgers go
  on; what needs ZooKeeper waits).
- A rolling restart, as an operator does one: each broker in turn (SIGTERM, started again,
  healthy), then each bookie. The pauses clients see are printed, never asserted."""

from __future__ import annotations

import time

import pytest

from bookkeeper.tests.cluster_fixture import dedicated_cluster
from compat_tests.cluster_brokers import BrokerGroup
from compat_tests.cluster_load import POLICIES, Load, client_of, problems_logged, serves_again
from compat_tests.test_cluster import create_namespace

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(420)]

MAX_ERROR_LINES = 10


@pytest.fixture(scope="module")
def own_cluster(request, tmp_path_factory):
    """ZooKeeper and every bookie are restarted here: not the shared cluster."""
    with dedicated_cluster(request, tmp_path_factory, bookies=3) as own:
        yield own


@pytest.mark.parametrize("down_s", [2, 8])
def test_zookeeper_restarted_under_load(own_cluster, tmp_path, down_s):
    group = BrokerGroup(own_cluster, tmp_path, 2, brokerDeleteInactiveTopicsEnabled=False).start()
    client = client_of(group)
    create_namespace(group.brokers[0], "public/zk-restart", **POLICIES)
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
            log = broker.log_path.read_bytes()[offset:].decode(errors="replace")
            assert "taken as lost" not in log and "expired" not in log, "sessions kept: topics served throughout"
    finally:
        if load is not None:
            load.close()
        client.close()
        group.stop()
        own_cluster.restart_zookeeper()


def test_rolling_restart_of_every_broker_then_every_bookie(own_cluster, tmp_path):
    group = BrokerGroup(own_cluster, tmp_path, 2, managedLedgerDefaultEnsembleSize=2,
                        managedLedgerDefaultWriteQuorum=2, managedLedgerDefaultAckQuorum=2,
                        brokerDeleteInactiveTopicsEnabled=False).start()
    client = client_of(group)
    create_namespace(group.brokers[0], "public/rolling", **POLICIES)
    topic = "persistent://public/rolling/load"
    load = None
    try:
        load = Load(client, topic).start()
        load.wait_receipts(100)
        began = time.monotonic()
        for broker in group.brokers:
            assert broker.stop() == 0, broker.log_tail()
            broker.start(timeout=60)
            load.wait_receipts(100)
        brokers_done = time.monotonic()
        for index in range(len(own_cluster.bookie_list)):
            own_cluster.stop_bookie(index)
            own_cluster.restart_bookie(index)
            load.wait_receipts(100)
        bookies_done = time.monotonic()
        load.finish()
        print(f"rolling restart: {len(load.receipts)} receipted, {load.redelivered()} redelivered; "
              f"brokers: {load.pauses(began, brokers_done)}; "
              f"bookies: {load.pauses(brokers_done, bookies_done)}")
        serves_again(client, topic)
    finally:
        if load is not None:
            load.close()
        client.close()
        group.stop()
        for index, bookie in enumerate(own_cluster.bookie_list):
            if not bookie.java.alive():
                own_cluster.restart_bookie(index)
