"""Bare protocol requests for what the official clients cannot send or do not show: each
command's answer on one connection, after CONNECT. Built on this repository's sans-IO codec."""

from __future__ import annotations

import socket
import ssl

from protocol import pulsar_api_pb2 as pb
from protocol.codec import FrameDecoder, encode_command, encode_payload_frame

Cmd = pb.BaseCommand


class RawConnection:
    """One bare connection (TLS when given a client context); `receive()` is None once the
    broker has closed it."""

    def __init__(self, port: int, tls: ssl.SSLContext | None = None) -> None:
        self._sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        if tls is not None:
            self._sock = tls.wrap_socket(self._sock, server_hostname="127.0.0.1")
        self._decoder = FrameDecoder(1024 * 1024)

    def send(self, command: Cmd, entry: bytes | None = None) -> None:
        """A command, or with `entry` a payload command (SEND, MESSAGE) carrying it."""
        self._sock.sendall(encode_command(command) if entry is None else b"".join(encode_payload_frame(command, entry)))

    def receive(self) -> Cmd | None:
        while (frame := self._decoder.next_frame()) is None:
            try:
                data = self._sock.recv(65536)
            except ConnectionResetError:
                return None
            if not data:
                return None
            self._decoder.receive_data(data)
        return frame.command

    def connect(self, connect: pb.CommandConnect) -> Cmd | None:
        self.send(Cmd(type=Cmd.CONNECT, connect=connect))
        return self.receive()

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> "RawConnection":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def replies(broker, *commands: Cmd) -> list[Cmd]:
    """The broker's answer to each command, sent in order on one bare connection after CONNECT."""
    with RawConnection(broker.broker_port) as raw:
        connected = raw.connect(pb.CommandConnect(client_version="compat", protocol_version=21))
        assert connected is not None and connected.type == Cmd.CONNECTED

        def call(command: Cmd) -> Cmd:
            raw.send(command)
            answer = raw.receive()
            assert answer is not None, "connection closed"
            return answer

        return [call(command) for command in commands]
