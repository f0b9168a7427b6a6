"""The pytest plugin shipped with pulsard (server/testing/pytest_plugin.py): a tiny application
test file, run by pytest in a subprocess, gets real brokers from the pulsar_broker fixtures."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from compat_tests.broker import REPO_ROOT

EXAMPLE = '''
import pulsar
import pytest


@pytest.fixture
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

# The session's settings in a conftest.py, a plain per-test override in one module: each broker
# must run with the settings meant for it (the override once made pulsar_broker_session a ScopeMismatch).
SETTINGS_CONFTEST = '''
import json
import urllib.request

import pytest


@pytest.fixture(scope="session")
def pulsar_broker_session_settings():
    return {"maxMessageSize": 1048576}


def max_message_size(broker):
    url = broker.web_url + "/admin/v2/brokers/configuration/runtime"
    return json.loads(urllib.request.urlopen(url).read())["maxMessageSize"]
'''

SETTINGS_DEFAULT = '''
from conftest import max_message_size


def test_the_session_settings_configure_the_test_broker(pulsar_broker):
    assert max_message_size(pulsar_broker) == "1048576"


def test_the_session_settings_configure_the_session_broker(pulsar_broker_session):
    assert max_message_size(pulsar_broker_session) == "1048576"
'''

SETTINGS_OVERRIDE = '''
import pytest

from conftest import max_message_size


@pytest.fixture
def pulsar_broker_settings():
    return {"maxMessageSize": 2097152}


def test_the_override_configures_the_test_broker(pulsar_broker):
    assert max_message_size(pulsar_broker) == "2097152"


def test_the_session_broker_keeps_the_session_settings(pulsar_broker_session):
    assert max_message_size(pulsar_broker_session) == "1048576"
'''


def run_application_tests(folder: Path, files: dict[str, str]) -> subprocess.CompletedProcess:
    """pytest on `files` (name -> source) written into `folder`, with the plugin, its temp dirs in folder/inner."""
    for name, source in files.items():
        (folder / name).write_text(source)
    # Autoload off so the plugin is loaded once, by -p, whether or not the entry point is installed.
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "NO_PROXY": "127.0.0.1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "server.testing.pytest_plugin",
                           "-p", "no:cacheprovider", "--basetemp", str(folder / "inner"), *files],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=120)


def test_application_tests_get_real_brokers_from_the_plugin(tmp_path):
    run = run_application_tests(tmp_path, {"test_app.py": EXAMPLE})
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "3 passed" in run.stdout
    assert sorted(p.name for p in (tmp_path / "inner").glob("pulsard*[0-9]")) == [
        "pulsard-session0", "pulsard0", "pulsard1"]                     # two per-test brokers, one session
    assert [path for path in (tmp_path / "inner").rglob("data") if path.is_dir()] == []  # data removed


def test_settings_overrides_reach_the_broker_of_each_scope(tmp_path):
    run = run_application_tests(tmp_path, {"conftest.py": SETTINGS_CONFTEST, "test_default.py": SETTINGS_DEFAULT,
                                           "test_override.py": SETTINGS_OVERRIDE})
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "4 passed" in run.stdout
