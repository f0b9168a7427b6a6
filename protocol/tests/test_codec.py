"""FrameDecoder and encoders: framing, chunking, limits and failure handling."""

from __future__ import annotations

import struct

import crc32c
import pytest
from google.protobuf.message import EncodeError

from protocol import commands
from protocol import pulsar_api_pb2 as pb
from protocol.codec import (Frame, FrameDecoder, ProtocolError, Send, encode_command, encode_payload_frame,
                            is_transactional, send_of)
from protocol.entry import make_entry
from protocol.tests.framing import (MAX_FRAME, decode_all, entry_around, flow_frame, kind, metadata, raw_frame,
                                    send_command, send_frame)

pytestmark = pytest.mark.usefixtures("decoding")

MIXED = [encode_command(commands.ping()), send_frame(1, b"x" * 300), flow_frame(), send_frame(2, b""), encode_command(commands.pong())]
MIXED_TYPES = [pb.BaseCommand.PING, pb.BaseCommand.SEND, pb.BaseCommand.FLOW, pb.BaseCommand.SEND, pb.BaseCommand.PONG]


def feed_in_pieces(data: bytes, size: int) -> list[Frame | Send]:
    decoder = FrameDecoder(MAX_FRAME)
    frames = []
    for start in range(0, len(data), size):
        decoder.receive_data(data[start:start + size])
        frames += decoder.next_frames()
    assert decoder.buffered == 0
    return frames


def failing(data: bytes, max_frame_size: int = MAX_FRAME) -> ProtocolError:
    with pytest.raises(ProtocolError) as caught:
        decode_all(data, max_frame_size)
    return caught.value


def test_simple_frame_round_trip() -> None:
    cmd = commands.success(42)
    (frame,) = decode_all(encode_command(cmd))
    assert frame == Frame(cmd, None, True)


def test_simple_frame_layout() -> None:
    data = encode_command(commands.ping())
    body = commands.ping().SerializeToString()
    assert data == struct.pack(">II", 4 + len(body), len(body)) + body


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 64, 1 << 20])
def test_chunking_does_not_matter(size: int) -> None:
    frames = feed_in_pieces(b"".join(MIXED), size)
    assert [kind(f) for f in frames] == MIXED_TYPES
    assert frames == decode_all(b"".join(MIXED))


def test_one_byte_at_a_time_yields_each_frame_exactly_when_complete() -> None:
    data = b"".join(MIXED)
    ends = {sum(len(f) for f in MIXED[:i + 1]) for i in range(len(MIXED))}
    decoder = FrameDecoder(MAX_FRAME)
    for position in range(1, len(data) + 1):
        decoder.receive_data(data[position - 1:position])
        assert len(decoder.next_frames()) == (position in ends)
        assert decoder.next_frames() == []


def test_many_frames_in_one_chunk() -> None:
    data = b"".join(send_frame(i) if i % 2 else flow_frame(i) for i in range(2000))
    frames = decode_all(data)
    assert len(frames) == 2000
    assert frames[1].sequence_id == 1
    assert frames[1998].command.flow.messagePermits == 1998


def test_large_frame_split_over_many_chunks() -> None:
    data = send_frame(9, bytes(range(256)) * 4000)
    frames = feed_in_pieces(data, 4096)
    assert len(frames) == 1 and frames[0].entry == data[-len(frames[0].entry):]


def test_accepts_bytearray_and_memoryview_and_copies_them() -> None:
    buffer = bytearray(send_frame(5))
    decoder = FrameDecoder(MAX_FRAME)
    decoder.receive_data(memoryview(buffer)[:10])
    decoder.receive_data(buffer[10:])
    buffer[:] = bytes(len(buffer))  # the caller reuses its buffer
    (frame,) = decoder.next_frames()
    assert frame.sequence_id == 5 and frame.checksum_ok


def test_empty_data_is_ignored() -> None:
    decoder = FrameDecoder(MAX_FRAME)
    decoder.receive_data(b"")
    assert decoder.next_frames() == [] and decoder.buffered == 0


def test_oversize_frame_is_refused_from_its_header() -> None:
    decoder = FrameDecoder(1000)
    decoder.receive_data(struct.pack(">I", 1001))
    with pytest.raises(ProtocolError, match="exceeds the maximum"):
        decoder.next_frame()


def test_frame_at_the_limit_is_accepted() -> None:
    data = encode_command(commands.success(1))
    assert len(decode_all(data, max_frame_size=len(data) - 4)) == 1
    failing(data, max_frame_size=len(data) - 5)


@pytest.mark.parametrize("total", [0, 1, 3])
def test_total_size_too_small(total: int) -> None:
    assert "too small" in str(failing(struct.pack(">I", total) + bytes(total)))


def test_command_size_zero() -> None:
    assert "command size 0" in str(failing(struct.pack(">II", 4, 0)))


def test_command_size_beyond_frame() -> None:
    body = commands.ping().SerializeToString()
    assert "does not fit" in str(failing(struct.pack(">II", 4 + len(body), len(body) + 1) + body))


def test_garbage_command_bytes() -> None:
    assert "does not parse" in str(failing(raw_frame(b"\xff\xff\xff\xff")))


def test_missing_required_fields() -> None:
    cmd = pb.BaseCommand(type=pb.BaseCommand.FLOW)
    cmd.flow.consumer_id = 1
    error = failing(raw_frame(cmd.SerializePartialToString()))
    assert "flow.messagePermits" in str(error)


def test_unknown_command_type() -> None:
    assert "type" in str(failing(raw_frame(b"\x08\x63")))  # type = 99


def test_type_without_its_body() -> None:
    cmd = pb.BaseCommand(type=pb.BaseCommand.PING)
    assert "without its 'ping' body" in str(failing(raw_frame(cmd.SerializeToString())))


def test_stray_bytes_after_simple_command() -> None:
    assert "stray bytes" in str(failing(raw_frame(commands.ping().SerializeToString(), b"\x00")))


def test_invalid_utf8_string() -> None:
    cmd = pb.BaseCommand(type=pb.BaseCommand.PRODUCER)
    cmd.producer.topic = "t\x01"
    cmd.producer.producer_id = 1
    cmd.producer.request_id = 2
    corrupted = cmd.SerializeToString().replace(b"t\x01", b"t\xff")
    assert "bad UTF-8" in str(failing(raw_frame(corrupted)))


def test_decoder_stays_failed() -> None:
    decoder = FrameDecoder(MAX_FRAME)
    decoder.receive_data(raw_frame(b"\xff\xff\xff\xff") + encode_command(commands.ping()))
    with pytest.raises(ProtocolError):
        decoder.next_frame()
    with pytest.raises(ProtocolError, match="failed earlier"):
        decoder.next_frame()
    with pytest.raises(ProtocolError, match="failed earlier"):
        decoder.receive_data(encode_command(commands.ping()))
    assert decoder.buffered == 0


def test_frames_before_a_failure_are_returned_then_it_is_raised() -> None:
    decoder = FrameDecoder(MAX_FRAME)
    decoder.receive_data(send_frame(1) + flow_frame() + raw_frame(b"\xff\xff\xff\xff") + send_frame(2))
    assert [kind(f) for f in decoder.next_frames()] == [pb.BaseCommand.SEND, pb.BaseCommand.FLOW]
    with pytest.raises(ProtocolError, match="failed earlier"):
        decoder.next_frames()


# --- payload frames ----------------------------------------------------------------


def test_send_with_good_checksum() -> None:
    entry = make_entry(metadata(7), b"hello")
    header, same = encode_payload_frame(send_command(producer_id=4, sequence_id=7), entry)
    (frame,) = decode_all(header + same)
    assert frame == Send(4, 7, 7, 1, False, entry, True, None) and type(frame.entry) is bytes


def test_send_fields_the_broker_reads() -> None:
    cmd = send_command(producer_id=2**64 - 1, sequence_id=10)
    cmd.send.highest_sequence_id = 19
    cmd.send.num_messages = -3   # an int32 on the wire: ten bytes of varint
    cmd.send.is_chunk = True
    cmd.send.txnid_least_bits = 5
    header, entry = encode_payload_frame(cmd, make_entry(metadata(10), b"x"))
    (frame,) = decode_all(header + entry)
    assert frame == Send(2**64 - 1, 10, 19, -3, True, entry, True, None)


def test_a_transactions_send_stays_a_frame_for_the_transactional_path() -> None:
    cmd = send_command(producer_id=3, sequence_id=4)
    cmd.send.txnid_least_bits, cmd.send.txnid_most_bits = 5, 0
    header, entry = encode_payload_frame(cmd, make_entry(metadata(4), b"x"))
    (frame,) = decode_all(header + entry)
    assert type(frame) is Frame and frame.command.send.txnid_least_bits == 5
    assert is_transactional(frame.command.send) and send_of(frame) == Send(3, 4, 4, 1, False, entry, True, None)


def test_send_with_metadata_lacking_a_required_field_is_reported_not_raised() -> None:
    meta = pb.MessageMetadata(sequence_id=1, publish_time=1)
    entry = entry_around(meta.SerializePartialToString())
    (frame,) = decode_all(raw_frame(send_command().SerializeToString(), entry))
    assert frame.checksum_ok and "producer_name" in frame.metadata_error and frame.entry == entry


def test_send_with_a_property_lacking_its_value_is_reported_not_raised() -> None:
    meta = metadata(properties=[pb.KeyValue(key="k", value="v")])
    without_value = meta.SerializeToString().replace(b"\x22\x06\x0a\x01k\x12\x01v", b"\x22\x03\x0a\x01k")
    entry = entry_around(without_value)
    (frame,) = decode_all(raw_frame(send_command().SerializeToString(), entry))
    assert frame.checksum_ok and "properties[0].value" in frame.metadata_error


def test_send_with_bad_utf8_in_metadata_is_reported_not_raised() -> None:
    good = metadata(partition_key="k\u00e9").SerializeToString()
    entry = entry_around(good.replace("k\u00e9".encode(), b"k\xc3\x28"))
    (frame,) = decode_all(raw_frame(send_command().SerializeToString(), entry))
    assert frame.checksum_ok and "does not parse" in frame.metadata_error


def test_send_with_bad_checksum_is_reported_not_raised() -> None:
    data = bytearray(send_frame(3, b"hello"))
    data[-1] ^= 0x01
    (frame,) = decode_all(bytes(data))
    assert not frame.checksum_ok
    assert frame.sequence_id == 3
    assert frame.entry == bytes(data[-len(frame.entry):])


def test_bad_checksum_with_corrupt_metadata_size_is_still_a_checksum_failure() -> None:
    entry = bytearray(make_entry(metadata(), b"hello"))
    entry[6:10] = struct.pack(">I", 10_000)
    header, _ = encode_payload_frame(send_command(), bytes(entry))
    (frame,) = decode_all(header + bytes(entry))
    assert not frame.checksum_ok


def test_payload_without_magic_is_normalised() -> None:
    meta = metadata(4).SerializeToString()
    bare = struct.pack(">I", len(meta)) + meta + b"old client"
    data = raw_frame(send_command(sequence_id=4).SerializeToString(), bare)
    (frame,) = decode_all(data)
    assert frame.checksum_ok
    assert frame.entry == struct.pack(">HI", 0x0E01, crc32c.crc32c(bare)) + bare
    assert frame.entry == make_entry(metadata(4), b"old client")


@pytest.mark.parametrize(
    "payload",
    [
        b"",  # nothing at all
        b"\x00\x00",  # too short for a metadata size
        b"\x0e\x01\x00\x00\x00",  # magic, truncated checksum
        struct.pack(">I", 50) + b"short",  # metadata size beyond the frame
        struct.pack(">I", 0),  # empty metadata
    ],
)
def test_payload_too_short(payload: bytes) -> None:
    failing(raw_frame(send_command().SerializeToString(), payload))


def test_metadata_size_beyond_frame_with_valid_checksum() -> None:
    body = struct.pack(">I", 99) + b"abc"
    payload = struct.pack(">HI", 0x0E01, crc32c.crc32c(body)) + body
    assert "metadata size 99" in str(failing(raw_frame(send_command().SerializeToString(), payload)))


def test_message_frames_carry_entries_too() -> None:
    entry = make_entry(metadata(), b"to consumer")
    header, same = encode_payload_frame(commands.message(1, 2, 3), entry)
    assert same is entry
    (frame,) = decode_all(header + entry)
    assert frame.command.type == pb.BaseCommand.MESSAGE and frame.entry == entry


def test_encoders_refuse_incomplete_commands() -> None:
    cmd = pb.BaseCommand(type=pb.BaseCommand.SEND_RECEIPT)
    cmd.send_receipt.producer_id = 1
    with pytest.raises(EncodeError):
        encode_command(cmd)
    with pytest.raises(EncodeError):
        encode_payload_frame(cmd, b"")
