"""A stall the cluster is expected to have, logged as one: E=3/Qw=2/Qa=2 on 3 bookies, one
killed, leaves no bookie to replace it (BookKeeper stalls there too), while a producer keeps
sending and re-creating itself. The broker must say so in a few lines, not a flood of ERRORs
and tracebacks; once the bookie is back, writes go on and nothing receipted is lost."""

from __future__ import annotations

import itertools
import re
import threading
import time
from typing import Iterator

import pulsar
import pytest

from compat_tests.cluster_brokers import BrokerGroup, http

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(240)]

TOPIC = "stalled-by-a-lost-bookie"
STALL_S = 25
SEND_WAIT_S = 3.0             # the client resends through reconnections on its own: give up sooner
MAX_PROBLEM_LINES = 30        # one line per distinct failure per interval, with repeats counted
PROBLEM = re.compile(r" (ERROR|WARNING|CRITICAL) ")


def test_writes_stalled_by_a_lost_bookie_are_logged_without_a_flood(cluster, tmp_path):
    group = BrokerGroup(cluster, tmp_path, 1, managedLedgerDefaultEnsembleSize=3,
                        managedLedgerDefaultWriteQuorum=2, managedLedgerDefaultAckQuorum=2,
                        brokerDeleteInactiveTopicsEnabled=False).start()
    broker = group.brokers[0]
    client = pulsar.Client(broker.service_url, operation_timeout_seconds=5,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    topic = f"persistent://public/default/{TOPIC}"
    receipted: list[bytes] = []
    killed = False
    names = (f"m-{i}" for i in itertools.count())
    try:
        keeper = client.subscribe(topic, "keeper")   # holds every message until read back
        receipted += produce(client, topic, names, time.monotonic() + 30, stop_after=20)
        log_offset = broker.log_path.stat().st_size
        cluster.kill_bookie(0)
        killed = True
        while len(cluster.available_bookies()) == 3:   # once its registration is gone, a load fails
            time.sleep(0.2)
        status, body = http("PUT", f"{broker.web_url}/admin/v2/persistent/public/default/{TOPIC}/unload")
        assert status == 204, body                    # so producers must load it again
        receipted += produce(client, topic, names, time.monotonic() + STALL_S)

        log = broker.log_path.read_bytes()[log_offset:].decode(errors="replace")
        problems = [line for line in log.splitlines() if PROBLEM.search(line)]
        assert "Traceback" not in log, log[-6000:]
        assert len(problems) <= MAX_PROBLEM_LINES, f"{len(problems)} lines:\n" + "\n".join(problems[-60:])
        cluster.restart_bookie(0)
        killed = False
        after = produce(client, topic, names, time.monotonic() + 60, stop_after=1)
        assert after, "writes go on once the bookie is back"
        receipted += after
        # The keeper has been reconnecting since the unload, its backoff doubling through the
        # stall (its next try may be 20 s away): a new consumer reads the subscription at once.
        keeper.close()
        keeper = client.subscribe(topic, "keeper")
        stored = []
        while not stored or stored[-1] != receipted[-1]:
            stored.append(keeper.receive(timeout_millis=30000).data())
        first_deliveries = list(dict.fromkeys(stored))   # (an unacked message may come twice)
        assert [value for value in first_deliveries if value in receipted] == receipted, "each receipted message, in order"
    finally:
        client.close()
        group.stop()
        if killed:
            cluster.restart_bookie(0)


def produce(client: pulsar.Client, topic: str, names: Iterator[str], until: float,
            stop_after: int | None = None) -> list[bytes]:
    """Send one message at a time until `until` or `stop_after` receipts, with a new producer
    whenever one is not receipted within SEND_WAIT_S; the values receipted, in order."""
    receipted: list[bytes] = []
    while time.monotonic() < until and len(receipted) != stop_after:
        try:
            producer = client.create_producer(topic, batching_enabled=False, send_timeout_millis=30000)
        except pulsar.PulsarException:
            time.sleep(0.5)
            continue
        for name in names:
            if time.monotonic() >= until or len(receipted) == stop_after or not sent(producer, name.encode()):
                break
            receipted.append(name.encode())
        producer.close()
    return receipted


def sent(producer: pulsar.Producer, value: bytes) -> bool:
    done = threading.Event()
    results = []
    producer.send_async(value, lambda result, _msg_id: (results.append(result), done.set()))
    return done.wait(SEND_WAIT_S) and results[0] == pulsar.Result.Ok
