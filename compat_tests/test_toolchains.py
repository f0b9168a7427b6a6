"""The build step: what tests need is built before the first test, outside every test's timeout,
with progress lines; a missing toolchain or a failed build fails the tests needing it with the
build's own error, printed once (never a skip, never a timeout)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from compat_tests import toolchains
from compat_tests.broker import REPO_ROOT
from compat_tests.toolchains import BuildError, ScenarioReport, build_go, build_java

INNER_CONFTEST = '''
import time

import pytest

from compat_tests.prerequisites import PREREQUISITES, Prerequisite, prerequisite
from compat_tests.toolchains import BuildError

builds = []


def slow(say):
    builds.append("slow")
    time.sleep(3)
    return "built"


def broken(say):
    builds.append("broken")
    raise BuildError("compiler said: boom\\nthe build's last line")


PREREQUISITES[:] = [Prerequisite("slow thing", slow, fixture="slow_thing"),
                    Prerequisite("broken thing", broken, fixture="broken_thing"),
                    Prerequisite("unwanted thing", broken, fixture="unwanted_thing")]


@pytest.fixture(scope="session")
def slow_thing(pytestconfig):
    return prerequisite("slow thing").result(pytestconfig)


@pytest.fixture(scope="session")
def broken_thing(pytestconfig):
    return prerequisite("broken thing").result(pytestconfig)


def pytest_sessionfinish(session):
    print(f"builds run: {builds}")
'''

INNER_TESTS = '''
import pytest


@pytest.mark.timeout(1)
def test_first(slow_thing):
    assert slow_thing == "built"


@pytest.mark.timeout(1)
def test_second(slow_thing):
    assert slow_thing == "built"


def test_needs_broken(broken_thing):
    pass


def test_needs_broken_too(broken_thing):
    pass
'''


@pytest.mark.parametrize("build,tools", [(build_java, "java, mvn"), (build_go, "go")])
def test_missing_toolchain_is_a_build_error_with_a_message(build, tools, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(BuildError, match=f"toolchain missing from PATH: {tools}"):
        build(print)


def test_a_build_says_its_progress_and_fails_with_its_own_output(monkeypatch, tmp_path):
    monkeypatch.setattr(toolchains, "PROGRESS_EVERY_S", 0.2)
    said: list[str] = []
    script = "import sys, time; print('go: downloading example.com/x v1'); time.sleep(0.7); sys.exit('compile error: x.go:3')"
    with pytest.raises(BuildError, match=r"(?s)the build failed \(1\).*compile error: x.go:3"):
        toolchains.run_build([sys.executable, "-c", script], tmp_path, "the build", said.append)
    assert said and all(line.startswith("the build: ") for line in said)
    assert said[-1].endswith("1 downloads so far")


def test_builds_run_once_before_the_first_test_and_a_failure_prints_once(tmp_path):
    (tmp_path / "conftest.py").write_text(INNER_CONFTEST)
    (tmp_path / "test_inner.py").write_text(INNER_TESTS)
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "compat_tests.prerequisites", "-p", "pytest_timeout",
                          "-p", "no:cacheprovider", "-s", "test_inner.py"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    out = run.stdout
    assert "2 passed, 2 errors" in out, out[-4000:]
    assert "builds run: ['slow', 'broken']" in out                       # once each; the unwanted one never
    assert out.count("[build] slow thing: ready in") == 1
    assert out.count("the build's last line") == 1                         # the output, once
    assert out.count("broken thing failed to build: compiler said: boom") >= 2   # each test that needs it
    assert out.index("[build] broken thing: FAILED") < out.index("test_inner.py")


def test_report_parses_results_and_details():
    report = ScenarioReport.parse("noise\nRESULT a PASS\nRESULT b FAIL\nDETAIL b boom\nDETAIL b   at X\n")
    report.assert_passed("a")
    with pytest.raises(AssertionError, match="scenario b failed:\nboom\n  at X"):
        report.assert_passed("b")
    with pytest.raises(AssertionError, match="scenario c reported no result"):
        report.assert_passed("c")
