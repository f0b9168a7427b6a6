"""Small client-side helpers shared by the compat tests: names, producing, bounded receiving,
running pulsard's commands, reading a topic's metric."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from pathlib import Path

import pulsar

from compat_tests.admin_http import AdminHttp
from compat_tests.broker import REPO_ROOT

# Producer options making batches of exactly 10 messages (closed on count, never on time).
BATCHES_OF_10 = dict(batching_enabled=True, batching_max_messages=10,
                     batching_max_publish_delay_ms=5000)
RECEIVE_TIMEOUT_MS = 5000   # how long one expected message may take to arrive
QUIET_MS = 500              # how long we listen to conclude "nothing more is coming"


def pulsard(*args: str, timeout: float = 60, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`python -m server ARGS` from the repository, as a user runs it; env is added to os.environ."""
    return PulsardStarted(*args, env=env).result(timeout)


class PulsardStarted:
    """`pulsard(ARGS)` started now and awaited later, so that commands which wait out a client
    timeout can wait side by side."""

    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        self.process = subprocess.Popen([sys.executable, "-m", "server", *args], cwd=REPO_ROOT, text=True,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        env=None if env is None else {**os.environ, **env})
        self._finished: subprocess.CompletedProcess | None = None

    def result(self, timeout: float) -> subprocess.CompletedProcess:
        """Its exit code and output, as pulsard() returns them; killed if it overruns timeout."""
        if self._finished is None:
            try:
                stdout, stderr = self.process.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.stop()
                raise
            self._finished = subprocess.CompletedProcess(self.process.args, self.process.returncode, stdout, stderr)
        return self._finished

    def stop(self) -> None:
        """Kill it if still running (a test that never awaited it), and reap it."""
        if self.process.returncode is None:
            self.process.kill()
            self.process.communicate()


def unique_topic(prefix: str = "t") -> str:
    """A short topic name never used before (short form: persistent://public/default/<name>)."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def full_name(topic: str) -> str:
    return topic if "://" in topic else f"persistent://public/default/{topic}"


def payloads(n: int, tag: str = "m") -> list[bytes]:
    return [f"{tag}-{i}".encode() for i in range(n)]


def id_tuple(msg_id) -> tuple[int, int, int, int]:
    """(ledger, entry, partition, batch_index) of a pulsar or _pulsar MessageId."""
    return (msg_id.ledger_id(), msg_id.entry_id(), msg_id.partition(), msg_id.batch_index())


def entry_of(msg_id) -> tuple[int, int]:
    return (msg_id.ledger_id(), msg_id.entry_id())


def subscribe_earliest(client: pulsar.Client, topic, subscription: str = "sub", **options):
    """A consumer whose subscription (if new) starts at the first message of the topic."""
    return client.subscribe(topic, subscription, initial_position=pulsar.InitialPosition.Earliest,
                            **options)


def send_all(producer: pulsar.Producer, contents, **fields) -> list:
    """Synchronous sends; return the message ids the broker receipted."""
    return [producer.send(c, **fields) for c in contents]


class AsyncSends:
    """send_async() a list of messages and collect every callback (result, message id) in order."""

    def __init__(self) -> None:
        self.results: list[tuple[int, object, object]] = []  # (index, result, msg_id)
        self._lock = threading.Lock()
        self._done = threading.Condition(self._lock)

    def callback_for(self, index: int):
        def callback(result, msg_id) -> None:
            with self._done:
                self.results.append((index, result, msg_id))
                self._done.notify_all()
        return callback

    def send(self, producer: pulsar.Producer, contents, fields_for=None) -> "AsyncSends":
        """fields_for(i) -> keyword arguments of send_async for message i (keys, properties...)."""
        for i, content in enumerate(contents):
            producer.send_async(content, self.callback_for(i), **(fields_for(i) if fields_for else {}))
        producer.flush()
        return self

    def wait(self, count: int, timeout_s: float = 15.0) -> list[tuple[int, object, object]]:
        with self._done:
            ok = self._done.wait_for(lambda: len(self.results) >= count, timeout=timeout_s)
            assert ok, f"only {len(self.results)} of {count} send callbacks within {timeout_s}s"
            return list(self.results)


def send_all_async(producer: pulsar.Producer, contents, fields_for=None,
                   timeout_s: float = 15.0) -> list:
    """send_async() everything, flush, and return the receipted ids in send order (all must be Ok)."""
    contents = list(contents)
    results = AsyncSends().send(producer, contents, fields_for).wait(len(contents), timeout_s)
    failures = [(i, r) for i, r, _ in results if r != pulsar.Result.Ok]
    assert not failures, f"send_async failures: {failures[:5]}"
    return [msg_id for _, _, msg_id in sorted(results, key=lambda r: r[0])]


def receive_n(consumer, n: int, timeout_ms: int = RECEIVE_TIMEOUT_MS, ack: bool = False) -> list:
    """Exactly n messages from a Consumer or Reader, each within timeout_ms (else fail)."""
    read = consumer.read_next if isinstance(consumer, pulsar.Reader) else consumer.receive
    got = []
    for _ in range(n):
        try:
            msg = read(timeout_ms)
        except pulsar.Timeout:
            raise AssertionError(
                f"received {len(got)} of {n} messages; then nothing for {timeout_ms} ms; "
                f"got so far: {[short(m.data()) for m in got][:20]}") from None
        got.append(msg)
        if ack:
            consumer.acknowledge(msg)
    return got


def short(data: bytes, limit: int = 40) -> str:
    """A readable summary of a payload for failure messages."""
    text = repr(data[:limit])
    return text if len(data) <= limit else f"{text}... ({len(data)} bytes)"


def data_of(messages) -> list[bytes]:
    return [m.data() for m in messages]


def expect_nothing(consumer, quiet_ms: int = QUIET_MS) -> None:
    """Fail if a Consumer or Reader delivers anything within quiet_ms."""
    read = consumer.read_next if isinstance(consumer, pulsar.Reader) else consumer.receive
    try:
        msg = read(quiet_ms)
    except pulsar.Timeout:
        return
    raise AssertionError(f"unexpected extra message {short(msg.data())} id={id_tuple(msg.message_id())}")


def receive_exactly(consumer, expected, ids=None, timeout_ms: int = RECEIVE_TIMEOUT_MS) -> list:
    """Receive exactly the payloads ``expected``, in order, then nothing more for QUIET_MS.

    With ``ids``, the received message ids (ledger, entry, partition, batch index) must be those.
    """
    expected = list(expected)
    received = receive_n(consumer, len(expected), timeout_ms)
    assert data_of(received) == expected
    if ids is not None:
        assert [id_tuple(m.message_id()) for m in received] == [id_tuple(i) for i in ids]
    expect_nothing(consumer)
    return received


def now_ms() -> int:
    return int(time.time() * 1000)


def assert_round_trip(client: pulsar.Client, topic: str, tag: str = "alive") -> None:
    """A fresh producer and consumer on ``topic`` still exchange a message (the broker serves)."""
    consumer = client.subscribe(topic, f"probe-{uuid.uuid4().hex[:8]}",
                                initial_position=pulsar.InitialPosition.Latest)
    producer = client.create_producer(topic)
    try:
        body = f"{tag}-{uuid.uuid4().hex[:8]}".encode()
        producer.send(body)
        assert data_of(receive_n(consumer, 1)) == [body]
    finally:
        producer.close()
        consumer.close()


def set_namespace_policy(data_dir: Path, namespace: str, *fields: str) -> None:
    """Write namespace policy fields (FIELD=JSON) with the documented CLI; works on a stopped
    broker's data dir and beside a running one."""
    subprocess.run(
        [sys.executable, "-m", "server", "namespace-policies", "set", namespace, *fields,
         "--data-dir", str(data_dir)],
        cwd=REPO_ROOT, check=True, capture_output=True, timeout=30,
    )


def create_namespace(broker, namespace: str, *fields: str) -> None:
    """Make a namespace of an existing tenant as a Pulsar user must before using it (the admin
    API), then set those policy fields (FIELD=JSON) with the CLI beside the running broker."""
    assert AdminHttp(broker.web_url).put(f"/admin/v2/namespaces/{namespace}").status_code == 204
    if fields:
        set_namespace_policy(broker.data_dir, namespace, *fields)


def read_all(client: pulsar.Client, topic: str, quiet_ms: int = QUIET_MS, **reader_options) -> list[bytes]:
    """Every payload a reader from the earliest position gets (until quiet_ms of silence)."""
    reader = client.create_reader(topic, pulsar.MessageId.earliest, **reader_options)
    got = []
    try:
        while True:
            got.append(reader.read_next(quiet_ms).data())
    except pulsar.Timeout:
        return got
    finally:
        reader.close()


def metric(broker, name: str, topic: str) -> float:
    """The value /metrics gives for one topic (0 when it lists none)."""
    with urllib.request.urlopen(f"{broker.web_url}/metrics", timeout=10) as response:
        for line in response.read().decode().splitlines():
            if line.startswith(name + "{") and f'topic="{topic}"' in line:
                return float(line.rsplit(" ", 1)[1])
    return 0.0
