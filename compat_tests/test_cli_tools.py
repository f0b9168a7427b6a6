"""The tools users reach for, against real pulsard processes: start-up configuration checks,
`pulsard --version`, the leader broker endpoint."""

from __future__ import annotations

import subprocess
import sys

from compat_tests.admin_http import AdminHttp
from compat_tests.broker import REPO_ROOT, free_port, write_config


def pulsard(*args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "server", *args], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=timeout)


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
