"""Prometheus /metrics, HTTP lookup with the Python client, and the `pulsard admin` command line."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid

import pulsar

from compat_tests.admin_http import AdminHttp, admin
from compat_tests.broker import REPO_ROOT
from compat_tests.helpers import payloads, receive_n, unique_topic

LATENCY_BUCKETS = ["0_5", "1", "5", "10", "20", "50", "100", "200", "1000"]


def scrape(http: AdminHttp) -> dict[str, float]:
    """`name{labels}` -> value of every sample."""
    response = http.get("/metrics")
    assert response.status_code == 200 and response.headers["Content-Type"].startswith("text/plain")
    samples = {}
    for line in response.text.splitlines():
        if line and not line.startswith("#"):
            key, value = line.rsplit(" ", 1)
            samples[key] = float(value)
    return samples


def test_metrics_probe_answers_as_soon_as_the_broker_serves(fresh_broker):
    http = AdminHttp(fresh_broker.web_url)
    assert http.get("/metrics").status_code == 200
    assert http.get("/metrics/").status_code == 200


def test_topic_metrics_have_pulsar_names_labels_and_values(broker, client):
    http = AdminHttp(broker.web_url)
    topic = unique_topic("metrics")
    name = f"persistent://public/default/{topic}"
    consumer = client.subscribe(topic, "sub-a", initial_position=pulsar.InitialPosition.Earliest)
    client.subscribe(topic, "sub-b").close()
    producer = client.create_producer(topic, batching_enabled=False)
    for body in payloads(6):
        producer.send(body)
    for message in receive_n(consumer, 6)[:2]:
        consumer.acknowledge(message)
    labels = f'cluster="standalone",namespace="public/default",topic="{name}"'

    samples = scrape(http)
    assert samples[f"pulsar_in_messages_total{{{labels}}}"] == 6
    assert samples[f"pulsar_out_messages_total{{{labels}}}"] == 6
    assert samples[f"pulsar_producers_count{{{labels}}}"] == 1
    assert samples[f"pulsar_subscriptions_count{{{labels}}}"] == 2
    assert samples[f"pulsar_storage_size{{{labels}}}"] > 0
    assert samples[f"pulsar_rate_in{{{labels}}}"] > 0
    assert samples[f'pulsar_subscription_back_log{{{labels},subscription="sub-b"}}'] == 6
    assert samples[f'pulsar_subscription_back_log{{{labels},subscription="sub-a"}}'] in (4, 6)  # acks are batched
    buckets = [samples[f"pulsar_storage_write_latency_le_{b}{{{labels}}}"] for b in LATENCY_BUCKETS]
    overflow = samples[f"pulsar_storage_write_latency_overflow{{{labels}}}"]
    assert sum(buckets) + overflow == samples[f"pulsar_storage_write_latency_count{{{labels}}}"] == 6
    assert samples[f"pulsar_storage_write_latency_sum{{{labels}}}"] > 0


def test_metrics_summed_per_namespace_without_topic_level_metrics(make_broker, connect):
    """exposeTopicLevelMetricsInPrometheus=false: one line per namespace, the sum of its
    topics, and no topic or subscription label (Pulsar's namespace-level metrics)."""
    broker = make_broker({"exposeTopicLevelMetricsInPrometheus": "false"})
    client = connect(broker)
    for topic, count in ((unique_topic("ns-metrics"), 3), (unique_topic("ns-metrics"), 4)):
        client.subscribe(topic, "sub")
        producer = client.create_producer(topic, batching_enabled=False)
        for body in payloads(count):
            producer.send(body)
    samples = scrape(AdminHttp(broker.web_url))
    labels = 'cluster="standalone",namespace="public/default"'
    assert samples[f"pulsar_in_messages_total{{{labels}}}"] == 7
    assert samples[f"pulsar_producers_count{{{labels}}}"] == 2
    assert samples[f"pulsar_msg_backlog{{{labels}}}"] == 7
    assert not [key for key in samples if "topic=" in key or "subscription=" in key]


def test_non_persistent_topic_metrics(broker, client):
    http = AdminHttp(broker.web_url)
    name = f"non-persistent://public/default/{unique_topic('np-metrics')}"
    consumer = client.subscribe(name, "live")
    producer = client.create_producer(name, batching_enabled=False)
    for body in payloads(5):
        producer.send(body)
    assert [m.data() for m in receive_n(consumer, 5, ack=True)] == payloads(5)
    labels = f'cluster="standalone",namespace="public/default",topic="{name}"'

    samples = scrape(http)
    assert samples[f"pulsar_in_messages_total{{{labels}}}"] == 5
    assert samples[f"pulsar_out_messages_total{{{labels}}}"] == 5
    assert samples[f"pulsar_in_bytes_total{{{labels}}}"] > 0
    assert samples[f"pulsar_producers_count{{{labels}}}"] == 1
    assert samples[f"pulsar_subscriptions_count{{{labels}}}"] == 1
    assert samples[f"pulsar_consumers_count{{{labels}}}"] == 1
    assert samples[f"pulsar_msg_backlog{{{labels}}}"] == 0
    assert samples[f'pulsar_subscription_back_log{{{labels},subscription="live"}}'] == 0
    assert samples[f"pulsar_storage_size{{{labels}}}"] == 0
    assert samples[f"pulsar_storage_write_latency_count{{{labels}}}"] == 0


def test_python_client_with_an_http_service_url(broker):
    client = pulsar.Client(broker.web_url, operation_timeout_seconds=10,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    try:
        topic = unique_topic("http-lookup")
        consumer = client.subscribe(topic, "sub", initial_position=pulsar.InitialPosition.Earliest)
        producer = client.create_producer(topic, batching_enabled=False)
        for body in payloads(5):
            producer.send(body)
        assert [m.data() for m in receive_n(consumer, 5)] == payloads(5)
    finally:
        client.close()


def test_python_client_over_http_finds_a_partitioned_topic(broker):
    http = AdminHttp(broker.web_url)
    topic = unique_topic("http-part")
    assert http.put(f"/admin/v2/persistent/public/default/{topic}/partitions", json=3).status_code == 204
    client = pulsar.Client(broker.web_url, operation_timeout_seconds=10,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    try:
        assert client.get_topic_partitions(topic) == [
            f"persistent://public/default/{topic}-partition-{i}" for i in range(3)]
        consumer = client.subscribe(topic, "sub", initial_position=pulsar.InitialPosition.Earliest)
        producer = client.create_producer(topic, batching_enabled=False)
        for body in payloads(9):
            producer.send(body)
        assert sorted(m.data() for m in receive_n(consumer, 9)) == sorted(payloads(9))
    finally:
        client.close()


def test_cli_drives_tenants_namespaces_topics_and_subscriptions(broker, client):
    tenant = f"cli-{uuid.uuid4().hex[:8]}"
    namespace, topic = f"{tenant}/ns", f"persistent://{tenant}/ns/orders"
    assert admin(broker, "tenants", "create", tenant, "-r", "ops").returncode == 0
    assert tenant in admin(broker, "tenants", "list").stdout.split()
    assert json.loads(admin(broker, "tenants", "get", tenant).stdout) == {
        "adminRoles": ["ops"], "allowedClusters": ["standalone"]}
    assert admin(broker, "namespaces", "create", namespace).returncode == 0
    assert admin(broker, "namespaces", "set-message-ttl", namespace, "60").returncode == 0
    assert admin(broker, "namespaces", "get-message-ttl", namespace).stdout.strip() == "60"
    assert admin(broker, "namespaces", "set-retention", namespace,
                 '{"retentionTimeInMinutes": 5, "retentionSizeInMB": 10}').returncode == 0
    assert json.loads(admin(broker, "namespaces", "policies", namespace).stdout)["retention_policies"] == {
        "retentionTimeInMinutes": 5, "retentionSizeInMB": 10}
    assert admin(broker, "topics", "create-partitioned-topic", topic, "-p", "2").returncode == 0
    assert admin(broker, "topics", "list", namespace).stdout.split() == [
        f"{topic}-partition-0", f"{topic}-partition-1"]
    assert admin(broker, "topics", "create-subscription", topic, "-s", "audit", "-m", "earliest").returncode == 0

    producer = client.create_producer(topic, batching_enabled=False)
    for body in payloads(4):
        producer.send(body)
    stats = json.loads(admin(broker, "topics", "partitioned-stats", topic).stdout)
    assert (stats["msgInCounter"], stats["subscriptions"]["audit"]["msgBacklog"]) == (4, 4)
    assert admin(broker, "topics", "clear-backlog", topic, "-s", "audit").returncode == 0
    stats = json.loads(admin(broker, "topics", "partitioned-stats", topic).stdout)
    assert stats["subscriptions"]["audit"]["msgBacklog"] == 0
    assert admin(broker, "topics", "subscriptions", topic).stdout.split() == ["audit"]
    assert admin(broker, "topics", "unsubscribe", topic, "-s", "audit").returncode == 0
    assert admin(broker, "topics", "subscriptions", topic).stdout.split() == []


def test_cli_peek_and_errors(broker, client):
    topic = f"persistent://public/default/{unique_topic('cli-peek')}"
    assert admin(broker, "topics", "create-subscription", topic, "-s", "s", "-m", "earliest").returncode == 0
    producer = client.create_producer(topic, batching_enabled=False)
    producer.send(b"hello", properties={"k": "v"})
    peeked = admin(broker, "topics", "peek-messages", topic, "-s", "s", "-n", "1")
    assert peeked.returncode == 0
    assert re.search(r"^X-Pulsar-Message-ID: \d+:0$", peeked.stdout, re.M)
    assert peeked.stdout.rstrip().endswith("hello")

    refused = admin(broker, "tenants", "get", "no-such-tenant")
    assert (refused.returncode, refused.stderr.strip()) == (1, "pulsard admin: 404: Tenant does not exist")
    assert admin(broker, "namespaces", "create", "not-a-namespace").returncode == 1
    assert admin(broker, "topics", "reset-cursor", topic, "-s", "s").returncode == 1
    assert admin(broker, "topics", "frobnicate").returncode == 1  # usage errors: 1, as pulsar-admin
    unreachable = subprocess.run([sys.executable, "-m", "server", "admin", "--admin-url", "http://127.0.0.1:1",
                                  "tenants", "list"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=30)
    assert unreachable.returncode == 1 and "cannot reach" in unreachable.stderr


def test_deduplication_enabled_over_rest_is_applied_by_the_broker(broker, client):
    http = AdminHttp(broker.web_url)
    tenant = f"dedup-{uuid.uuid4().hex[:8]}"
    assert http.put(f"/admin/v2/tenants/{tenant}", json={"allowedClusters": ["standalone"]}).status_code == 204
    assert http.put(f"/admin/v2/namespaces/{tenant}/ns").status_code == 204
    assert http.post(f"/admin/v2/namespaces/{tenant}/ns/deduplication", json=True).status_code == 204
    topic = f"persistent://{tenant}/ns/t"
    producer = client.create_producer(topic, producer_name="p1", batching_enabled=False)
    for sequence_id in (0, 1, 1, 2, 0):
        producer.send(f"s{sequence_id}".encode(), sequence_id=sequence_id)
    stats = http.get(f"/admin/v2/persistent/{tenant}/ns/t/stats").json()
    assert (stats["msgInCounter"], stats["deduplicationStatus"]) == (3, "Enabled")
