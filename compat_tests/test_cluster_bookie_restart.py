"""A bookie stopped (SIGTERM, or kill -9) under produce / consume load and started again with
its journal and ledgers intact (issue 28). E=2, Qw=2, Qa=2 on the 3 bookies of the shared
cluster: the writes go on at once on a new ensemble; once the bookie is back, the other holder
of the first entries is killed, so they can only be read from the restarted bookie (no broker
cache); every receipted message is read back once, in order, with deduplication on."""

from __future__ import annotations

import pulsar
import pytest

from compat_tests.cluster_brokers import BrokerGroup, ledger_ensemble
from compat_tests.cluster_load import POLICIES, Load, problems_logged, serves_again
from compat_tests.test_cluster import create_namespace

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]

MAX_ERROR_LINES = 10


@pytest.mark.parametrize("kill", [False, True], ids=["sigterm", "kill9"])
def test_bookie_restarted_under_load(cluster, tmp_path, kill):
    group = BrokerGroup(cluster, tmp_path, 1, managedLedgerDefaultEnsembleSize=2,
                        managedLedgerDefaultWriteQuorum=2, managedLedgerDefaultAckQuorum=2,
                        managedLedgerCacheSizeMB=0, brokerDeleteInactiveTopicsEnabled=False).start()
    broker = group.brokers[0]
    client = pulsar.Client(broker.service_url, operation_timeout_seconds=30,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    create_namespace(broker, "public/bookie-restart", **POLICIES)
    topic = f"persistent://public/bookie-restart/load-{'kill9' if kill else 'sigterm'}"
    ids = [bookie.bookie_id for bookie in cluster.bookie_list]
    down: set[int] = set()
    load = None
    try:
        load = Load(client, topic).start()
        load.wait_receipts(200)
        offset = broker.log_path.stat().st_size
        victim, other = (ids.index(b) for b in ledger_ensemble(cluster, broker, topic))
        (cluster.kill_bookie if kill else cluster.stop_bookie)(victim)
        down.add(victim)
        load.wait_receipts(200)          # on a new ensemble
        cluster.restart_bookie(victim)
        down.discard(victim)
        load.wait_receipts(100)
        cluster.kill_bookie(other)       # the first entries are now only on the restarted bookie
        down.add(other)
        load.wait_receipts(100)
        pauses = load.finish()
        print(f"bookie {'killed' if kill else 'stopped'} and restarted: {len(load.receipts)} "
              f"receipted, {load.redelivered()} redelivered; {pauses}")
        cluster.restart_bookie(other)
        down.discard(other)
        serves_again(client, topic)
        assert broker.is_running()
        errors = problems_logged(broker, offset)
        assert len(errors) <= MAX_ERROR_LINES, "\n".join(errors[-40:])
    finally:
        if load is not None:
            load.close()
        client.close()
        group.stop()
        for index in down:
            cluster.restart_bookie(index)
