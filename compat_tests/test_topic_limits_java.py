"""The topic limits as the official Java client meets them (compat_tests/java's LimitScenarios,
run by LimitsMain in one JVM against this module's broker): a Shared consumer holds as many
unacknowledged messages as the limit in force lets it, following a change at the namespace and
topic level while connected; producers, consumers, subscriptions, subscription types and a topic's
maxMessageSize are refused with Pulsar's exceptions and messages. One test per scenario."""

from __future__ import annotations

import os

import pytest

from compat_tests.toolchains import marked_java_scenarios, run_program

JVM_TIMEOUT_S = 240


@pytest.fixture(scope="module")
def limits_report(java_command, broker):
    return run_program([*java_command, "pulsard.compat.LimitsMain", broker.service_url, broker.service_url],
                       JVM_TIMEOUT_S, env={**os.environ, "PULSAR_WEB_URL": broker.web_url})


@pytest.mark.timeout(JVM_TIMEOUT_S + 60)   # the first one runs them all
@pytest.mark.parametrize("scenario", marked_java_scenarios("java", "LimitScenario"))
def test_java_limit_scenario(scenario, limits_report, broker):
    limits_report.assert_passed(scenario)
