"""One bad client never hurts a topic, the broker or its memory (issue 13).

Raw frames from this repository's codec play the bad client; the official Python client plays
the legitimate one, which must keep being served.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import urllib.request

import crc32c
import pulsar

from compat_tests.helpers import data_of, full_name, receive_n, subscribe_earliest, unique_topic
from compat_tests.raw_consumer import PROTOCOL_VERSION
from managed_ledger.config import StorageConfig
from managed_ledger.factory import open_factory
from protocol import pulsar_api_pb2 as pb
from protocol.codec import FrameDecoder, encode_command, encode_payload_frame
from protocol.entry import make_entry

Cmd = pb.BaseCommand
#: A checksummed entry whose MessageMetadata (5 bytes of 0xff) does not parse.
UNREADABLE_BODY = struct.pack(">I", 5) + b"\xff" * 5 + b"payload"
UNREADABLE_ENTRY = struct.pack(">HI", 0x0E01, crc32c.crc32c(UNREADABLE_BODY)) + UNREADABLE_BODY


class RawClient:
    """One blocking socket after CONNECT; frames in and out through the sans-IO codec."""

    def __init__(self, broker) -> None:
        self.sock = socket.create_connection(("127.0.0.1", broker.broker_port), timeout=10)
        self.decoder = FrameDecoder(64 * 1024 * 1024)
        self.send(Cmd(type=Cmd.CONNECT, connect=pb.CommandConnect(
            client_version="pulsard-hostile", protocol_version=PROTOCOL_VERSION)))
        assert self.next().type == Cmd.CONNECTED

    def send(self, command: Cmd, entry: bytes | None = None) -> None:
        data = encode_command(command) if entry is None else b"".join(encode_payload_frame(command, entry))
        self.sock.sendall(data)

    def next(self) -> Cmd:
        while (frame := self.decoder.next_frame()) is None:
            data = self.sock.recv(65536)
            assert data, "the broker closed the connection"
            self.decoder.receive_data(data)
        return frame.command

    def create_producer(self, topic: str, producer_id: int = 1) -> None:
        self.send(Cmd(type=Cmd.PRODUCER, producer=pb.CommandProducer(
            topic=topic, producer_id=producer_id, request_id=producer_id)))
        assert self.next().type == Cmd.PRODUCER_SUCCESS

    def close(self) -> None:
        self.sock.close()


def metric(broker, name: str, topic: str) -> float:
    with urllib.request.urlopen(f"{broker.web_url}/metrics", timeout=10) as response:
        for line in response.read().decode().splitlines():
            if line.startswith(name + "{") and f'topic="{topic}"' in line:
                return float(line.rsplit(" ", 1)[1])
    return 0.0


# -- 1. poisoned topics ---------------------------------------------------------------------------
def test_send_with_unparsable_metadata_is_refused_and_not_stored(broker, client):
    topic = full_name(unique_topic("poison"))
    consumer = subscribe_earliest(client, topic)
    raw = RawClient(broker)
    try:
        raw.create_producer(topic)
        raw.send(Cmd(type=Cmd.SEND, send=pb.CommandSend(producer_id=1, sequence_id=0)), UNREADABLE_ENTRY)
        answer = raw.next()
        assert answer.type == Cmd.SEND_ERROR and answer.send_error.error == pb.ChecksumError
        good = make_entry(pb.MessageMetadata(producer_name="raw", sequence_id=1, publish_time=1), b"good")
        raw.send(Cmd(type=Cmd.SEND, send=pb.CommandSend(producer_id=1, sequence_id=1)), good)
        assert raw.next().type == Cmd.SEND_RECEIPT   # the connection and producer carry on
    finally:
        raw.close()
    producer = client.create_producer(topic)
    producer.send(b"after")
    assert data_of(receive_n(consumer, 2, ack=True)) == [b"good", b"after"]


def test_unreadable_entry_already_stored_is_skipped_and_counted(fresh_broker, connect):
    """Older data may hold an entry no SEND check refused: written here straight into the
    managed ledger of the stopped broker, between two good ones."""
    topic = full_name(unique_topic("stored-poison"))
    client = connect(fresh_broker)
    consumer = subscribe_earliest(client, topic)
    client.create_producer(topic).send(b"before")
    assert data_of(receive_n(consumer, 1, ack=True)) == [b"before"]
    client.close()
    fresh_broker.stop()

    async def append_bad_then_good() -> None:
        storage = await open_factory(StorageConfig(fresh_broker.data_dir))
        try:
            ledger = await storage.open_ledger(topic)
            await ledger.add_entry(UNREADABLE_ENTRY)
            await ledger.add_entry(make_entry(pb.MessageMetadata(producer_name="old", sequence_id=0,
                                                                 publish_time=1), b"behind-the-bad-one"))
        finally:
            await storage.close()

    asyncio.run(append_bad_then_good())
    fresh_broker.restart()
    client = connect(fresh_broker)
    consumer = subscribe_earliest(client, topic)
    assert data_of(receive_n(consumer, 1, ack=True)) == [b"behind-the-bad-one"]
    client.create_producer(topic).send(b"new")
    assert data_of(receive_n(consumer, 1, ack=True)) == [b"new"]
    assert metric(fresh_broker, "pulsard_unreadable_entries_skipped_total", topic) == 1


# -- 4. requests that used to end in a traceback -------------------------------------------------
def test_producer_with_initial_subscription_on_non_persistent_topic(broker, client):
    """Pulsar accepts it (a non-persistent subscription holds nothing without a consumer)."""
    topic = f"non-persistent://public/default/{unique_topic('np-initial')}"
    raw = RawClient(broker)
    try:
        raw.send(Cmd(type=Cmd.PRODUCER, producer=pb.CommandProducer(
            topic=topic, producer_id=1, request_id=1, initial_subscription_name="init")))
        assert raw.next().type == Cmd.PRODUCER_SUCCESS
    finally:
        raw.close()
    assert "Traceback" not in broker.log_tail(400)


def test_topics_of_malformed_namespace_is_an_error(broker):
    raw = RawClient(broker)
    try:
        for request_id, namespace in enumerate(["public//default", "/", "", "public/default/x/y", "a/.."], 1):
            raw.send(Cmd(type=Cmd.GET_TOPICS_OF_NAMESPACE, getTopicsOfNamespace=pb.CommandGetTopicsOfNamespace(
                request_id=request_id, namespace=namespace)))
            answer = raw.next()
            assert answer.type == Cmd.ERROR and answer.error.error == pb.InvalidTopicName, namespace
    finally:
        raw.close()
    assert "Traceback" not in broker.log_tail(400)
