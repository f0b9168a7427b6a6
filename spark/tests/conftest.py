"""A Spark session shared by the module's tests, and pulsard processes from compat_tests."""

from __future__ import annotations

import time

import pytest

from compat_tests.conftest import broker, connect  # noqa: F401  (fixtures)
from spark.session import IVY_JARS, cached_jar, connector, pulsar_session

#: What the first resolution of the pinned connector fetches from Maven Central.
FIRST_DOWNLOAD = "~36 MB"


def _announce(config: pytest.Config, line: str) -> None:
    """To the terminal even while pytest captures output: a slow first run says why."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            reporter.ensure_newline()
            reporter.write_line(line)


@pytest.fixture(scope="session")
def spark(pytestconfig):
    source = connector()
    if source.endswith(".jar"):
        _announce(pytestconfig, f"spark: connector jar {source}")
    elif cached_jar(source).exists():
        _announce(pytestconfig, f"spark: connector {source} (cached in {IVY_JARS})")
    else:
        _announce(pytestconfig, f"spark: resolving connector {source} from Maven Central into "
                                f"{IVY_JARS} (first run downloads {FIRST_DOWNLOAD})")
    started = time.monotonic()
    try:
        session = pulsar_session("pulsard-spark-tests")
        jvm = session.sparkContext._jvm
        jvm.java.lang.Class.forName("org.apache.spark.sql.pulsar.PulsarProvider", True,
                                    jvm.Thread.currentThread().getContextClassLoader())
    except Exception as exc:
        pytest.fail(f"the pulsar-spark connector ({source}) is not usable: {exc}")
    _announce(pytestconfig, f"spark: pyspark {session.version} with the connector, "
                            f"ready in {time.monotonic() - started:.0f} s")
    # The connector leaves a reader open after each startingTime lookup: it warns on and on
    # once its broker stops, after the test that made it.
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
