"""Frames the official Pulsar client sends, decoded by our codec.

The fixture holds frames captured by ``protocol.tests.fake_broker`` from
pulsar-client (C++ core), so these checks run without the client; the live test
captures afresh and also proves the client accepts what our builders send.
"""

from __future__ import annotations

import json

import pytest

from protocol import pulsar_api_pb2 as pb
from protocol.codec import Frame, Send
from protocol.entry import payload_of, read_metadata
from protocol.tests.fake_broker import FIXTURE, LEDGER_ID, FakeBroker, run_client
from protocol.tests.framing import decode_all, kind

T = pb.BaseCommand
pytestmark = pytest.mark.usefixtures("decoding")
TOPIC = "persistent://public/default/capture"
EXPECTED_RECEIVED = [
    ["hello", f"({LEDGER_ID},0,-1,-1)"],
    ["batch-0", f"({LEDGER_ID},1,-1,0)"],
    ["batch-1", f"({LEDGER_ID},1,-1,1)"],
    ["batch-2", f"({LEDGER_ID},1,-1,2)"],
]


def check_connect(frame: Frame) -> None:
    connect = frame.command.connect
    assert connect.client_version.startswith("Pulsar-CPP-v")
    assert connect.protocol_version >= pb.v12


def check_lookups(frames: list[Frame]) -> None:
    kinds = {f.command.type: f.command for f in frames}
    assert kinds[T.PARTITIONED_METADATA].partitionMetadata.topic == TOPIC
    assert kinds[T.LOOKUP].lookupTopic.topic == TOPIC


def check_producer(frame: Frame) -> None:
    producer = frame.command.producer
    assert producer.topic == TOPIC and producer.producer_name == "capture-producer"


def check_plain_send(frame: Send) -> None:
    assert frame == Send(frame.producer_id, frame.sequence_id, frame.sequence_id, 1, False, frame.entry, True, None)
    metadata = read_metadata(frame.entry)
    assert metadata.producer_name == "capture-producer"
    assert metadata.partition_key == "k1"
    assert [(p.key, p.value) for p in metadata.properties] == [("a", "b")]
    assert bytes(payload_of(frame.entry)) == b"hello"


def check_batch_send(frame: Send) -> None:
    assert frame.checksum_ok and frame.metadata_error is None and frame.num_messages == 3
    assert read_metadata(frame.entry).num_messages_in_batch == 3


def check_subscribe(frame: Frame) -> None:
    subscribe = frame.command.subscribe
    assert (subscribe.topic, subscribe.subscription) == (TOPIC, "capture-sub")
    assert subscribe.subType == pb.CommandSubscribe.Exclusive
    assert subscribe.initialPosition == pb.CommandSubscribe.Earliest


def check_flow(frame: Frame) -> None:
    assert frame.command.flow.messagePermits == 1000


def check_ack(frame: Frame) -> None:
    ack = frame.command.ack
    assert ack.ack_type == pb.CommandAck.Individual
    assert {(m.ledgerId, m.entryId) for m in ack.message_id} <= {(LEDGER_ID, 0), (LEDGER_ID, 1)}


def decode_fixture(name: str) -> Frame | Send:
    raw = bytes.fromhex(json.loads(FIXTURE.read_text())["frames"][name])
    (frame,) = decode_all(raw)
    return frame


def test_fixture_frames() -> None:
    check_connect(decode_fixture("CONNECT"))
    check_lookups([decode_fixture("PARTITIONED_METADATA"), decode_fixture("LOOKUP")])
    check_producer(decode_fixture("PRODUCER"))
    check_plain_send(decode_fixture("SEND"))
    check_batch_send(decode_fixture("SEND_BATCH"))
    check_subscribe(decode_fixture("SUBSCRIBE"))
    check_flow(decode_fixture("FLOW"))
    check_ack(decode_fixture("ACK"))
    assert decode_fixture("CLOSE_PRODUCER").command.type == T.CLOSE_PRODUCER
    assert decode_fixture("CLOSE_CONSUMER").command.type == T.CLOSE_CONSUMER


def test_fixture_frames_one_byte_at_a_time() -> None:
    frames = json.loads(FIXTURE.read_text())["frames"]
    stream = b"".join(bytes.fromhex(raw) for raw in frames.values())
    assert [T.Type.Name(kind(f)) for f in decode_all(stream)] == [
        name if name != "SEND_BATCH" else "SEND" for name in frames
    ]


def test_live_client_session() -> None:
    pytest.importorskip("pulsar")
    with FakeBroker() as broker:
        result = run_client(broker.port)
    assert not broker.errors
    assert result == {"plain_id": f"({LEDGER_ID},0,-1,-1)", "received": EXPECTED_RECEIVED}

    frames = [frame for stream in broker.streams for frame in decode_all(bytes(stream))]
    assert len(frames) == len(broker.frames)
    by_type: dict[int, list[Frame | Send]] = {}
    for frame in frames:
        by_type.setdefault(kind(frame), []).append(frame)
    check_connect(by_type[T.CONNECT][0])
    check_lookups(by_type[T.PARTITIONED_METADATA] + by_type[T.LOOKUP])
    check_producer(by_type[T.PRODUCER][0])
    plain, batch = by_type[T.SEND]
    check_plain_send(plain)
    check_batch_send(batch)
    check_subscribe(by_type[T.SUBSCRIBE][0])
    check_flow(by_type[T.FLOW][0])
    for ack in by_type[T.ACK]:
        check_ack(ack)
