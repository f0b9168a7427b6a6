"""The pytest plugin shipped with pulsard (server/testing/pytest_plugin.py): a tiny application
test file, run by pytest in a subprocess, gets real brokers from the pulsar_broker fixtures."""

from __future__ import annotations

import os
import subprocess
import sys

from compat_tests.broker import REPO_ROOT

EXAMPLE = '''
import pulsar
import pytest


@pytest.fixture(scope="session")
def pulsar_broker_settings():
    return {"maxMessageSize": 1048576}


def test_round_trip(pulsar_broker):
    client = pulsar.Client(pulsar_broker.service_url)
    consumer = client.subscribe("orders", "app")
    client.create_producer("orders").send(b"order-1")
    assert consumer.receive(timeout_millis=10000).data() == b"order-1"
    client.close()
    assert pulsar_broker.data_dir.is_dir() and pulsar_broker.admin_url == pulsar_broker.web_url


def test_each_test_has_its_own_broker(pulsar_broker, pulsar_broker_session):
    assert pulsar_broker.service_url != pulsar_broker_session.service_url
    assert pulsar_broker.data_dir != pulsar_broker_session.data_dir


def test_session_broker_is_shared(pulsar_broker_session, request):
    import urllib.request
    health = urllib.request.urlopen(pulsar_broker_session.web_url + "/admin/v2/brokers/health").read()
    assert health == b"ok"
'''


def test_application_tests_get_real_brokers_from_the_plugin(tmp_path):
    (tmp_path / "test_app.py").write_text(EXAMPLE)
    # Autoload off so the plugin is loaded once, by -p, whether or not the entry point is installed.
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "NO_PROXY": "127.0.0.1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "server.testing.pytest_plugin",
                          "-p", "no:cacheprovider", "--basetemp", str(tmp_path / "inner"), "test_app.py"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "3 passed" in run.stdout
    assert sorted(p.name for p in (tmp_path / "inner").glob("pulsard*[0-9]")) == [
        "pulsard-session0", "pulsard0", "pulsard1"]                     # two per-test brokers, one session
    assert [path for path in (tmp_path / "inner").rglob("data") if path.is_dir()] == []  # data removed
