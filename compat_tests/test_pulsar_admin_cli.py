"""Apache Pulsar's own pulsar-admin CLI (org.apache.pulsar:pulsar-client-tools 3.3.6 from Maven
Central, compat_tests/pulsar_admin_cli) driving pulsard: tenants, namespaces and policies,
topics, partitioned topics, subscriptions, schemas, peek/examine, stats, unload, compaction,
permissions. Commands run through PulsarAdminTool itself, many per JVM (PulsardBatch), and
once through its main() for the exit codes."""

from __future__ import annotations

import json
import re
import subprocess
import uuid

import pytest

from compat_tests.pulsar_admin_batch import JAVA, RUN_TIMEOUT_S, client_conf, outputs, run_batch


@pytest.mark.timeout(3 * RUN_TIMEOUT_S)
def test_pulsar_admin_drives_pulsard(broker, client, pulsar_admin_classpath, tmp_path):
    conf = client_conf(broker, tmp_path)
    tenant = f"cli-{uuid.uuid4().hex[:8]}"
    ns, plain, parts = f"{tenant}/ns", f"persistent://{tenant}/ns/plain", f"persistent://{tenant}/ns/parts"
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"type": "JSON", "properties": {}, "schema": json.dumps(
        {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "int"}]})}))

    setup = [
        ["clusters", "list"], ["brokers", "list", "standalone"], ["brokers", "leader-broker"],
        ["brokers", "healthcheck"], ["brokers", "healthcheck", "--topic-version", "V2"],
        ["tenants", "create", tenant, "-c", "standalone", "-r", "ops"], ["tenants", "list"], ["tenants", "get", tenant],
        ["tenants", "update", tenant, "-r", "ops,dev", "-c", "standalone"], ["tenants", "get", tenant],
        ["namespaces", "create", ns], ["namespaces", "list", tenant],
        ["namespaces", "set-retention", ns, "--size", "100M", "--time", "1h"], ["namespaces", "get-retention", ns],
        ["namespaces", "set-message-ttl", ns, "-ttl", "300"], ["namespaces", "get-message-ttl", ns],
        ["namespaces", "set-backlog-quota", ns, "-l", "10M", "-p", "producer_request_hold"],
        ["namespaces", "get-backlog-quotas", ns],
        ["namespaces", "set-deduplication", ns, "--enable"], ["namespaces", "get-deduplication", ns],
        ["namespaces", "set-schema-compatibility-strategy", ns, "-c", "ALWAYS_COMPATIBLE"],
        ["namespaces", "get-schema-compatibility-strategy", ns],
        ["namespaces", "set-auto-topic-creation", ns, "-e", "-t", "non-partitioned"],
        ["namespaces", "set-max-producers-per-topic", ns, "-p", "5"], ["namespaces", "get-max-producers-per-topic", ns],
        ["namespaces", "grant-permission", ns, "--role", "app", "--actions", "produce,consume"],
        ["namespaces", "permissions", ns],
        ["topics", "create", plain], ["topics", "create-partitioned-topic", parts, "-p", "2"],
        ["topics", "update-partitioned-topic", parts, "-p", "3"], ["topics", "get-partitioned-topic-metadata", parts],
        ["topics", "list", ns], ["topics", "list-partitioned-topics", ns],
        ["topics", "create-subscription", plain, "-s", "audit", "-m", "earliest"], ["topics", "subscriptions", plain],
        ["topics", "grant-permission", plain, "--role", "auditor", "--actions", "consume"],
        ["topics", "permissions", plain],
        ["schemas", "upload", plain, "-f", str(schema)], ["schemas", "get", plain],
    ]
    out = outputs(setup, run_batch(pulsar_admin_classpath, conf, setup, tmp_path))
    assert out["clusters list"].splitlines() == ["standalone"]
    assert out["brokers list standalone"] == broker.web_url.removeprefix("http://")
    assert json.loads(out["brokers leader-broker"])["serviceUrl"] == broker.web_url
    assert out["brokers healthcheck"] == out["brokers healthcheck --topic-version V2"] == "ok"
    assert tenant in out["tenants list"].split()
    assert json.loads(out[f"tenants get {tenant}"])["adminRoles"] == ["ops", "dev"]
    assert out[f"namespaces list {tenant}"] == ns
    assert json.loads(out[f"namespaces get-retention {ns}"]) == {"retentionTimeInMinutes": 60, "retentionSizeInMB": 100}
    assert out[f"namespaces get-message-ttl {ns}"] == "300"
    assert "limitSize=10485760" in out[f"namespaces get-backlog-quotas {ns}"]
    assert out[f"namespaces get-deduplication {ns}"] == "true"
    assert out[f"namespaces get-schema-compatibility-strategy {ns}"] == "ALWAYS_COMPATIBLE"
    assert out[f"namespaces get-max-producers-per-topic {ns}"] == "5"
    assert re.search(r"app\s+\[(produce, consume|consume, produce)\]", out[f"namespaces permissions {ns}"])
    assert json.loads(out[f"topics get-partitioned-topic-metadata {parts}"])["partitions"] == 3
    assert sorted(out[f"topics list {ns}"].split()) == sorted([plain] + [f"{parts}-partition-{n}" for n in range(3)])
    assert out[f"topics list-partitioned-topics {ns}"] == parts
    assert out[f"topics subscriptions {plain}"] == "audit"
    assert re.search(r"auditor\s+\[consume\]", out[f"topics permissions {plain}"])
    assert re.search(r"app\s+\[", out[f"topics permissions {plain}"])       # the namespace's grants too
    assert json.loads(out[f"schemas get {plain}"])["schemaInfo"]["type"] == "JSON"

    producer = client.create_producer(plain, batching_enabled=False)
    for n in range(4):
        producer.send(f"order-{n}".encode(), partition_key=f"k{n % 2}")
    producer.close()

    inspect = [
        ["topics", "stats", plain], ["topics", "stats-internal", plain], ["topics", "partitioned-stats", parts],
        ["topics", "peek-messages", plain, "-s", "audit", "-n", "2"],
        ["topics", "examine-messages", plain, "-i", "earliest", "-m", "2"],
        ["topics", "last-message-id", plain],
        ["topics", "skip", plain, "-s", "audit", "-n", "1"], ["topics", "stats", plain, "-gpb"],
        ["topics", "reset-cursor", plain, "-s", "audit", "-t", "1h"],
        ["topics", "compact", plain], ["topics", "unload", plain],
        ["topics", "clear-backlog", plain, "-s", "audit"],
        ["topics", "expire-messages", plain, "-s", "audit", "-t", "1h"],
        ["topics", "unsubscribe", plain, "-s", "audit"], ["topics", "subscriptions", plain],
        ["topics", "revoke-permission", plain, "--role", "auditor"],
        ["namespaces", "revoke-permission", ns, "--role", "app"], ["namespaces", "permissions", ns],
        ["namespaces", "remove-retention", ns], ["namespaces", "get-retention", ns],
        ["schemas", "delete", plain],
        ["topics", "delete", plain, "-f"], ["topics", "delete-partitioned-topic", parts, "-f"],
        ["topics", "list", ns], ["namespaces", "delete", ns], ["tenants", "delete", tenant],
    ]
    out = outputs(inspect, run_batch(pulsar_admin_classpath, conf, inspect, tmp_path))
    stats = json.loads(out[f"topics stats {plain}"])
    assert (stats["msgInCounter"], stats["subscriptions"]["audit"]["msgBacklog"]) == (4, 4)
    assert json.loads(out[f"topics stats-internal {plain}"])["numberOfEntries"] == 4
    assert json.loads(out[f"topics partitioned-stats {parts}"])["msgInCounter"] == 0
    peeked = out[f"topics peek-messages {plain} -s audit -n 2"]
    assert peeked.count("Message ID:") == 2 and "order-0" in peeked and "order-1" in peeked
    assert "order-1" in out[f"topics examine-messages {plain} -i earliest -m 2"]
    assert json.loads(out[f"topics last-message-id {plain}"])["entryId"] == 3
    assert json.loads(out[f"topics stats {plain} -gpb"])["subscriptions"]["audit"]["msgBacklog"] == 3
    assert out[f"topics compact {plain}"].startswith("Topic compaction requested")
    assert out[f"topics subscriptions {plain}"] == ""
    assert out[f"namespaces permissions {ns}"] == ""
    assert out[f"topics list {ns}"] == ""


@pytest.mark.timeout(2 * RUN_TIMEOUT_S)
def test_pulsar_admin_main_exit_codes(broker, pulsar_admin_classpath, tmp_path):
    conf = tmp_path / "client.conf"
    conf.write_text(f"webServiceUrl={broker.web_url}\n")

    def pulsar_admin(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*JAVA, pulsar_admin_classpath, "org.apache.pulsar.admin.cli.PulsarAdminTool",
                               str(conf), *args], capture_output=True, text=True, timeout=RUN_TIMEOUT_S)

    listed = pulsar_admin("tenants", "list")
    assert listed.returncode == 0 and "public" in listed.stdout.split()
    missing = pulsar_admin("tenants", "get", "no-such-tenant")
    assert missing.returncode == 1 and "Tenant does not exist" in missing.stdout + missing.stderr
