"""A Spark session shared by the module's tests, and pulsard processes from compat_tests."""

from __future__ import annotations

import pytest

from compat_tests.conftest import connect, make_broker  # noqa: F401  (fixtures)
from spark.session import connector, pulsar_session


@pytest.fixture(scope="session")
def spark():
    try:
        session = pulsar_session("pulsard-spark-tests")
        session.sparkContext._jvm.java.lang.Class.forName(
            "org.apache.spark.sql.pulsar.PulsarProvider", True,
            session.sparkContext._jvm.Thread.currentThread().getContextClassLoader())
    except Exception as exc:
        pytest.fail(f"the pulsar-spark connector ({connector()}) is not usable: {exc}")
    yield session
    session.stop()
