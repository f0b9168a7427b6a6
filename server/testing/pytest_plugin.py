"""pytest plugin (entry point `pytest11`, installed with pulsard): a real broker per test or per
session, so an application tests against Pulsar's protocol with two lines:

    def test_send(pulsar_broker):
        client = pulsar.Client(pulsar_broker.service_url)

Each broker has its own free ports and data directory (under pytest's tmp_path) and is stopped
at teardown (its data removed). Settings (standalone.conf keys) come from two fixtures to
override, one per broker scope, because a session broker cannot wait on a per-test fixture:
`pulsar_broker_session_settings` (session scope) configures both brokers, and
`pulsar_broker_settings` (any scope, e.g. a plain fixture in one test module) overrides it for
`pulsar_broker` alone.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Iterator

import pytest

from server.testing.broker_process import PulsarBroker


@pytest.fixture(scope="session")
def pulsar_broker_session_settings() -> dict[str, object]:
    """standalone.conf keys for both brokers (override in a conftest.py, with scope="session")."""
    return {}


@pytest.fixture
def pulsar_broker_settings(pulsar_broker_session_settings: dict[str, object]) -> dict[str, object]:
    """standalone.conf keys for the per-test broker (override with any scope); the session's by default."""
    return pulsar_broker_session_settings


@pytest.fixture
def pulsar_broker(tmp_path_factory: pytest.TempPathFactory,
                  pulsar_broker_settings: dict[str, object]) -> Iterator[PulsarBroker]:
    """A broker of the test's own: service_url, web_url (= admin_url), data_dir."""
    yield from _running(tmp_path_factory.mktemp("pulsard"), pulsar_broker_settings)


@pytest.fixture(scope="session")
def pulsar_broker_session(tmp_path_factory: pytest.TempPathFactory,
                          pulsar_broker_session_settings: dict[str, object]) -> Iterator[PulsarBroker]:
    """One broker shared by the whole session (faster; tests share its topics)."""
    yield from _running(tmp_path_factory.mktemp("pulsard-session"), pulsar_broker_session_settings)


def _running(work_dir: Path, settings: dict[str, object]) -> Iterator[PulsarBroker]:
    with PulsarBroker(work_dir, settings) as broker:
        yield broker
    shutil.rmtree(broker.data_dir, ignore_errors=True)
