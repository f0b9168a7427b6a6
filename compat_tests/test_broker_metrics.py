"""Broker-wide and process metrics on /metrics (Pulsar's and Prometheus' names), and the Grafana
dashboard that charts them."""

from __future__ import annotations

import json

from compat_tests.admin_http import AdminHttp
from compat_tests.broker import REPO_ROOT
from compat_tests.helpers import payloads, receive_n, unique_topic
from compat_tests.test_admin_metrics_cli import scrape

DASHBOARD = REPO_ROOT / "grafana" / "pulsard.json"


def test_broker_and_process_metrics(fresh_broker, connect):
    """Broker-wide counts are taken from what the broker had before: the health checks the
    harness polled until the broker was up loaded its heartbeat topic and wrote there."""
    client = connect(fresh_broker)
    http = AdminHttp(fresh_broker.web_url)
    cluster = 'cluster="standalone"'
    before = scrape(http)
    topics = [unique_topic("broker-metrics") for _ in range(2)]
    consumer = client.subscribe(topics[0], "sub")
    producer = client.create_producer(topics[0], batching_enabled=False)
    client.create_producer(topics[1])
    for body in payloads(5):
        producer.send(body)
    receive_n(consumer, 5)
    samples = scrape(http)

    def added(name: str) -> float:
        key = f"{name}{{{cluster}}}"
        return samples[key] - before.get(key, 0)

    assert samples[f'pulsar_topics_count{{{cluster},namespace="public/default"}}'] == 2
    assert added("pulsar_broker_topics_count") == 2
    assert added("pulsar_broker_producers_count") == 2
    assert added("pulsar_broker_consumers_count") == 1
    assert added("pulsar_broker_subscriptions_count") == 1
    assert added("pulsar_broker_in_messages_total") == 5
    stored_bytes = added("pulsar_broker_in_bytes_total")          # entries, metadata included
    assert stored_bytes > sum(len(b) for b in payloads(5))
    assert added("pulsar_broker_out_bytes_total") == stored_bytes
    assert samples[f"pulsar_broker_storage_write_rate{{{cluster}}}"] > 0
    assert samples[f"pulsar_broker_storage_read_rate{{{cluster}}}"] > 0
    assert samples[f"pulsar_active_connections{{{cluster}}}"] >= 1
    assert samples[f"pulsar_connection_created_total_count{{{cluster}}}"] >= 1
    syncs = samples["bookie_journal_JOURNAL_SYNC_count"]
    assert syncs >= 5 and samples['bookie_journal_JOURNAL_SYNC_bucket{le="+Inf"}'] == syncs
    assert samples['bookie_journal_JOURNAL_SYNC_bucket{le="1"}'] <= syncs
    assert samples["bookie_journal_JOURNAL_SYNC_sum"] > 0
    assert samples["process_resident_memory_bytes"] > 10 * 1024 * 1024
    assert samples["process_open_fds"] > 3
    assert samples["process_cpu_seconds_total"] > 0

    client.close()
    after = scrape(http)
    assert after[f"pulsar_connection_closed_total_count{{{cluster}}}"] >= 1
    assert after[f"pulsar_broker_producers_count{{{cluster}}}"] == 0


def test_grafana_dashboard_charts_metrics_the_broker_serves(broker):
    dashboard = json.loads(DASHBOARD.read_text())
    expressions = [target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", [])]
    assert expressions and dashboard["title"]
    served = {line.split()[2] for line in AdminHttp(broker.web_url).get("/metrics").text.splitlines()
              if line.startswith("# TYPE")}
    for expr in expressions:
        names = [name for name in served if name in expr]
        assert names, f"dashboard expression uses no metric pulsard serves: {expr}"
