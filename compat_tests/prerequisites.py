"""The suite's build step: what the selected tests need built or downloaded, done once per run
before the first test.

A first run on a new machine downloads the Java and Go clients, Pulsar's pulsar-admin, the
ZooKeeper and BookKeeper jars and the Spark connector, and installs Debian's Chromium; that can
take longer than any one test may. So after collection, and outside every test's timeout, each prerequisite some selected test
needs is built here (Maven's, Go's and Spark's Ivy downloads side by side, as they share no
cache), with a line on the terminal when it starts, every half minute while it
runs, and when it ends. A failed build prints its own error there, once; each test that needs
it then fails with that error's first line.

Registered for the whole suite by the root conftest.py.
"""

from __future__ import annotations

import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest

from compat_tests import toolchains
from compat_tests.browser import install_chromium
from compat_tests.broker import REPO_ROOT
from compat_tests.toolchains import BuildError, Say

_TERMINAL = threading.Lock()


@dataclass
class Prerequisite:
    """One build or download, wanted by the tests that use `fixture` (or carry `marker`); the
    builds of one `lane` share a cache (Maven's local repository is not safe for two at once),
    so they run one after another."""
    name: str
    build: Callable[[Say], Any]
    fixture: str = ""
    marker: str = ""
    lane: str = "maven"
    value: Any = None
    error: str = ""
    done: bool = False

    def wanted_by(self, item: pytest.Item) -> bool:
        return (self.fixture in getattr(item, "fixturenames", ())
                or bool(self.marker and item.get_closest_marker(self.marker)))

    def prepare(self, say: Say) -> None:
        if self.done:
            return
        say(f"{self.name}: starting")
        started = time.monotonic()
        try:
            self.value = self.build(say)
        except (BuildError, OSError) as exc:
            self.error = str(exc)
            say(f"{self.name}: FAILED after {time.monotonic() - started:.0f} s:\n{self.error}")
        else:
            say(f"{self.name}: ready in {time.monotonic() - started:.0f} s")
        self.done = True

    def result(self, config: pytest.Config) -> Any:
        """The build's value; a failed build fails the test that asked."""
        self.prepare(terminal_say(config))
        if self.error:
            pytest.fail(f"{self.name} failed to build: {self.error.splitlines()[0]} "
                        f"(the build's output is printed once, above the first test)", pytrace=False)
        return self.value


def _cluster_jars(say: Say) -> Path:
    from bookkeeper.cluster_kit import ToolchainError, ensure_jars
    try:
        return ensure_jars(say)
    except ToolchainError as exc:
        raise BuildError(str(exc)) from exc


def _spark_connector(say: Say) -> str:
    """Let Spark's own Ivy resolution fetch the connector (in a throwaway Spark), unless cached."""
    from spark.session import cached_jar, connector
    source = connector()
    if source.endswith(".jar") or cached_jar(source).exists():
        return source
    say(f"Spark connector: resolving {source} from Maven Central (first run: ~36 MB)")
    toolchains.run_build(
        [sys.executable, "-c", "from spark.session import pulsar_session; pulsar_session('resolve').stop()"],
        REPO_ROOT, "Spark connector", say)
    return source


PREREQUISITES = [
    Prerequisite("Go programs", toolchains.build_go, fixture="go_binaries", lane="go"),
    Prerequisite("Java scenarios", toolchains.build_java, fixture="java_command"),
    Prerequisite("Java admin scenarios", toolchains.build_admin_java, fixture="admin_java_classpath"),
    Prerequisite("pulsar-admin", toolchains.build_pulsar_admin_cli, fixture="pulsar_admin_classpath"),
    Prerequisite("ZooKeeper and BookKeeper jars", _cluster_jars, marker="cluster"),
    Prerequisite("Spark connector", _spark_connector, fixture="spark", lane="ivy"),
    Prerequisite("Chromium", install_chromium, fixture="chromium", lane="apt"),
]


def prerequisite(name: str) -> Prerequisite:
    return next(found for found in PREREQUISITES if found.name == name)


def terminal_say(config: pytest.Config, prefix: str = "[build]") -> Say:
    """A line on the terminal, even while pytest captures the tests' output."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")

    def say(message: str) -> None:
        if reporter is None:
            return
        with _TERMINAL:
            if capture is None:
                reporter.write_line(f"{prefix} {message}")
                return
            with capture.global_and_fixture_disabled():
                reporter.ensure_newline()
                reporter.write_line(f"{prefix} {message}")
    return say


def pytest_collection_finish(session: pytest.Session) -> None:
    if session.config.option.collectonly:
        return
    say = terminal_say(session.config)
    lanes: dict[str, list[Prerequisite]] = {}
    for wanted in PREREQUISITES:
        if any(wanted.wanted_by(item) for item in session.items):
            lanes.setdefault(wanted.lane, []).append(wanted)

    def build_lane(lane: list[Prerequisite]) -> None:
        for wanted in lane:
            wanted.prepare(say)

    with ThreadPoolExecutor(max(1, len(lanes))) as pool:
        list(pool.map(build_lane, lanes.values()))   # re-raises what no build expected


@pytest.fixture(scope="session")
def java_command(pytestconfig) -> list[str]:
    """`java -cp ...` for compat_tests/java."""
    return prerequisite("Java scenarios").result(pytestconfig)


@pytest.fixture(scope="session")
def admin_java_classpath(pytestconfig) -> str:
    """Classpath of compat_tests/admin_java (the official admin client)."""
    return prerequisite("Java admin scenarios").result(pytestconfig)


@pytest.fixture(scope="session")
def pulsar_admin_classpath(pytestconfig) -> str:
    """Classpath of Pulsar's own pulsar-admin CLI (compat_tests/pulsar_admin_cli)."""
    return prerequisite("pulsar-admin").result(pytestconfig)


@pytest.fixture(scope="session")
def chromium(pytestconfig):
    """Debian's Chromium and chromedriver (compat_tests/browser.py), for the console's tests."""
    return prerequisite("Chromium").result(pytestconfig)


@pytest.fixture(scope="session")
def go_binaries(pytestconfig):
    """(scenario test binary, cross-client program) of compat_tests/go."""
    return prerequisite("Go programs").result(pytestconfig)
