"""Start-up and shutdown never lose what was receipted: operator mistakes at start, and kill -9
during a start-up or during a clean shutdown.

Found by trying pulsard as a user would: a second `pulsard standalone` on a data directory in use
ran beside the first (other ports) or failed on the bind only after opening storage (same
ports), rotating the live journal under the running broker: 300 receipted sends, kill -9,
restart, 0 left. Now the directory is locked before anything is opened, ports are bound before
storage is opened, and a start that fails changes nothing.
"""

from __future__ import annotations

import hashlib
import random
import signal
import socket
import subprocess
import time

import pulsar
import pytest

from compat_tests.broker import HOST, Broker
from compat_tests.helpers import AsyncSends, payloads, read_all, send_all, unique_topic
from compat_tests.test_durability import crash_and_restart

FAILED_START_TIMEOUT_S = 30
LOCK_FILE = "pulsard.lock"


def start_must_fail(broker: Broker) -> str:
    """Run the broker's start command; it must exit non-zero. Return its output."""
    broker.spawn()
    try:
        code = broker.proc.wait(timeout=FAILED_START_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        code = None
    finally:
        broker.kill9()
    output = broker.log_tail(20)
    assert code not in (0, None), f"the start did not fail:\n{output}"
    return output


def on_same_data_dir(first: Broker, work_dir, same_ports: bool) -> Broker:
    work_dir.mkdir()
    second = Broker(work_dir)
    second.data_dir = first.data_dir
    if same_ports:
        second.broker_port, second.web_port = first.broker_port, first.web_port
    return second


def store_digest(data_dir) -> dict[str, str]:
    """Every file of the store (the lock file aside) with a hash of its bytes."""
    return {str(path.relative_to(data_dir)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(data_dir.rglob("*")) if path.is_file() and path.name != LOCK_FILE}


@pytest.mark.parametrize("same_ports", [False, True], ids=["other-ports", "same-ports"])
def test_a_second_broker_on_a_data_dir_in_use_is_refused_and_loses_nothing(
        fresh_broker, connect, tmp_path, same_ports):
    topic = unique_topic()
    client = connect(fresh_broker)
    producer = client.create_producer(topic, batching_enabled=False)
    before = payloads(100, "before")
    send_all(producer, before)

    output = start_must_fail(on_same_data_dir(fresh_broker, tmp_path / "second", same_ports))
    assert f"is in use by another pulsard (pid {fresh_broker.pid})" in output

    after = payloads(300, "after")
    send_all(producer, after)   # sync sends: each one receipted
    crash_and_restart(fresh_broker, client)
    assert read_all(connect(fresh_broker), topic) == before + after


@pytest.mark.parametrize("taken", ["broker-port", "web-port"])
def test_a_start_that_fails_on_a_taken_port_leaves_the_store_untouched(fresh_broker, connect, taken):
    topic = unique_topic()
    contents = payloads(50)
    send_all(connect(fresh_broker).create_producer(topic), contents)
    fresh_broker.stop()
    before = store_digest(fresh_broker.data_dir)

    port = fresh_broker.broker_port if taken == "broker-port" else fresh_broker.web_port
    with socket.create_server((HOST, port)):
        output = start_must_fail(fresh_broker)
    assert store_digest(fresh_broker.data_dir) == before
    assert f"cannot listen on {HOST}:{port}" in output

    fresh_broker.start()
    assert read_all(connect(fresh_broker), topic) == contents


def test_a_killed_broker_never_blocks_the_next_start(fresh_broker, connect):
    """The kernel drops the lock with its holder: kill -9, then a start at once."""
    topic = unique_topic()
    contents = payloads(20)
    client = connect(fresh_broker)
    send_all(client.create_producer(topic), contents)
    crash_and_restart(fresh_broker, client)
    assert (fresh_broker.data_dir / LOCK_FILE).read_text().strip() == str(fresh_broker.pid)
    assert read_all(connect(fresh_broker), topic) == contents


def receipted_in_order(sends: AsyncSends, contents: list[bytes]) -> list[bytes]:
    return [contents[i] for i, result, _ in sorted(sends.results, key=lambda r: r[0])
            if result == pulsar.Result.Ok]


@pytest.mark.parametrize("delay_ms", [0, 10, 40, 150])
def test_kill9_during_a_clean_shutdown_loses_nothing_receipted(fresh_broker, connect, delay_ms):
    """SIGTERM under load, then kill -9 while the broker is still closing."""
    topic = unique_topic()
    client = connect(fresh_broker)
    producer = client.create_producer(topic, batching_enabled=False, send_timeout_millis=5000,
                                      block_if_queue_full=True)
    contents = payloads(3000)
    sends = AsyncSends()
    for i, content in enumerate(contents):
        producer.send_async(content, sends.callback_for(i))
        if i == 1500:
            fresh_broker.proc.send_signal(signal.SIGTERM)
            time.sleep(delay_ms / 1000)
            fresh_broker.kill9()
    sends.wait(len(contents), timeout_s=30)
    client.close()
    receipted = receipted_in_order(sends, contents)

    fresh_broker.start()
    stored = read_all(connect(fresh_broker), topic)
    assert len(set(stored)) == len(stored)
    assert [m for m in stored if m in set(receipted)] == receipted


def test_kill9_during_start_up_replays_again_and_loses_nothing(make_broker, connect):
    """Many receipted messages only in the journal (no checkpoint ran), then kill -9 again and
    again while the broker replays it at start."""
    broker = make_broker({"flushInterval": 3_600_000})
    topic = unique_topic()
    contents = [(b"%05d-" % i).ljust(2000, b".") for i in range(5000)]
    client = connect(broker)
    producer = client.create_producer(topic, batching_enabled=False, block_if_queue_full=True)
    results = AsyncSends().send(producer, contents).wait(len(contents), timeout_s=60)
    assert {result for _, result, _ in results} == {pulsar.Result.Ok}
    broker.kill9()
    client.close()
    rng = random.Random(1124)
    for _ in range(5):
        broker.spawn()
        time.sleep(rng.uniform(0.0, 0.4))
        broker.kill9()
    broker.start()
    assert read_all(connect(broker), topic) == contents
