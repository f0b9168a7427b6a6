"""Fixtures: real pulsard processes on free loopback ports, and official Python clients on them.

- ``broker``: one broker per test module (default config), shared by its tests.
- ``fresh_broker``: a broker of the test's own, for tests that kill -9 and restart it.
- ``partitioned_broker`` / ``small_message_broker`` / ``small_ledger_broker``: module brokers
  started with a config file.
- ``make_broker(config)``: a broker of the test's own with a config file.
- ``connect(broker)``: a pulsar.Client for any of them, closed at teardown; ``client`` = connect(broker).
- ``java_command`` / ``admin_java_classpath`` / ``pulsar_admin_classpath`` / ``go_binaries``: the Java
  and Go scenario programs and Pulsar's pulsar-admin CLI, built before the first test
  (compat_tests/prerequisites.py).

When a test fails, the tails of its brokers' logs are added to the report.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pulsar
import pytest

from compat_tests.broker import READY_TIMEOUT_S, Broker, BrokerError
from bookkeeper.tests.cluster_fixture import (  # noqa: F401  (the session cluster, its teardown hook)
    cluster, pytest_runtest_teardown)

CLIENT_OPERATION_TIMEOUT_S = 10
PARTITIONED_CONFIG = {"allowAutoTopicCreationType": "partitioned", "defaultNumPartitions": 3}
SMALL_MESSAGE_CONFIG = {"maxMessageSize": 102400}
SMALL_LEDGER_CONFIG = {"managedLedgerMaxEntriesPerLedger": 4, "managedLedgerMinLedgerRolloverTimeMinutes": 0}


def _start(work_dir: Path, config: dict | None = None) -> Broker:
    broker = Broker(work_dir, config)
    try:
        return broker.start()
    except BrokerError as exc:
        failure = f"pulsard did not come up: {exc}"
    pytest.fail(failure, pytrace=False)


def _broker_fixture(tmp_path_factory: pytest.TempPathFactory, name: str, config: dict | None = None):
    """Body of a broker fixture (any scope): start in a new temp dir; at teardown stop it and
    remove its data (its log stays, within pytest's retention of the last temp dirs)."""
    broker = _start(tmp_path_factory.mktemp(name), config)
    try:
        yield broker
    finally:
        broker.stop()
        shutil.rmtree(broker.data_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    yield from _broker_fixture(tmp_path_factory, "broker")


@pytest.fixture(scope="module")
def partitioned_broker(tmp_path_factory):
    yield from _broker_fixture(tmp_path_factory, "partitioned", PARTITIONED_CONFIG)


@pytest.fixture(scope="module")
def small_message_broker(tmp_path_factory):
    yield from _broker_fixture(tmp_path_factory, "small-msg", SMALL_MESSAGE_CONFIG)


@pytest.fixture(scope="module")
def small_ledger_broker(tmp_path_factory):
    """Ledgers roll over every 4 entries (internalStats across several ledgers)."""
    yield from _broker_fixture(tmp_path_factory, "small-ledger", SMALL_LEDGER_CONFIG)


@pytest.fixture
def fresh_broker(tmp_path_factory):
    yield from _broker_fixture(tmp_path_factory, "fresh")


@pytest.fixture
def make_broker(tmp_path):
    """make_broker(config) -> a broker of the test's own with that config."""
    brokers: list[Broker] = []

    def _make(config: dict) -> Broker:
        work_dir = tmp_path / f"broker-{len(brokers)}"
        work_dir.mkdir()
        broker = Broker(work_dir, config)
        brokers.append(broker)
        try:
            return broker.start()
        except BrokerError as exc:
            failure = f"pulsard did not come up: {exc}"
        pytest.fail(failure, pytrace=False)

    yield _make
    for broker in brokers:
        broker.stop()


@pytest.fixture
def connect():
    """connect(broker) -> a new pulsar.Client on that broker; all closed at teardown."""
    clients: list[pulsar.Client] = []

    def _connect(broker: Broker) -> pulsar.Client:
        client = pulsar.Client(
            broker.service_url,
            operation_timeout_seconds=CLIENT_OPERATION_TIMEOUT_S,
            logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn),   # captured by pytest
        )
        clients.append(client)
        return client

    yield _connect
    for client in clients:
        try:
            client.close()
        except pulsar.PulsarException:
            pass  # already closed by the test, or its broker is gone


@pytest.fixture
def client(broker, connect) -> pulsar.Client:
    return connect(broker)


# -- marks: every test here is `compat` (deselect with -m "not compat"), with a tighter timeout --
COMPAT_TEST_TIMEOUT_S = 45 + READY_TIMEOUT_S   # a test may have to start its broker first


def pytest_configure(config):
    config.addinivalue_line("markers", "compat: drives official Pulsar clients against a real pulsard")


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    for item in items:
        if here not in Path(item.fspath).parents:
            continue
        item.add_marker(pytest.mark.compat)
        if item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(COMPAT_TEST_TIMEOUT_S))


# -- broker logs in the report of a failed test (the client's own log is in its captured output) --
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not report.failed:
        return
    for name, value in getattr(item, "funcargs", {}).items():
        if isinstance(value, Broker):
            report.sections.append((f"pulsard log ({name}, {value.log_path})", value.log_tail()))
