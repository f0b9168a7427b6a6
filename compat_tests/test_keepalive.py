"""The broker pings a silent client and drops it when no answer comes; answering keeps it."""

from __future__ import annotations

import socket
import time

import pytest

from compat_tests.broker import HOST, Broker
from protocol import pulsar_api_pb2 as pb
from protocol.codec import FrameDecoder, encode_command

INTERVAL_S = 1


@pytest.fixture(scope="module")
def quick_keepalive_broker(tmp_path_factory):
    broker = Broker(tmp_path_factory.mktemp("keepalive"), {"keepAliveIntervalSeconds": INTERVAL_S}).start()
    try:
        yield broker
    finally:
        broker.stop()


def _handshake(broker: Broker) -> socket.socket:
    sock = socket.create_connection((HOST, broker.broker_port), timeout=10)
    connect = pb.BaseCommand(type=pb.BaseCommand.CONNECT)
    connect.connect.client_version = "keepalive-test"
    connect.connect.protocol_version = 21
    sock.sendall(encode_command(connect))
    return sock


def _commands_until_closed(sock: socket.socket, answer_pings: bool, within_s: float) -> tuple[list[int], bool]:
    """Command types received, and whether the broker closed the socket, within a bounded time."""
    decoder = FrameDecoder(1 << 20)
    seen: list[int] = []
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        sock.settimeout(max(0.05, deadline - time.monotonic()))
        try:
            data = sock.recv(65536)
        except socket.timeout:
            break
        except ConnectionResetError:
            return seen, True
        if not data:
            return seen, True
        decoder.receive_data(data)
        while (frame := decoder.next_frame()) is not None:
            seen.append(frame.command.type)
            if answer_pings and frame.command.type == pb.BaseCommand.PING:
                sock.sendall(encode_command(pb.BaseCommand(type=pb.BaseCommand.PONG, pong=pb.CommandPong())))
    return seen, False


def test_silent_client_is_pinged_then_dropped(quick_keepalive_broker):
    with _handshake(quick_keepalive_broker) as sock:
        seen, closed = _commands_until_closed(sock, answer_pings=False, within_s=6 * INTERVAL_S)
    assert seen[0] == pb.BaseCommand.CONNECTED
    assert pb.BaseCommand.PING in seen
    assert closed, "a client that never answers a ping must be disconnected"


def test_client_answering_pings_stays_connected(quick_keepalive_broker):
    with _handshake(quick_keepalive_broker) as sock:
        seen, closed = _commands_until_closed(sock, answer_pings=True, within_s=5 * INTERVAL_S)
    assert not closed
    assert seen.count(pb.BaseCommand.PING) >= 2
