"""Disk full: producers get SEND_ERROR PersistenceError (the client holds and resends), nothing
already stored is damaged, and service resumes once space returns, every message exactly once
and in order.

The broker's data lives on a small tmpfs mounted for this test (needs root and mount(8); the
test is skipped with the reason otherwise) and filled up with a filler file."""

from __future__ import annotations

import errno
import os
import subprocess
import time
from pathlib import Path

import pulsar
import pytest

from compat_tests.broker import Broker
from compat_tests.helpers import (
    AsyncSends, data_of, expect_nothing, read_all, receive_n, send_all, subscribe_earliest, unique_topic,
)

BODY = 100_000


@pytest.fixture
def small_disk(tmp_path: Path):
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", str(mount_point)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount_point
    finally:
        log = mount_point / "broker.log"
        if log.exists():   # keep the broker's log beside the test's other files
            (tmp_path / "broker.log").write_bytes(log.read_bytes())
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def fill(mount_point: Path) -> Path:
    """Take every free byte of the file system."""
    filler = mount_point / "filler"
    with open(filler, "wb") as f:
        try:
            while True:
                f.write(b"\0" * 1024 * 1024)
                f.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    return filler


def test_disk_full_holds_producers_and_service_resumes(small_disk, connect):
    broker = Broker(small_disk, {"journalMaxSizeMB": 8, "defaultRetentionTimeInMinutes": -1,
                                 "defaultRetentionSizeInMB": -1}).start()   # the restart check reads it all
    try:
        client = connect(broker)
        topic = unique_topic("full")
        consumer = subscribe_earliest(client, topic)
        producer = client.create_producer(topic, batching_enabled=False, send_timeout_millis=60_000)
        before = [b"before-%d" % i for i in range(3)]
        send_all(producer, before)
        filler = fill(small_disk)
        held = [(b"held-%03d-" % i).ljust(BODY, b".") for i in range(60)]    # 6 MB: past any preallocation
        sends = AsyncSends()
        for i, body in enumerate(held):
            producer.send_async(body, sends.callback_for(i))
        deadline = time.monotonic() + 20
        while b"journal write failed" not in broker.log_path.read_bytes():
            assert time.monotonic() < deadline, "the broker never hit the full disk"
            time.sleep(0.2)
        assert len(sends.results) < len(held)             # held, not all stored
        filler.unlink()                                   # space returns
        results = sends.wait(len(held), timeout_s=45)
        assert [r for _, r, _ in results] == [pulsar.Result.Ok] * len(held)
        assert data_of(receive_n(consumer, 3 + len(held), ack=True)) == before + held
        expect_nothing(consumer)
        client.close()
        broker.restart()
        reader = connect(broker).create_reader(topic, pulsar.MessageId.earliest)
        assert data_of(receive_n(reader, 3 + len(held))) == before + held
    finally:
        broker.stop()


def drain(consumer) -> list[bytes]:
    """Every message delivered until none comes for a while."""
    received = []
    while True:
        try:
            received.append(consumer.receive(timeout_millis=2000).data())
        except pulsar.Timeout:
            return received


def test_kill9_while_the_disk_is_full_loses_nothing_receipted(small_disk, connect):
    """The full disk also fails metadata writes: ledger rollovers (a ledger every 5 entries) and
    cursor flushes. kill -9 while it is full, free the space, restart: every receipted message
    is there once and in order, and nothing unacknowledged is skipped."""
    broker = Broker(small_disk, {"journalMaxSizeMB": 8, "defaultRetentionTimeInMinutes": -1,
                                 "defaultRetentionSizeInMB": -1, "managedLedgerMaxEntriesPerLedger": 5,
                                 "managedLedgerMinLedgerRolloverTimeMinutes": 0,
                                 # journal room zero-filled ahead: the metadata writes fail first, and
                                 # their error still fits the log (on the same full disk)
                                 "journalPreAllocSizeMB": 4}).start()
    try:
        client = connect(broker)
        topic = unique_topic("full-kill")
        consumer = subscribe_earliest(client, topic)
        producer = client.create_producer(topic, batching_enabled=False, send_timeout_millis=60_000)
        stored = [b"stored-%02d" % i for i in range(20)]
        send_all(producer, stored)
        receive_n(consumer, 10, ack=True)
        filler = fill(small_disk)
        held = [(b"held-%03d-" % i).ljust(BODY, b".") for i in range(60)]
        sends = AsyncSends()
        for i, body in enumerate(held):
            producer.send_async(body, sends.callback_for(i))
        receive_n(consumer, 10, ack=True)               # cursor updates that cannot be written
        deadline = time.monotonic() + 20
        while b"disk is full" not in broker.log_path.read_bytes():   # SQLite's words
            assert time.monotonic() < deadline, "the broker never hit the full disk"
            time.sleep(0.2)
        receipted = [held[i] for i, result, _ in list(sends.results) if result == pulsar.Result.Ok]
        broker.kill9()
        client.close()
        filler.unlink()

        broker.start()
        client = connect(broker)
        everything = read_all(client, topic)
        assert everything[:20] == stored
        assert [m for m in everything[20:] if m in receipted] == sorted(receipted)
        assert len(set(everything)) == len(everything)
        redelivered = drain(subscribe_earliest(client, topic))
        assert redelivered == everything[len(everything) - len(redelivered):]
        assert len(redelivered) >= len(everything) - len(stored)   # every unacknowledged one
    finally:
        broker.stop()
