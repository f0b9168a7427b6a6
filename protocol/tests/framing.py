"""Small builders of client-side frames shared by the protocol tests."""

from __future__ import annotations

import struct

import crc32c

from protocol import pulsar_api_pb2 as pb
from protocol.codec import Frame, FrameDecoder, Send, encode_command, encode_payload_frame
from protocol.entry import make_entry

MAX_FRAME = 5 * 1024 * 1024 + 10 * 1024


def metadata(sequence_id: int = 0, **fields: object) -> pb.MessageMetadata:
    return pb.MessageMetadata(producer_name="p", sequence_id=sequence_id, publish_time=1_700_000_000_000, **fields)


def send_command(producer_id: int = 1, sequence_id: int = 0) -> pb.BaseCommand:
    cmd = pb.BaseCommand(type=pb.BaseCommand.SEND)
    cmd.send.producer_id = producer_id
    cmd.send.sequence_id = sequence_id
    return cmd


def send_frame(sequence_id: int = 0, payload: bytes = b"payload") -> bytes:
    """A SEND frame with magic and a correct checksum, as clients send it."""
    header, entry = encode_payload_frame(send_command(sequence_id=sequence_id), make_entry(metadata(sequence_id), payload))
    return header + entry


def entry_around(metadata_bytes: bytes, payload: bytes = b"payload") -> bytes:
    """An entry with a correct checksum around any metadata bytes, well formed or not."""
    bare = struct.pack(">I", len(metadata_bytes)) + metadata_bytes + payload
    return struct.pack(">HI", 0x0E01, crc32c.crc32c(bare)) + bare


def flow_frame(permits: int = 1000) -> bytes:
    cmd = pb.BaseCommand(type=pb.BaseCommand.FLOW)
    cmd.flow.consumer_id = 3
    cmd.flow.messagePermits = permits
    return encode_command(cmd)


def raw_frame(command_bytes: bytes, rest: bytes = b"") -> bytes:
    """A frame around arbitrary command bytes, with consistent size fields."""
    return struct.pack(">II", 4 + len(command_bytes) + len(rest), len(command_bytes)) + command_bytes + rest


def kind(frame: Frame | Send) -> int:
    """The frame's command type (a Send has no BaseCommand)."""
    return pb.BaseCommand.SEND if isinstance(frame, Send) else frame.command.type


def decode_all(data: bytes, max_frame_size: int = MAX_FRAME) -> list[Frame | Send]:
    decoder = FrameDecoder(max_frame_size)
    decoder.receive_data(data)
    frames = []
    while batch := decoder.next_frames():
        frames += batch
    assert decoder.buffered == 0
    return frames
