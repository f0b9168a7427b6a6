"""`pulsard admin` setting, reading and removing every policy at namespace and topic level, with the
same verbs, flags and expectations as Apache Pulsar's pulsar-admin (policy_cli_cases.py,
test_pulsar_admin_policies.py), against a real broker. The commands run in this process
(`run_admin`, the code `pulsard admin` runs, over HTTP); two run as the command itself."""

from __future__ import annotations

import json

import pytest

from compat_tests.admin_http import admin
from compat_tests.policy_cli_cases import Command, Scenario, comparable
from server.admin.cli import run_admin
from server.cli import _parser


def shown(output: str):
    """A get's output as a value: JSON as printed, or a list printed one item a line."""
    if output == "":
        return []   # an empty list prints nothing
    try:
        return comparable(json.loads(output))
    except ValueError:
        lines = output.splitlines()
        return sorted(lines) if len(lines) > 1 else output   # several lines: a list; one: a bare word


@pytest.fixture
def pulsard_admin(broker, capsys):
    parser = _parser()   # built once: it has every command of every group

    def run(command: Command) -> str:
        code = run_admin(parser.parse_args(["admin", "--admin-url", broker.web_url, *command]))
        out, err = capsys.readouterr()
        assert code == 0, f"{' '.join(command)}: {err}"
        return out.strip()
    return run


def check(run, expected: dict[Command, object]) -> None:
    wrong = [f"{' '.join(c)}: printed {got!r}, expected {value!r}"
             for c, value in expected.items() if (got := shown(run(c))) != value]
    assert not wrong, "\n".join(wrong)


def test_pulsard_admin_sets_reads_and_removes_every_policy(broker, pulsard_admin):
    scenario = Scenario(broker.web_url)
    for command in scenario.sets():
        assert pulsard_admin(command) == ""
    check(pulsard_admin, scenario.after_sets())
    for command in scenario.removes():
        assert pulsard_admin(command) == ""
    check(pulsard_admin, scenario.after_removes())


def test_the_command_sets_and_reads_topic_policies(broker):
    scenario = Scenario(broker.web_url)
    topic = scenario.topic("cli")
    assert admin(broker, "topicPolicies", "set-dispatch-rate", topic, "-md", "100", "-dt", "2").returncode == 0
    shown_rate = admin(broker, "topics", "get-dispatch-rate", topic, "--applied")
    assert json.loads(shown_rate.stdout) == {"dispatchThrottlingRateInMsg": 100, "dispatchThrottlingRateInByte": -1,
                                             "relativeToPublishRate": False, "ratePeriodInSecond": 2}
    refused = admin(broker, "topics", "set-persistence", topic, "-e", "1", "-w", "2", "-a", "1")
    assert refused.returncode == 1 and "Bookkeeper Ensemble (1) >= WriteQuorum (2)" in refused.stderr
