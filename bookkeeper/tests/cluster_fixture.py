"""One real ZooKeeper + 3 bookies per test session, shared by every cluster test.

Started by the first test that asks for the ``cluster`` fixture, stopped (every process killed,
temporary files removed) after the last test marked ``cluster`` (so the rest of the suite does
not share the machine with idle JVMs), or at the latest when the session ends. The jars are
fetched before the first test (compat_tests/prerequisites.py); a missing java or mvn fails the
tests: they are never skipped. Tests that kill a bookie restart it before they end.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

import pytest

from bookkeeper.cluster_kit import LocalCluster
from compat_tests.prerequisites import prerequisite, terminal_say

_ATTRIBUTE = "_pulsard_cluster"


def shared_cluster(config: pytest.Config) -> LocalCluster:
    found = getattr(config, _ATTRIBUTE, None)
    if isinstance(found, BaseException):
        raise RuntimeError("the test cluster failed to start (see the first failing test)") from found
    if found is not None:
        return found
    prerequisite("ZooKeeper and BookKeeper jars").result(config)
    cluster = LocalCluster(bookies=3, progress=terminal_say(config, "[cluster kit]"))
    config.add_cleanup(cluster.stop)
    try:
        cluster.start()
    except BaseException as exc:
        setattr(config, _ATTRIBUTE, exc)
        raise
    setattr(config, _ATTRIBUTE, cluster)
    return cluster


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """After the last cluster test of the run, stop the cluster (after pytest's own teardown,
    so fixtures using the cluster, like brokers on it, are finalized while it still runs)."""
    if item.get_closest_marker("cluster") is None:
        return
    items = item.session.items
    later = items[items.index(item) + 1:] if item in items else []
    if any(other.get_closest_marker("cluster") for other in later):
        return
    found = getattr(item.config, _ATTRIBUTE, None)
    if isinstance(found, LocalCluster):
        found.stop()
        setattr(item.config, _ATTRIBUTE, None)


@pytest.fixture(scope="session")
def cluster(request: pytest.FixtureRequest) -> LocalCluster:
    return shared_cluster(request.config)


@contextlib.contextmanager
def dedicated_cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
                      **settings: object) -> Iterator[LocalCluster]:
    """A cluster of one test module's own, for tests that kill or restart ZooKeeper or bookies
    beyond repair; its logs stay under pytest's temporary folder."""
    prerequisite("ZooKeeper and BookKeeper jars").result(request.config)
    own = LocalCluster(root=tmp_path_factory.mktemp("cluster"), **settings)   # type: ignore[arg-type]
    try:
        yield own.start()
    finally:
        own.stop()
