"""The official Go client (github.com/apache/pulsar-client-go) against pulsard.

compat_tests/go is compiled once per session into one test binary (`go test -c`); each Test
function of it is one pytest test here, run against this module's two brokers (default config,
and auto-created partitioned topics with 3 partitions); the admin scenarios (admin_test.go,
the official Go admin client) use the first broker's web port, PULSAR_WEB_URL.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from compat_tests.toolchains import go_scenarios, tail

SCENARIO_TIMEOUT_S = 45


@pytest.mark.timeout(SCENARIO_TIMEOUT_S + 60)   # the first one starts the brokers
@pytest.mark.parametrize("scenario", go_scenarios())
def test_go_scenario(scenario, go_binaries, broker, partitioned_broker):
    go_binary = go_binaries[0]
    env = {**os.environ, "PULSAR_SERVICE_URL": broker.service_url,
           "PULSAR_PARTITIONED_SERVICE_URL": partitioned_broker.service_url, "PULSAR_WEB_URL": broker.web_url}
    done = subprocess.run(
        [str(go_binary), "-test.run", f"^{scenario}$", "-test.v", "-test.count=1",
         f"-test.timeout={SCENARIO_TIMEOUT_S}s"],
        cwd=go_binary.parent.parent, env=env, capture_output=True, text=True, timeout=SCENARIO_TIMEOUT_S + 15)
    output = f"{done.stdout}\n{tail(done.stderr)}"
    assert done.returncode == 0 and f"--- PASS: {scenario}" in done.stdout, \
        f"Go scenario {scenario} failed (exit {done.returncode}):\n{tail(output)}"
