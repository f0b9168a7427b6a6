"""A missing toolchain fails the Java / Go tests with a clear message; it never skips them."""

from __future__ import annotations

import pytest

from compat_tests.toolchains import ScenarioReport, build_go, build_java


@pytest.mark.parametrize("build,tools", [(build_java, "java, mvn"), (build_go, "go")])
def test_missing_toolchain_is_a_failure_with_a_message(build, tools, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(pytest.fail.Exception, match=f"toolchain missing from PATH: {tools}"):
        build()


def test_report_parses_results_and_details():
    report = ScenarioReport.parse("noise\nRESULT a PASS\nRESULT b FAIL\nDETAIL b boom\nDETAIL b   at X\n")
    report.assert_passed("a")
    with pytest.raises(AssertionError, match="scenario b failed:\nboom\n  at X"):
        report.assert_passed("b")
    with pytest.raises(AssertionError, match="scenario c reported no result"):
        report.assert_passed("c")
