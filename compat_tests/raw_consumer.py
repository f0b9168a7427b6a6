"""A bare protocol consumer for what the Python client cannot ask for: priority levels, and
seeing ACTIVE_CONSUMER_CHANGE. Built on this repository's sans-IO codec; one socket, blocking."""

from __future__ import annotations

import socket
import time

from protocol import pulsar_api_pb2 as pb
from protocol.codec import Frame, FrameDecoder, encode_command

Cmd = pb.BaseCommand
MAX_FRAME = 6 * 1024 * 1024
PROTOCOL_VERSION = 21


class RawConsumer:
    """One connection with one consumer on it; frames read with a bounded wait."""

    def __init__(self, broker, topic: str, subscription: str, sub_type: int, name: str,
                 priority_level: int = 0, durable: bool = True) -> None:
        self.sock = socket.create_connection(("127.0.0.1", broker.broker_port), timeout=5)
        self.decoder = FrameDecoder(MAX_FRAME)
        self.pending: list[Frame] = []   # frames read ahead, returned first by next_frame
        self._send(Cmd(type=Cmd.CONNECT, connect=pb.CommandConnect(
            client_version="pulsard-compat-raw", protocol_version=PROTOCOL_VERSION)))
        self.expect(Cmd.CONNECTED)
        self._subscribe = pb.CommandSubscribe(
            topic=topic, subscription=subscription, subType=sub_type, consumer_id=1, request_id=1,
            consumer_name=name, priority_level=priority_level, initialPosition=pb.CommandSubscribe.Earliest,
            durable=durable)
        self._send(Cmd(type=Cmd.SUBSCRIBE, subscribe=self._subscribe))
        self._await_success()

    def resubscribe(self) -> None:
        """SUBSCRIBE again with the same consumer id, as a client does after CLOSE_CONSUMER."""
        self._subscribe.request_id += 1
        self._send(Cmd(type=Cmd.SUBSCRIBE, subscribe=self._subscribe))
        self._await_success()

    def _await_success(self) -> None:
        """SUCCESS may follow what the subscription sent at once (as in Pulsar, an
        ACTIVE_CONSUMER_CHANGE); those frames are kept for the test to read."""
        early = []
        while (frame := self.next_frame(5.0)) is not None:
            if frame.command.type == Cmd.SUCCESS:
                self.pending = early
                return
            early.append(frame)
        raise AssertionError("no SUCCESS for SUBSCRIBE within 5s")

    def _send(self, command: Cmd) -> None:
        self.sock.sendall(encode_command(command))

    def flow(self, permits: int) -> None:
        self._send(Cmd(type=Cmd.FLOW, flow=pb.CommandFlow(consumer_id=1, messagePermits=permits)))

    def ack_cumulative(self, ledger_id: int, entry_id: int) -> None:
        """Ids go on the wire as uint64, as the clients send them (-1 becomes 2**64-1)."""
        message_id = pb.MessageIdData(ledgerId=ledger_id % (1 << 64), entryId=entry_id % (1 << 64))
        self._send(Cmd(type=Cmd.ACK, ack=pb.CommandAck(
            consumer_id=1, ack_type=pb.CommandAck.Cumulative, message_id=[message_id])))

    def redeliver_unacknowledged(self) -> None:
        """REDELIVER_UNACKNOWLEDGED_MESSAGES for everything, as a client's redeliver call."""
        self._send(Cmd(type=Cmd.REDELIVER_UNACKNOWLEDGED_MESSAGES,
                       redeliverUnacknowledgedMessages=pb.CommandRedeliverUnacknowledgedMessages(consumer_id=1)))

    def sync(self) -> None:
        """PING and wait for PONG: the broker has handled everything sent before (a
        connection's commands are handled in order). Call it before frames are expected."""
        self._send(Cmd(type=Cmd.PING, ping=pb.CommandPing()))
        self.expect(Cmd.PONG)

    def next_frame(self, timeout_s: float) -> Frame | None:
        if self.pending:
            return self.pending.pop(0)
        deadline = time.monotonic() + timeout_s
        while (frame := self.decoder.next_frame()) is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            self.sock.settimeout(remaining)
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                return None
            assert data, "the broker closed the connection"
            self.decoder.receive_data(data)
        return frame

    def expect(self, kind: int, timeout_s: float = 5.0) -> Cmd:
        frame = self.next_frame(timeout_s)
        assert frame is not None, f"no {Cmd.Type.Name(kind)} within {timeout_s}s"
        assert frame.command.type == kind, \
            f"expected {Cmd.Type.Name(kind)}, got {Cmd.Type.Name(frame.command.type)}"
        return frame.command

    def collect(self, kind: int, quiet_s: float = 0.5) -> list[Cmd]:
        """Every frame until quiet_s passes without one; all must be of this kind."""
        commands = []
        while (frame := self.next_frame(quiet_s)) is not None:
            assert frame.command.type == kind, f"unexpected {Cmd.Type.Name(frame.command.type)}"
            commands.append(frame.command)
        return commands

    def close(self) -> None:
        self.sock.close()
