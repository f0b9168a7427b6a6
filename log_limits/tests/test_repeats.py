"""RepeatLimitedLog: one line per key per interval, the held-back count on the next line."""

from __future__ import annotations

import logging

import pytest

from log_limits import repeats
from log_limits.repeats import RepeatLimitedLog


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def log(clock: Clock) -> RepeatLimitedLog:
    return RepeatLimitedLog(logging.getLogger("repeats-test"), interval_s=10.0, clock=clock)


def lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records]


def test_repeats_of_a_key_within_the_interval_are_held_back_and_counted(log, clock, caplog):
    for i in range(500):
        log.warning("down", "append to %s failed", f"topic-{i}")
    clock.now += 10.0
    log.warning("down", "append to %s failed", "topic-x")
    assert lines(caplog) == ["append to topic-0 failed",
                             "append to topic-x failed (and 499 more like it in the 10 s before)"]


def test_distinct_keys_each_get_their_line(log, caplog):
    log.error("no bookies", "rollover failed")
    log.error("fenced", "rollover failed: fenced")
    log.error("no bookies", "rollover failed")
    assert lines(caplog) == ["rollover failed", "rollover failed: fenced"]
    assert [record.levelno for record in caplog.records] == [logging.ERROR, logging.ERROR]


def test_a_key_quiet_for_an_interval_logs_plainly_again(log, clock, caplog):
    log.warning("k", "once")
    clock.now += 30.0
    log.warning("k", "twice")
    assert lines(caplog) == ["once", "twice"]


def test_exc_info_reaches_the_record(log, caplog):
    error = ValueError("bug")
    log.error(ValueError, "request failed", exc_info=error)
    assert caplog.records[0].exc_info[1] is error


def test_a_disabled_level_is_neither_written_nor_counted(log, caplog):
    caplog.set_level(logging.ERROR, logger="repeats-test")
    log.warning("k", "quiet")
    caplog.set_level(logging.WARNING, logger="repeats-test")
    log.warning("k", "heard")
    assert lines(caplog) == ["heard"]


def test_memory_is_bounded_by_forgetting_the_oldest_keys(log, monkeypatch):
    monkeypatch.setattr(repeats, "MAX_KEYS", 4)
    for key in range(10):
        log.warning(key, "line")
    assert len(log._logged) == 4


def test_a_filter_drops_a_library_s_repeated_lines_and_counts_them(clock, caplog):
    library = logging.getLogger("repeats-test.library")
    library.addFilter(repeats.RepeatFilter(interval_s=10.0, clock=clock))
    with caplog.at_level(logging.INFO, logger="repeats-test.library"):
        for _ in range(5):
            library.warning("Connection dropped: %s", "refused")
        library.warning("Connecting to %s", "zk")
        clock.now += 11
        library.warning("Connection dropped: %s", "refused")
    assert [r.getMessage() for r in caplog.records] == [
        "Connection dropped: refused", "Connecting to zk",
        "Connection dropped: refused (and 4 more like it in the 11 s before)"]
