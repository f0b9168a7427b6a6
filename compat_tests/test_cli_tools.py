"""The tools users reach for, against real pulsard processes: start-up configuration checks,
`pulsard --version`, the leader broker endpoint, `pulsard admin` with pulsar-admin's flags and
client.conf."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid

from compat_tests.admin_http import AdminHttp
from compat_tests.helpers import pulsard, unique_topic
from compat_tests.broker import REPO_ROOT, free_port, write_config


def test_version():
    run = pulsard("--version")
    assert run.returncode == 0 and run.stdout.startswith("pulsard ")


def test_a_bad_value_refuses_the_start_naming_the_key_and_opens_nothing(tmp_path):
    conf = write_config(tmp_path / "standalone.conf", {"brokerServicPort": 6650, "webServicePort": 123456})
    data_dir = tmp_path / "data"
    run = pulsard("standalone", "--config", str(conf), "--broker-port", str(free_port()), "--data-dir", str(data_dir))
    assert run.returncode != 0
    assert "unknown configuration key brokerServicPort, ignored (did you mean brokerServicePort?)" in run.stderr
    assert run.stderr.strip().endswith("pulsard: webServicePort: 123456 is not a TCP port (1-65535)")
    assert not data_dir.exists()


def test_leader_broker_is_this_broker(broker):
    answer = AdminHttp(broker.web_url).get("/admin/v2/brokers/leaderBroker")
    assert answer.status_code == 200
    host_port = broker.web_url.removeprefix("http://")
    assert answer.json() == {"serviceUrl": broker.web_url, "brokerId": host_port}


def test_the_start_log_names_the_resolved_data_dir(broker):
    assert f"data in {broker.data_dir.resolve()}" in broker.log_path.read_text()


def test_admin_takes_pulsar_admin_flags_and_client_conf(broker, client, tmp_path):
    conf = tmp_path / "client.conf"
    conf.write_text(f"webServiceUrl={broker.web_url}\nbrokerServiceUrl={broker.service_url}\n")
    env = {"PULSAR_CLIENT_CONF": str(conf)}
    namespace = f"public/tools-{uuid.uuid4().hex[:8]}"
    assert pulsard("admin", "namespaces", "create", namespace, env=env).returncode == 0
    assert pulsard("admin", "namespaces", "set-retention", namespace, "--size", "100M", "--time", "1h",
                   env=env).returncode == 0
    assert pulsard("admin", "namespaces", "set-message-ttl", namespace, "--ttl", "2m", env=env).returncode == 0
    assert pulsard("admin", "namespaces", "set-backlog-quota", namespace, "--limit", "10M", "--policy",
                   "producer_exception", env=env).returncode == 0
    policies = json.loads(pulsard("admin", "namespaces", "policies", namespace, env=env).stdout)
    assert policies["retention_policies"] == {"retentionTimeInMinutes": 60, "retentionSizeInMB": 100}
    assert policies["message_ttl_in_seconds"] == 120
    assert policies["backlog_quota_map"]["destination_storage"]["limitSize"] == 10 * 1024 * 1024

    usage = pulsard("admin", "namespaces", "set-retention", namespace, "--size", "1G", "--bogus", env=env)
    assert usage.returncode == 1 and "usage: pulsard admin namespaces set-retention" in usage.stderr

    topic = f"persistent://{namespace}/{unique_topic('peek')}"
    assert pulsard("admin", "topics", "create-subscription", topic, "-s", "s", "-m", "earliest",
                   env=env).returncode == 0
    producer = client.create_producer(topic, batching_enabled=False)
    for n in range(3):
        producer.send(f"message-{n}".encode())
    peeked = pulsard("admin", "topics", "peek-messages", topic, "-s", "s", "-n", "5", env=env)
    assert peeked.returncode == 0, peeked.stderr
    assert [line for line in peeked.stdout.splitlines() if line.startswith("message-")] == [
        "message-0", "message-1", "message-2"]
    assert pulsard("admin", "topics", "skip", topic, "-s", "s", "-n", "3", env=env).returncode == 0
    assert pulsard("admin", "topics", "reset-cursor", topic, "-s", "s", "-t", "1h", env=env).returncode == 0
    stats = json.loads(pulsard("admin", "topics", "stats", topic, env=env).stdout)
    assert stats["subscriptions"]["s"]["msgBacklog"] == 3


def test_client_produce_and_consume(broker, tmp_path):
    topic = unique_topic("client-cli")
    url = ("--url", broker.service_url)
    payload_file = tmp_path / "body.bin"
    payload_file.write_bytes(b"from a file")
    produced = pulsard("client", *url, "produce", topic, "-m", "one", "-m", "two", "-f", str(payload_file),
                       "-n", "2", "-k", "key-1", "-p", "origin=cli")
    assert produced.returncode == 0, produced.stderr
    assert "6 messages successfully produced" in produced.stderr
    piped = subprocess.run([sys.executable, "-m", "server", "client", *url, "produce", topic], cwd=REPO_ROOT,
                           input="line-a\nline-b\n", capture_output=True, text=True, timeout=30)
    assert piped.returncode == 0, piped.stderr
    consumed = pulsard("client", *url, "consume", topic, "-s", "cli-sub", "-p", "Earliest", "-t", "Shared",
                       "-n", "8")
    assert consumed.returncode == 0, consumed.stderr
    contents = [line.split("content:", 1)[1] for line in consumed.stdout.splitlines() if "content:" in line]
    assert contents == ["one", "two", "from a file"] * 2 + ["line-a", "line-b"]
    assert "key:[key-1], properties:{'origin': 'cli'}, content:one" in consumed.stdout


def _wait_for_subscription(broker, topic: str, subscription: str, process: subprocess.Popen,
                           timeout: float = 30) -> None:
    """Until the subscribing process's subscription exists; else fail with that process's output."""
    http, deadline = AdminHttp(broker.web_url), time.monotonic() + timeout
    while subscription not in http.get(f"/admin/v2/persistent/public/default/{topic}/subscriptions").text:
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            out, err = process.communicate()
            raise AssertionError(f"{subscription} never appeared on {topic}; the subscriber "
                                 f"(exit {process.returncode}) wrote:\n{out[-2000:]}\n{err[-4000:]}")
        time.sleep(0.1)


def test_perf_produce_and_consume_print_rates_and_percentiles(broker):
    topic = unique_topic("perf")
    url = ("--url", broker.service_url)
    consumer = subprocess.Popen([sys.executable, "-m", "server", "perf", *url, "consume", topic, "-n", "200",
                                 "--time", "30", "-i", "1"], cwd=REPO_ROOT, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
    try:
        _wait_for_subscription(broker, topic, "perf-sub", consumer)
        produced = pulsard("perf", *url, "produce", topic, "-r", "200", "-s", "64", "-n", "200", "-i", "0.5")
        out, err = consumer.communicate(timeout=40)
    finally:
        consumer.kill()
    assert produced.returncode == 0, produced.stderr
    assert "produce total: 200 messages" in produced.stdout
    assert "msg/s" in produced.stdout and "p99=" in produced.stdout
    assert consumer.returncode == 0, err
    assert "consume total: 200 messages" in out and "p50=" in out
    help_text = pulsard("perf", "--help").stdout
    assert "benchmarks/" in help_text


def test_topic_permissions_and_runtime_configuration(broker):
    http = AdminHttp(broker.web_url)
    namespace = f"public/perm-{uuid.uuid4().hex[:8]}"
    topic = f"/admin/v2/persistent/{namespace}/orders"
    assert http.put(f"/admin/v2/namespaces/{namespace}").status_code == 204
    assert http.post(f"/admin/v2/namespaces/{namespace}/permissions/app", json=["produce"]).status_code == 204
    assert http.post(f"{topic}/permissions/auditor", json=["consume"]).status_code == 204
    assert http.post(f"{topic}/permissions/app", json=["consume"]).status_code == 204
    assert http.get(f"{topic}/permissions").json() == {"app": ["consume", "produce"], "auditor": ["consume"]}
    auth = http.get(f"/admin/v2/namespaces/{namespace}").json()["auth_policies"]
    assert auth["destination_auth"] == {f"persistent://{namespace}/orders": {"auditor": ["consume"],
                                                                              "app": ["consume"]}}
    assert http.delete(f"{topic}/permissions/auditor").status_code == 204
    assert http.delete(f"{topic}/permissions/app").status_code == 204
    assert http.get(f"{topic}/permissions").json() == {"app": ["produce"]}
    assert http.get("/admin/v2/persistent/public/no-such-ns/orders/permissions").status_code == 404

    runtime = http.get("/admin/v2/brokers/configuration/runtime").json()
    assert runtime["clusterName"] == "standalone"
    assert runtime["brokerServicePort"] == str(broker.broker_port)
    assert runtime["journalSyncData"] == "true"


def test_a_data_dir_that_is_a_file_is_refused_in_one_line_and_left_alone(tmp_path):
    taken = tmp_path / "data"
    taken.write_text("not a directory\n")
    expected = f"pulsard: data directory {taken} is a file, not a directory"
    for command in (["standalone", "--broker-port", str(free_port()), "--web-port", str(free_port())],
                    ["namespace-policies", "get", "public/default"],
                    ["namespace-policies", "set", "public/default", "deduplicationEnabled=true"]):
        run = pulsard(*command, "--data-dir", str(taken))
        assert run.returncode != 0 and run.stderr.strip().splitlines()[-1] == expected, run.stderr
        assert "Traceback" not in run.stderr
    below = pulsard("namespace-policies", "get", "public/default", "--data-dir", str(taken / "sub"))
    assert below.stderr.strip() == f"pulsard: data directory {taken / 'sub'}: {taken} is a file, not a directory"
    assert taken.read_text() == "not a directory\n"


def test_namespace_policies_set_refuses_unknown_fields_and_wrong_types_storing_nothing(broker):
    """Checked as the config file is (a "did you mean"), nested values too, before any write."""
    admin = AdminHttp(broker.web_url)
    namespace = f"public/checked-{uuid.uuid4().hex[:8]}"
    assert admin.put(f"/admin/v2/namespaces/{namespace}").status_code == 204
    before = admin.get(f"/admin/v2/namespaces/{namespace}").json()
    refusals = {
        "message_ttl_in_second=60":
            "unknown namespace policy message_ttl_in_second (did you mean message_ttl_in_seconds?)",
        'retention_policies={"retentionTimeInMinutes": "abc"}':
            "retention_policies: retentionTimeInMinutes must be an integer, not 'abc'",
        'retention_policies={"retentionTimeInMinute": 5}':
            "retention_policies: unknown field retentionTimeInMinute in Retention policies "
            "(did you mean retentionTimeInMinutes?)",
        'deduplicationEnabled="yes"': "deduplicationEnabled: Value must be true or false, not 'yes'",
        'backlog_quota_map={"destination_storage": {"limitSize": 1, "policy": "drop"}}':
            "backlog_quota_map: destination_storage: Backlog quota policy must be one of "
            "producer_request_hold, producer_exception, consumer_backlog_eviction",
    }
    for field, reason in refusals.items():
        run = pulsard("namespace-policies", "set", namespace, "deduplicationEnabled=true", field,
                      "--data-dir", str(broker.data_dir))
        assert run.returncode != 0 and run.stderr.strip() == f"pulsard: {reason}", run.stderr
    assert admin.get(f"/admin/v2/namespaces/{namespace}").json() == before

    ok = pulsard("namespace-policies", "set", namespace, 'retention_policies={"retentionTimeInMinutes": 60, '
                 '"retentionSizeInMB": -1}', "message_ttl_in_seconds=null", "--data-dir", str(broker.data_dir))
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["retention_policies"] == {"retentionTimeInMinutes": 60, "retentionSizeInMB": -1}


def test_the_admin_api_checks_policies_with_the_same_rules(broker):
    admin = AdminHttp(broker.web_url)
    namespace = f"public/rest-checked-{uuid.uuid4().hex[:8]}"
    created = admin.put(f"/admin/v2/namespaces/{namespace}",
                        json={"retention_policies": {"retentionTimeInMinutes": "abc"}})
    assert created.status_code == 400
    assert created.json()["reason"] == "retention_policies: retentionTimeInMinutes must be an integer, not 'abc'"
    assert admin.get(f"/admin/v2/namespaces/{namespace}").status_code == 404
    # a whole Policies document (as the Java client sends): fields this broker does not apply are kept
    assert admin.put(f"/admin/v2/namespaces/{namespace}", json={
        "message_ttl_in_seconds": None, "encryption_required": False}).status_code == 204
    assert admin.get(f"/admin/v2/namespaces/{namespace}").json()["encryption_required"] is False
    misspelled = admin.post(f"/admin/v2/namespaces/{namespace}/retention", json={"retentionTimeInMinute": 5})
    assert misspelled.status_code == 400 and "did you mean retentionTimeInMinutes?" in misspelled.json()["reason"]
    assert admin.get(f"/admin/v2/namespaces/{namespace}/retention").status_code == 204


def test_backlog_quota_by_size_and_by_time_as_pulsar_admin_sets_them(broker):
    """A time limit given with a size quota is not stored where nothing enforces it (pulsar-admin 3.x
    drops it too); the user is told to set it as a message_age quota."""
    admin = ["admin", "--admin-url", broker.web_url, "namespaces"]
    namespace = f"public/quota-{uuid.uuid4().hex[:8]}"
    assert pulsard(*admin, "create", namespace).returncode == 0
    mixed = pulsard(*admin, "set-backlog-quota", namespace, "--limit", "10G", "--limitTime", "1d",
                    "--policy", "producer_exception")
    assert mixed.returncode == 0, mixed.stderr
    assert mixed.stderr.strip() == ("pulsard admin: --limitTime ignored: a destination_storage quota has no "
                                    "time limit; set one with --type message_age")
    assert json.loads(pulsard(*admin, "get-backlog-quotas", namespace).stdout) == {
        "destination_storage": {"limitSize": 10 * 2**30, "limitTime": -1, "policy": "producer_exception"}}
    by_time = pulsard(*admin, "set-backlog-quota", namespace, "--type", "message_age", "--limitTime", "1d",
                      "--policy", "producer_exception")
    assert by_time.returncode == 0 and not by_time.stderr
    assert json.loads(pulsard(*admin, "get-backlog-quotas", namespace).stdout)["message_age"] == {
        "limitSize": -1, "limitTime": 86400, "policy": "producer_exception"}
    no_limit = pulsard(*admin, "set-backlog-quota", namespace, "--policy", "producer_exception")
    assert no_limit.returncode == 1
    assert no_limit.stderr.strip() == "pulsard admin: Quota type of 'destination_storage' needs a size limit"


def test_admin_brokers_and_clusters_print_as_pulsar_admin(broker):
    admin = ("admin", "--admin-url", broker.web_url)
    host_port = broker.web_url.removeprefix("http://")

    def out(*argv: str) -> str:
        run = pulsard(*admin, *argv)
        assert run.returncode == 0, run.stderr
        return run.stdout

    assert out("brokers", "healthcheck") == "ok\n"
    assert out("brokers", "healthcheck", "-tv", "V2") == "ok\n"
    assert out("brokers", "version").strip() == pulsard("--version").stdout.split()[-1]
    assert out("brokers", "list") == out("brokers", "list", "standalone") == f"{host_port}\n"
    assert json.loads(out("brokers", "leader-broker"))["serviceUrl"] == broker.web_url
    assert "clusterName    standalone" in out("brokers", "get-runtime-config").splitlines()
    assert out("clusters", "list") == "standalone\n"
    assert json.loads(out("clusters", "get", "standalone"))["serviceUrl"].startswith("http://")
    missing = pulsard(*admin, "clusters", "get", "nowhere")
    assert (missing.returncode, missing.stderr.strip()) == (1, "pulsard admin: 404: Cluster does not exist")


def test_admin_get_of_an_unset_policy_prints_null(broker):
    """pulsar-admin prints a null policy as JSON's null (not nothing)."""
    admin = ("admin", "--admin-url", broker.web_url, "namespaces")
    namespace = f"public/unset-{uuid.uuid4().hex[:8]}"
    assert pulsard(*admin, "create", namespace).returncode == 0
    for getter in ("get-retention", "get-message-ttl", "get-deduplication", "get-inactive-topic-policies"):
        run = pulsard(*admin, getter, namespace)
        assert (run.returncode, run.stdout) == (0, "null\n"), getter
    assert pulsard(*admin, "set-message-ttl", namespace, "--ttl", "1h").stdout == ""
    assert pulsard(*admin, "get-message-ttl", namespace).stdout == "3600\n"
