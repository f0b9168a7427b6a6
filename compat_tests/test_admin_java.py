"""The official Java admin client (Apache Pulsar 3.0.7's pulsar-client-admin, fetched from Maven
Central by compat_tests/admin_java/pom.xml and built here) driving tenants, namespaces, topics
and subscriptions against pulsard."""

from __future__ import annotations

import subprocess
import uuid

import pytest

from compat_tests.toolchains import JAVA

RUN_TIMEOUT_S = 60


@pytest.mark.timeout(RUN_TIMEOUT_S + 60)
def test_java_admin_client_drives_tenants_namespaces_topics_and_subscriptions(broker, admin_java_classpath):
    tenant = f"java-{uuid.uuid4().hex[:8]}"
    run = subprocess.run([*JAVA, "-cp", admin_java_classpath, "pulsard.AdminDriver", broker.web_url, tenant],
                         capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert run.returncode == 0, run.stdout + run.stderr[-5000:]
    lines = run.stdout.splitlines()
    topics_line = next(line for line in lines if line.startswith("topics ["))
    assert sorted(topics_line.removeprefix("topics [").removesuffix("]").split(", ")) == [
        f"persistent://{tenant}/ns/events-partition-0", f"persistent://{tenant}/ns/events-partition-1",
        f"persistent://{tenant}/ns/orders"]
    assert [line for line in lines if line != topics_line] == [
        "tenant [ops] [standalone]",
        "clusters [standalone]",
        f"namespaces [{tenant}/ns]",
        "retention 60 100",
        "ttl 300",
        "partitions 2",
        f"partitioned [persistent://{tenant}/ns/events]",
        "subscriptions [audit]",
        "duplicate subscription conflict",
        "stats backlog 0",
        "internal entries 0 cursors [audit]",
        "subscriptions []",
        "missing topic not found",
        "topics []",
        "tenant deleted true",
    ]
