"""A message produced by one official client is consumed intact by the others.

Python, Java and Go each produce the same message set (keys, properties, event times, binary
payloads) in batches of 4, once per compression codec; every other client consumes it, and each
(producer, consumer, codec) pair is one test comparing the exact messages, their order and the
batch layout (batch index of each message).
"""

from __future__ import annotations

import base64
import subprocess
from dataclasses import dataclass

import pulsar
import pytest

from compat_tests.conftest import CLIENT_OPERATION_TIMEOUT_S
from compat_tests.helpers import receive_n, subscribe_earliest, unique_topic
from compat_tests.toolchains import tail

CLIENTS = ("python", "java", "go")
CODECS = ("LZ4", "ZLIB", "ZSTD", "SNAPPY")
MESSAGES = 10
BATCH_SIZE = 4
EVENT_TIME_BASE = 1_700_000_000_000
PROGRAM_TIMEOUT_S = 120
PYTHON_CODECS = {"LZ4": pulsar.CompressionType.LZ4, "ZLIB": pulsar.CompressionType.ZLib,
                 "ZSTD": pulsar.CompressionType.ZSTD, "SNAPPY": pulsar.CompressionType.SNAPPY}


@dataclass(frozen=True)
class Received:
    payload: bytes
    key: str
    event_time: int
    batch_index: int
    properties: tuple[tuple[str, str], ...]


def cross_messages(origin: str) -> list[Received]:
    """The shared set: message i is "ORIGIN-i:" + bytes(i, 0, 255, 128), key "key-(i%3)"; batches of 4."""
    return [Received(payload=f"{origin}-{i}:".encode() + bytes([i, 0, 255, 128]), key=f"key-{i % 3}",
                     event_time=EVENT_TIME_BASE + i, batch_index=i % BATCH_SIZE,
                     properties=(("i", str(i)), ("origin", origin)))
            for i in range(MESSAGES)]


def topic_of(origin: str, codec: str, run: str) -> str:
    return f"persistent://public/default/cross-{run}-{origin}-{codec.lower()}"


# -- Python side -------------------------------------------------------------------------------
def python_produce(client: pulsar.Client, topic: str, origin: str, codec: str) -> None:
    producer = client.create_producer(
        topic, compression_type=PYTHON_CODECS[codec], batching_enabled=True,
        batching_max_messages=BATCH_SIZE, batching_max_publish_delay_ms=1000)
    failures = []
    for expected in cross_messages(origin):
        producer.send_async(expected.payload, lambda result, _id: failures.append(result)
                            if result != pulsar.Result.Ok else None,
                            partition_key=expected.key, properties=dict(expected.properties),
                            event_timestamp=expected.event_time)
    producer.flush()
    producer.close()
    assert not failures, f"python sends failed: {failures}"


def python_consume(client: pulsar.Client, topic: str) -> list[Received]:
    consumer = subscribe_earliest(client, topic, "cross-python")
    try:
        return [Received(m.data(), m.partition_key(), m.event_timestamp(), m.message_id().batch_index(),
                         tuple(sorted(m.properties().items())))
                for m in receive_n(consumer, MESSAGES, ack=True)]
    finally:
        consumer.close()


# -- Java and Go programs: the same command line, MSG lines back --------------------------------
def run_cross_program(cmd: list[str]) -> dict[str, list[Received]]:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=PROGRAM_TIMEOUT_S)
    assert done.returncode == 0, f"{cmd[0]} cross-client run failed ({done.returncode}):\n" \
                                 f"{tail(done.stdout)}\n{tail(done.stderr)}"
    received: dict[str, list[Received]] = {}
    for line in done.stdout.splitlines():
        fields = line.split("\t")
        if fields[0] == "MSG":
            _, topic, payload, key, event_time, batch_index, props = fields
            properties = tuple(tuple(p.split("=", 1)) for p in props.split(",") if p)
            received.setdefault(topic, []).append(Received(
                base64.b64decode(payload), key, int(event_time), int(batch_index), properties))
    return received


def program_args(produce: list[tuple[str, str, str]], consume: list[str]) -> list[str]:
    args = [a for topic, origin, codec in produce for a in ("produce", topic, origin, codec)]
    return args + [a for topic in consume for a in ("consume", topic, str(MESSAGES))]


@pytest.fixture(scope="module")
def cross_run(broker, java_command, go_binaries):
    """Every client produces every codec's topic; then every client consumes the others' topics."""
    run = unique_topic("x")
    own = {origin: [(topic_of(origin, codec, run), origin, codec) for codec in CODECS] for origin in CLIENTS}
    others = {c: [topic_of(o, codec, run) for o in CLIENTS if o != c for codec in CODECS] for c in CLIENTS}
    client = pulsar.Client(broker.service_url, operation_timeout_seconds=CLIENT_OPERATION_TIMEOUT_S,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    try:
        return run, exchange(client, run, own, others, java_command, go_binaries, broker)
    finally:
        client.close()


def exchange(client, run, own, others, java_command, go_binaries, broker) -> dict:
    for topic, origin, codec in own["python"]:
        python_produce(client, topic, origin, codec)
    java = [*java_command, "pulsard.compat.CrossClient", broker.service_url]
    go = [str(go_binaries[1]), broker.service_url]
    run_cross_program(java + program_args(own["java"], []))
    run_cross_program(go + program_args(own["go"], []))
    return {
        "java": run_cross_program(java + program_args([], others["java"])),
        "go": run_cross_program(go + program_args([], others["go"])),
        "python": {topic: python_consume(client, topic) for topic in others["python"]},
    }


@pytest.mark.timeout(4 * PROGRAM_TIMEOUT_S)
@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("producer,consumer", [(p, c) for p in CLIENTS for c in CLIENTS if p != c])
def test_cross_client(producer, consumer, codec, cross_run, broker):
    run, received = cross_run
    got = received[consumer].get(topic_of(producer, codec, run), [])
    assert got == cross_messages(producer), \
        f"{consumer} consuming {producer}'s {codec} batches:\n got {got}\n expected {cross_messages(producer)}"
