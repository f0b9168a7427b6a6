"""A scripted stand-in broker for capturing what the official Pulsar client sends.

It listens on a free loopback port, answers with ``protocol.commands`` builders just
enough for the client to connect, look up, produce, subscribe, receive and ack, and
records every byte it receives. Running the official client against it both
captures real frames and checks that our builders satisfy the real client.

``python -m protocol.tests.fake_broker`` rewrites the JSON fixture of captured frames
used by ``test_client_frames.py`` when the client cannot run.
"""

from __future__ import annotations

import json
import socket
import struct
import subprocess
import sys
import threading
from pathlib import Path

from protocol import commands
from protocol import pulsar_api_pb2 as pb
from protocol.codec import Frame, FrameDecoder, ProtocolError, Send, encode_command, encode_payload_frame
from protocol.receipts import SendReceipts

FIXTURE = Path(__file__).parent / "fixtures" / "python_client_frames.json"
LEDGER_ID = 7
MAX_MESSAGE_SIZE = 1024000
_POLL_SECONDS = 0.1
_T = pb.BaseCommand

CLIENT_SCRIPT = r"""
import json, sys
import pulsar

port = int(sys.argv[1])
client = pulsar.Client(
    f"pulsar://127.0.0.1:{port}",
    operation_timeout_seconds=10,
    connection_timeout_ms=5000,
    logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error),
)
result = {}
try:
    topic = "persistent://public/default/capture"
    consumer = client.subscribe(topic, "capture-sub", initial_position=pulsar.InitialPosition.Earliest)
    producer = client.create_producer(topic, producer_name="capture-producer", send_timeout_millis=10000)
    result["plain_id"] = str(producer.send(b"hello", partition_key="k1", properties={"a": "b"}))
    batcher = client.create_producer(topic, batching_enabled=True, batching_max_publish_delay_ms=5000)
    for i in range(3):
        batcher.send_async(f"batch-{i}".encode(), None)
    batcher.flush()
    received = []
    for _ in range(4):
        msg = consumer.receive(timeout_millis=10000)
        received.append([msg.data().decode(), str(msg.message_id())])
        consumer.acknowledge(msg)
    result["received"] = received
    producer.close()
    batcher.close()
    consumer.close()
finally:
    client.close()
print(json.dumps(result))
"""


class FakeBroker:
    """Serve the official client on 127.0.0.1 from threads; use as a context manager."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(_POLL_SECONDS)
        self.port: int = self._listener.getsockname()[1]
        self.url = f"pulsar://127.0.0.1:{self.port}"
        self.streams: list[bytearray] = []  # raw bytes received, one per connection
        self.frames: list[Frame | Send] = []
        self.errors: list[str] = []
        self._entries: list[bytes] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def __enter__(self) -> FakeBroker:
        self._spawn(self._accept_loop)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=5)
        self._listener.close()

    def _spawn(self, target, *args) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _accept_loop(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._spawn(self._serve, conn)

    def _serve(self, conn: socket.socket) -> None:
        stream = bytearray()
        self.streams.append(stream)
        decoder = FrameDecoder(MAX_MESSAGE_SIZE + 10 * 1024)
        delivered: dict[int, int] = {}  # consumer id -> entries already pushed
        conn.settimeout(_POLL_SECONDS)
        with conn:
            while not self._stop.is_set():
                try:
                    data = conn.recv(65536)
                except TimeoutError:
                    continue
                except OSError:
                    return
                if not data:
                    return
                stream += data
                decoder.receive_data(data)
                try:
                    for frame in decoder.next_frames():
                        with self._lock:
                            self.frames.append(frame)
                        for chunk in self._answer(frame, delivered):
                            conn.sendall(chunk)
                except ProtocolError as exc:
                    self.errors.append(str(exc))
                    return

    def _answer(self, frame: Frame | Send, delivered: dict[int, int]) -> list[bytes]:
        if isinstance(frame, Send):
            return self._store(frame, delivered)
        cmd = frame.command
        kind = cmd.type
        if kind == _T.CONNECT:
            version = commands.negotiate_protocol_version(cmd.connect.protocol_version)
            return [encode_command(commands.connected("pulsard-fake", version, MAX_MESSAGE_SIZE))]
        if kind == _T.PARTITIONED_METADATA:
            return [encode_command(commands.partitioned_metadata(cmd.partitionMetadata.request_id, 0))]
        if kind == _T.LOOKUP:
            return [encode_command(commands.lookup_connect(cmd.lookupTopic.request_id, self.url))]
        if kind == _T.PRODUCER:
            body = cmd.producer
            name = body.producer_name or f"fake-{body.producer_id}"
            return [encode_command(commands.producer_success(body.request_id, name))]
        if kind == _T.SUBSCRIBE:
            delivered.setdefault(cmd.subscribe.consumer_id, 0)
            return [encode_command(commands.success(cmd.subscribe.request_id))]
        if kind == _T.FLOW:
            return self._deliver(delivered)
        if kind == _T.ACK and cmd.ack.HasField("request_id"):
            return [encode_command(commands.ack_response(cmd.ack.consumer_id, cmd.ack.request_id))]
        if kind == _T.CLOSE_PRODUCER:
            return [encode_command(commands.success(cmd.close_producer.request_id))]
        if kind == _T.CLOSE_CONSUMER:
            return [encode_command(commands.success(cmd.close_consumer.request_id))]
        if kind == _T.PING:
            return [encode_command(commands.pong())]
        return []

    def _store(self, send: Send, delivered: dict[int, int]) -> list[bytes]:
        if not send.checksum_ok:
            error = commands.send_error(send.producer_id, send.sequence_id, pb.ChecksumError, "bad checksum")
            return [encode_command(error)]
        with self._lock:
            self._entries.append(send.entry)
            entry_id = len(self._entries) - 1
        receipt = SendReceipts(send.producer_id).encode(send.sequence_id, send.highest_sequence_id, LEDGER_ID,
                                                        entry_id)
        return [receipt, *self._deliver(delivered)]

    def _deliver(self, delivered: dict[int, int]) -> list[bytes]:
        chunks: list[bytes] = []
        with self._lock:
            entries = list(self._entries)
        for consumer_id, start in delivered.items():
            for entry_id in range(start, len(entries)):
                header, entry = encode_payload_frame(commands.message(consumer_id, LEDGER_ID, entry_id), entries[entry_id])
                chunks += [header, entry]
            delivered[consumer_id] = len(entries)
        return chunks


def run_client(port: int, timeout: float = 60.0) -> dict:
    """Run the official Python client against ``port`` in a subprocess; return its result."""
    completed = subprocess.run(
        [sys.executable, "-c", CLIENT_SCRIPT, str(port)],
        capture_output=True, text=True, timeout=timeout, check=False,
    )
    if completed.returncode != 0:
        raise RuntimeError(f"client failed ({completed.returncode}):\n{completed.stdout}\n{completed.stderr}")
    return json.loads(completed.stdout.strip().splitlines()[-1])


def split_frames(stream: bytes) -> list[bytes]:
    """Cut a recorded byte stream into whole frames by their size prefixes."""
    frames = []
    offset = 0
    while offset + 4 <= len(stream):
        (total,) = struct.unpack_from(">I", stream, offset)
        frames.append(bytes(stream[offset:offset + 4 + total]))
        offset += 4 + total
    return frames


def capture() -> tuple[FakeBroker, dict]:
    """One full client session against a fresh fake broker."""
    with FakeBroker() as broker:
        result = run_client(broker.port)
    return broker, result


def write_fixture() -> None:
    """Record the first frame of each command type the client sent."""
    broker, result = capture()
    frames: dict[str, str] = {}
    for stream in broker.streams:
        for raw in split_frames(bytes(stream)):
            decoder = FrameDecoder(len(raw))
            decoder.receive_data(raw)
            (frame,) = decoder.next_frames()
            if isinstance(frame, Send):
                kind = "SEND_BATCH" if frame.num_messages > 1 else "SEND"
            else:
                kind = _T.Type.Name(frame.command.type)
            frames.setdefault(kind, raw.hex())
    import pulsar  # only to name the client version in the fixture

    fixture = {
        "client": f"pulsar-client {pulsar.__version__}",
        "client_result": result,
        "frames": frames,
    }
    FIXTURE.parent.mkdir(exist_ok=True)
    FIXTURE.write_text(json.dumps(fixture, indent=2) + "\n")


if __name__ == "__main__":
    write_fixture()
