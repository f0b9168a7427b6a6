"""Apache Pulsar's own pulsar-admin setting, reading and removing every policy pulsard serves, at
namespace level (`namespaces set-*`) and topic level (`topics set-*` and `topicPolicies set-*`, the
two groups pulsar-admin has for the same REST calls), with `-ap` (the value in force: topic, else
namespace, else broker), and pulsar-admin's flags as a user types them (policy_cli_cases.py).
The sets, then the removes, each with the first reads in one JVM (PulsardBatch); reads are
retried until they settle, as Pulsar applies topic policies asynchronously.
"""

from __future__ import annotations

import json
import re
import time

import pytest

from compat_tests.policy_cli_cases import Command, Scenario, comparable
from compat_tests.pulsar_admin_batch import RUN_TIMEOUT_S, client_conf, outputs, run_batch

SETTLE_S = 60.0   # Pulsar 3.0.7 took up to ~40 s to apply 65 topic policy changes (its system topic reader)


def shown(output: str):
    """A get's output as a value: JSON as printed, a backlog quota map from its lines."""
    if "BacklogQuotaImpl(" in output:
        return {kind: {"limitSize": int(size), "limitTime": int(limit_time), "policy": policy}
                for kind, size, limit_time, policy
                in re.findall(r"(\w+)\s+BacklogQuotaImpl\(limit=-?\d+, limitSize=(-?\d+), limitTime=(-?\d+), "
                              r"policy=(\w+)\)", output)}
    if output == "":
        return {}   # an empty map prints nothing
    try:
        return comparable(json.loads(output))
    except ValueError:
        return output   # a bare word: FORWARD


class Cli:
    """pulsar-admin against one broker: batches of commands, reads retried until they settle."""

    def __init__(self, broker, classpath: str, tmp_path) -> None:
        self.classpath, self.tmp_path = classpath, tmp_path
        self.conf = client_conf(broker, tmp_path)

    def run(self, commands: list[Command]) -> dict[str, str]:
        lines = [list(command) for command in commands]
        return outputs(lines, run_batch(self.classpath, self.conf, lines, self.tmp_path))

    def apply(self, changes: list[Command], expected: dict[Command, object]) -> None:
        """Runs the changes, then the gets until each prints its expected value (the first time
        in the changes' JVM: one start fewer)."""
        pending = dict(expected)
        out = self.run(changes + list(pending))
        deadline = time.monotonic() + SETTLE_S
        while True:
            wrong = {c: (shown(out[" ".join(c)]), value) for c, value in pending.items()
                     if shown(out[" ".join(c)]) != value}
            if not wrong or time.monotonic() > deadline:
                break
            pending = {c: expected[c] for c in wrong}
            time.sleep(1)
            out = self.run(list(pending))
        assert not wrong, "\n".join(f"{' '.join(c)}: printed {got!r}, expected {value!r}"
                                     for c, (got, value) in wrong.items())


@pytest.mark.timeout(4 * RUN_TIMEOUT_S)
def test_pulsar_admin_sets_reads_and_removes_every_policy(broker, pulsar_admin_classpath, tmp_path):
    cli = Cli(broker, pulsar_admin_classpath, tmp_path)
    scenario = Scenario(broker.web_url)
    cli.apply(scenario.sets(), scenario.after_sets())
    cli.apply(scenario.removes(), scenario.after_removes())
