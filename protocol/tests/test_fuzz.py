"""Fuzz rule (after h11): any input either parses or raises ProtocolError, never anything else.

Seeded and bounded, so a failure reproduces and the suite stays fast.
"""

from __future__ import annotations

import json
import random

import pytest

from protocol import commands
from protocol.codec import FrameDecoder, ProtocolError, Send, encode_command
from protocol.entry import payload_of, read_metadata, verify_checksum
from protocol.tests.fake_broker import FIXTURE
from protocol.tests.framing import flow_frame, send_frame

ITERATIONS = 3000
MAX_FRAME = 64 * 1024
pytestmark = pytest.mark.usefixtures("decoding")

VALID_FRAMES = [
    send_frame(1, b"hello"),
    send_frame(2, b""),
    flow_frame(),
    encode_command(commands.ping()),
    encode_command(commands.lookup_connect(1, "pulsar://x:6650")),
    *(bytes.fromhex(raw) for raw in json.loads(FIXTURE.read_text())["frames"].values()),
]


def decode_chunked(data: bytes, rng: random.Random) -> None:
    """Feed ``data`` in random pieces; check frames and their entries obey the rule."""
    decoder = FrameDecoder(MAX_FRAME)
    position = 0
    try:
        while position < len(data):
            step = rng.randint(1, 64)
            decoder.receive_data(data[position:position + step])
            position += step
            for frame in decoder.next_frames():
                if isinstance(frame, Send):
                    if frame.checksum_ok and frame.metadata_error is None:
                        read_metadata(frame.entry)   # must not raise: the decoder vouched for it
                        payload_of(frame.entry)
                elif frame.entry is not None and frame.checksum_ok:
                    read_metadata(frame.entry)
                    payload_of(frame.entry)
    except ProtocolError:
        return


def mutate(frame: bytes, rng: random.Random) -> bytes:
    data = bytearray(frame)
    for _ in range(rng.randint(1, 4)):
        choice = rng.randrange(5)
        position = rng.randrange(len(data) + 1)
        if choice == 0 and data:
            data[min(position, len(data) - 1)] ^= 1 << rng.randrange(8)
        elif choice == 1:
            data[position:position] = rng.randbytes(rng.randint(1, 8))
        elif choice == 2:
            del data[position:position + rng.randint(1, 8)]
        elif choice == 3 and data:
            data[min(position, len(data) - 1)] = rng.choice([0x00, 0x01, 0x7F, 0x80, 0xFF])
        else:
            data[:len(data)] = data[:position]  # truncate
    return bytes(data)


def test_random_bytes() -> None:
    rng = random.Random(20240601)
    for _ in range(ITERATIONS):
        decode_chunked(rng.randbytes(rng.randint(0, 200)), rng)


def test_random_bytes_behind_a_plausible_header() -> None:
    rng = random.Random(7)
    for _ in range(ITERATIONS):
        body = rng.randbytes(rng.randint(0, 120))
        cmd_size = rng.randint(0, len(body) + 2)
        decode_chunked((len(body) + 4).to_bytes(4, "big") + cmd_size.to_bytes(4, "big") + body, rng)


def test_mutated_valid_frames() -> None:
    rng = random.Random(99)
    for _ in range(ITERATIONS):
        frames = rng.choices(VALID_FRAMES, k=rng.randint(1, 3))
        target = rng.randrange(len(frames))
        frames[target] = mutate(frames[target], rng)
        decode_chunked(b"".join(frames), rng)


def test_entry_helpers_on_random_bytes() -> None:
    rng = random.Random(3)
    entry = bytes.fromhex(json.loads(FIXTURE.read_text())["frames"]["SEND"])[-60:]
    for _ in range(ITERATIONS):
        data = mutate(entry, rng) if rng.random() < 0.7 else rng.randbytes(rng.randint(0, 40))
        for helper in (verify_checksum, read_metadata, payload_of):
            try:
                helper(data)
            except ProtocolError:
                pass
