"""A Spark session shared by the module's tests, and pulsard processes from compat_tests."""

from __future__ import annotations

import time

import pytest

from compat_tests.conftest import broker, connect  # noqa: F401  (fixtures)
from compat_tests.prerequisites import prerequisite, terminal_say
from spark.session import pulsar_session


@pytest.fixture(scope="session")
def spark(pytestconfig):
    """The connector is fetched before the first test (compat_tests/prerequisites.py)."""
    source = prerequisite("Spark connector").result(pytestconfig)
    say = terminal_say(pytestconfig, "[spark]")
    started = time.monotonic()
    try:
        session = pulsar_session("pulsard-spark-tests")
        jvm = session.sparkContext._jvm
        jvm.java.lang.Class.forName("org.apache.spark.sql.pulsar.PulsarProvider", True,
                                    jvm.Thread.currentThread().getContextClassLoader())
    except Exception as exc:
        pytest.fail(f"the pulsar-spark connector ({source}) is not usable: {exc}")
    say(f"pyspark {session.version} with the connector, ready in {time.monotonic() - started:.0f} s")
    # The connector leaves a reader open after each startingTime lookup: it warns on and on
    # once its broker stops, after the test that made it.
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
