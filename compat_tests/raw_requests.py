"""Bare protocol requests for what the official clients cannot send or do not show: each
command's answer on one connection, after CONNECT. Built on this repository's sans-IO codec."""

from __future__ import annotations

import socket

from protocol import pulsar_api_pb2 as pb
from protocol.codec import FrameDecoder, encode_command

Cmd = pb.BaseCommand


def replies(broker, *commands: Cmd) -> list[Cmd]:
    """The broker's answer to each command, sent in order on one bare connection after CONNECT."""
    with socket.create_connection(("127.0.0.1", broker.broker_port), timeout=5) as sock:
        decoder = FrameDecoder(1024 * 1024)

        def call(command: Cmd) -> Cmd:
            sock.sendall(encode_command(command))
            while (frame := decoder.next_frame()) is None:
                decoder.receive_data(sock.recv(65536))
            return frame.command

        connected = call(Cmd(type=Cmd.CONNECT, connect=pb.CommandConnect(client_version="compat",
                                                                           protocol_version=21)))
        assert connected.type == Cmd.CONNECTED
        return [call(command) for command in commands]
