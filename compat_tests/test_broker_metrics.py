"""Broker-wide and process metrics on /metrics (Pulsar's and Prometheus' names), and the Grafana
dashboard that charts them."""

from __future__ import annotations

import json
import re

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


#: PromQL words that are not metric names: aggregations and functions are told by the "(" after
#: them; these are the operators and modifiers written as words.
_PROMQL_WORDS = {"and", "or", "unless", "bool", "offset"}


def promql_metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression (or a Grafana `label_values(metric, label)` query)
    selects: its identifiers outside label matchers, ranges, strings and by/without/on lists,
    less functions, aggregations and operators."""
    variable = re.fullmatch(r"\s*label_values\(\s*([^,{\s]+).*\)\s*", expr)
    if variable:
        return {variable.group(1)}
    bare = re.sub(r'"[^"]*"|\{[^}]*\}|\[[^\]]*\]', "", expr)
    bare = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", bare)
    return {found.group() for found in re.finditer(r"[a-zA-Z_:][a-zA-Z0-9_:]*", bare)
            if not bare[found.end():].lstrip().startswith("(") and found.group() not in _PROMQL_WORDS}


def test_promql_metric_names():
    assert promql_metric_names("histogram_quantile(0.99, sum by (le) (rate(b_bucket[1m])))") == {"b_bucket"}
    assert promql_metric_names('sum(rate(a_sum{cluster=~"$c"}[1m])) / sum(rate(a_count[1m]))') == {"a_sum", "a_count"}
    assert promql_metric_names("topk(10, pulsar_msg_backlog)") == {"pulsar_msg_backlog"}
    assert promql_metric_names("label_values(pulsar_broker_topics_count, cluster)") == {"pulsar_broker_topics_count"}


def test_grafana_dashboard_charts_metrics_the_broker_serves(broker, connect):
    """Every metric the dashboard's queries (panels and variables) name is in /metrics, once a
    topic was written, read and acknowledged (the per-topic metrics exist from then)."""
    client = connect(broker)
    topic = unique_topic("grafana")
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic)
    for body in payloads(3):
        producer.send(body)
    for message in receive_n(consumer, 3):
        consumer.acknowledge(message)
    dashboard = json.loads(DASHBOARD.read_text())
    queries = [target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", [])]
    queries += [variable["query"] for variable in dashboard["templating"]["list"] if variable["type"] == "query"]
    named = set().union(*map(promql_metric_names, queries))
    assert queries and dashboard["title"] and len(named) >= len(queries) // 2
    served = {sample.partition("{")[0] for sample in scrape(AdminHttp(broker.web_url))}
    assert sorted(named - served) == [], "the dashboard names metrics pulsard does not serve"
