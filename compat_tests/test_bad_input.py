"""Bad input: oversized messages, garbage and truncated frames on the binary port.

Every bad connection must be closed by the broker within CLOSE_WITHIN_S (recv() returns b""
or the connection is reset), while an official client connected at the same time keeps
producing and consuming.
"""

from __future__ import annotations

import os
import socket
import struct
import time

import pulsar
import pytest

from compat_tests.helpers import (
    data_of, receive_exactly, receive_n, subscribe_earliest, unique_topic,
)
from protocol import pulsar_api_pb2 as pb
from protocol.codec import encode_payload_frame
from protocol.entry import make_entry

CLOSE_WITHIN_S = 5.0
PROTOCOL_VERSION = 21
# BaseCommand.Type values (and the BaseCommand field numbers of their bodies).
CONNECT, CONNECTED, PRODUCER, SUCCESS, CLOSE_PRODUCER, PRODUCER_SUCCESS, PING, PONG = \
    2, 3, 5, 13, 15, 17, 18, 19


# -- a minimal hand-made encoder for the few commands these tests send -------------------------
def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def field(number: int, body: bytes | int) -> bytes:
    """A protobuf field: varint for ints, length-delimited for bytes."""
    if isinstance(body, int):
        return varint(number << 3) + varint(body)
    return varint(number << 3 | 2) + varint(len(body)) + body


def frame(base_command: bytes) -> bytes:
    """A simple command: [u32 total][u32 command size][BaseCommand]."""
    return struct.pack(">II", 4 + len(base_command), len(base_command)) + base_command


def command(kind: int, body: bytes = b"") -> bytes:
    return frame(field(1, kind) + field(kind, body))


CONNECT_FRAME = command(CONNECT, field(1, b"pulsard-compat-raw") + field(4, PROTOCOL_VERSION))
PING_FRAME = command(PING)


def read_frame(sock: socket.socket) -> bytes:
    """One simple command frame from the broker; return its BaseCommand bytes."""
    (total,) = struct.unpack(">I", read_exactly(sock, 4))
    body = read_exactly(sock, total)
    (size,) = struct.unpack(">I", body[:4])
    return body[4:4 + size]


def read_exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        assert chunk, f"connection closed after {len(data)} of {n} bytes"
        data += chunk
    return data


def command_type(base_command: bytes) -> int:
    """BaseCommand.type: field 1, written first."""
    assert base_command[:1] == b"\x08", f"BaseCommand must start with its type: {base_command[:8]!r}"
    return base_command[1]


# -- raw connections ---------------------------------------------------------------------------
def raw_connection(broker, handshake: bool = False) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", broker.broker_port), timeout=CLOSE_WITHIN_S)
    if handshake:
        sock.sendall(CONNECT_FRAME)
        assert command_type(read_frame(sock)) == CONNECTED
    return sock


def assert_closed_by_broker(sock: socket.socket) -> None:
    """Read (and drop, e.g. an ERROR frame) until the broker closes; fail after CLOSE_WITHIN_S."""
    deadline = time.monotonic() + CLOSE_WITHIN_S
    try:
        while time.monotonic() < deadline:
            sock.settimeout(max(0.01, deadline - time.monotonic()))
            if not sock.recv(65536):
                return
    except (ConnectionResetError, BrokenPipeError):
        return
    except socket.timeout:
        pass
    finally:
        sock.close()
    pytest.fail(f"the broker did not close the connection within {CLOSE_WITHIN_S}s")


def send_quietly(sock: socket.socket, data: bytes) -> None:
    """Send what the broker may refuse midway (it is allowed to close early)."""
    try:
        sock.sendall(data)
    except (ConnectionResetError, BrokenPipeError):
        pass


class LiveClient:
    """An official producer and consumer that must keep working while others misbehave."""

    def __init__(self, client: pulsar.Client) -> None:
        topic = unique_topic("live")
        self.consumer = subscribe_earliest(client, topic)
        self.producer = client.create_producer(topic)
        self.sent = 0

    def assert_serving(self) -> None:
        body = f"still-serving-{self.sent}".encode()
        self.sent += 1
        self.producer.send(body)
        assert data_of(receive_n(self.consumer, 1, ack=True)) == [body]


@pytest.fixture
def live(client) -> LiveClient:
    live = LiveClient(client)
    live.assert_serving()
    return live


# -- the cases ---------------------------------------------------------------------------------
GARBAGE = {
    # first byte 0x07: whatever the rest, the length prefix announces ~127 MB
    "noise": bytes((i * 151 + 7) % 256 for i in range(256)),
    "http-request": b"GET /admin/v2/brokers/health HTTP/1.1\r\nHost: x\r\n\r\n",
    "unparsable-command": struct.pack(">II", 12, 8) + b"\xff" * 8,
    "command-size-beyond-frame": struct.pack(">II", 8, 1000) + b"\x08\x02\x00\x00",
    "zero-length-frame": struct.pack(">I", 0) + b"\x00" * 12,
    "oversized-length-prefix": struct.pack(">I", 0x7FFFFFF0) + b"\x00" * 64,
}


@pytest.mark.parametrize("handshake", [False, True], ids=["before-connect", "after-connect"])
@pytest.mark.parametrize("name", list(GARBAGE))
def test_garbage_closes_only_that_connection(broker, live, name, handshake):
    sock = raw_connection(broker, handshake)
    send_quietly(sock, GARBAGE[name])
    assert_closed_by_broker(sock)
    live.assert_serving()
    assert broker.is_running()


@pytest.mark.parametrize("handshake", [False, True], ids=["before-connect", "after-connect"])
def test_truncated_frame_then_eof_closes_that_connection(broker, live, handshake):
    sock = raw_connection(broker, handshake)
    truncated = (PING_FRAME if handshake else CONNECT_FRAME)[:-3]
    send_quietly(sock, struct.pack(">I", 200) + truncated[4:])   # announces more than follows
    sock.shutdown(socket.SHUT_WR)
    assert_closed_by_broker(sock)
    live.assert_serving()


def test_oversized_length_prefix_is_refused_without_waiting_for_the_body(broker, live):
    sock = raw_connection(broker, handshake=True)
    send_quietly(sock, struct.pack(">II", 512 * 1024 * 1024, 16))   # 512 MiB announced, none sent
    assert_closed_by_broker(sock)
    live.assert_serving()


def test_raw_handshake_and_ping_pong(broker, live):
    """Checks the hand-made frames above: a well-formed CONNECT and PING get CONNECTED and PONG."""
    sock = raw_connection(broker, handshake=True)
    try:
        sock.sendall(PING_FRAME)
        assert command_type(read_frame(sock)) == PONG
    finally:
        sock.close()
    live.assert_serving()


def test_many_bad_connections_at_once_leave_the_broker_serving(broker, live):
    socks = [raw_connection(broker) for _ in range(20)]
    for i, sock in enumerate(socks):
        send_quietly(sock, list(GARBAGE.values())[i % len(GARBAGE)])
    for sock in socks:
        assert_closed_by_broker(sock)
    live.assert_serving()


def send_frame(producer_id: int) -> bytes:
    send = pb.BaseCommand(type=pb.BaseCommand.SEND, send=pb.CommandSend(producer_id=producer_id,
                                                                          sequence_id=0))
    entry = make_entry(pb.MessageMetadata(producer_name="p", sequence_id=0, publish_time=1), b"x")
    return b"".join(encode_payload_frame(send, entry))


def test_send_for_a_producer_never_created_closes_that_connection(broker, live):
    sock = raw_connection(broker, handshake=True)
    send_quietly(sock, send_frame(producer_id=7))
    assert_closed_by_broker(sock)
    live.assert_serving()


def test_send_for_a_just_closed_producer_is_dropped(broker, live):
    """A send in flight when its producer closed is no error: Pulsar drops it quietly."""
    topic = f"persistent://public/default/{unique_topic('closed-producer')}"
    sock = raw_connection(broker, handshake=True)
    try:
        sock.sendall(command(PRODUCER, field(1, topic.encode()) + field(2, 1) + field(3, 1)))
        assert command_type(read_frame(sock)) == PRODUCER_SUCCESS
        sock.sendall(command(CLOSE_PRODUCER, field(1, 1) + field(2, 2)))
        assert command_type(read_frame(sock)) == SUCCESS
        sock.sendall(send_frame(producer_id=1) + PING_FRAME)
        assert command_type(read_frame(sock)) == PONG          # no SEND_ERROR, still connected
    finally:
        sock.close()
    live.assert_serving()


# -- message size ------------------------------------------------------------------------------
def test_message_above_max_size_is_refused_and_the_broker_keeps_serving(small_message_broker,
                                                                         connect):
    client = connect(small_message_broker)
    topic = unique_topic()
    consumer = subscribe_earliest(client, topic)
    producer = client.create_producer(topic)   # chunking off (the default)

    with pytest.raises(pulsar.MessageTooBig):
        producer.send(os.urandom(200 * 1024))

    just_below = os.urandom(90 * 1024)
    producer.send(just_below)
    producer.send(b"small")
    receive_exactly(consumer, [just_below, b"small"])


def test_chunked_message_above_max_size_round_trips(small_message_broker, connect):
    client = connect(small_message_broker)
    topic = unique_topic()
    consumer = subscribe_earliest(client, topic)
    producer = client.create_producer(topic, chunking_enabled=True)
    big = os.urandom(300 * 1024)   # about 3 chunks of at most 100 KiB

    producer.send(big)
    producer.send(b"after")

    receive_exactly(consumer, [big, b"after"])
