"""The official Java client (org.apache.pulsar:pulsar-client 4.x) against pulsard.

Maven builds compat_tests/java once per session; one JVM then runs every scenario against this
module's two brokers (default config, and auto-created partitioned topics with 3 partitions) and
reports each scenario on its own line; each test below asserts one scenario. PULSAR_WEB_URL
names the first broker's web port, for scenarios that call the admin REST API.
"""

from __future__ import annotations

import os

import pytest

from compat_tests.toolchains import java_scenarios, run_program

JVM_TIMEOUT_S = 240


@pytest.fixture(scope="module")
def java_report(java_command, broker, partitioned_broker):
    return run_program([*java_command, "pulsard.compat.Main", broker.service_url,
                        partitioned_broker.service_url], JVM_TIMEOUT_S,
                       env={**os.environ, "PULSAR_WEB_URL": broker.web_url})


@pytest.mark.timeout(JVM_TIMEOUT_S + 60)   # the first one runs them all
@pytest.mark.parametrize("scenario", java_scenarios())
def test_java_scenario(scenario, java_report, broker, partitioned_broker):
    java_report.assert_passed(scenario)
