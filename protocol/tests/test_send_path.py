"""The native SEND decoder against the Python one: the same tuples, errors and leftovers.

The native path may leave any frame to Python but must never decode one differently, so every
stream here is decoded both ways, whole and in random pieces, and the results compared.
"""

from __future__ import annotations

import json
import os
import platform
import random
import shutil

import pytest

from protocol import codec
from protocol import pulsar_api_pb2 as pb
from protocol.codec import FrameDecoder, ProtocolError, Send, encode_command, encode_payload_frame
from protocol.entry import make_entry
from protocol.native import send_path
from protocol.receipts import SendReceipts
from protocol.tests.fake_broker import FIXTURE
from protocol.tests.framing import entry_around, flow_frame, metadata, send_command
from protocol.tests.test_fuzz import mutate

NATIVE = codec._scan_sends
needs_native = pytest.mark.skipif(NATIVE is None, reason="protocol._send_path is not built or not usable here")
MAX_FRAME = 64 * 1024


def send(meta: pb.MessageMetadata, payload: bytes = b"p" * 100, **fields: object) -> bytes:
    cmd = send_command(producer_id=3, sequence_id=meta.sequence_id)
    for name, value in fields.items():
        if name == "message_id":
            cmd.send.message_id.CopyFrom(value)
        else:
            setattr(cmd.send, name, value)
    header, entry = encode_payload_frame(cmd, make_entry(meta, payload))
    return header + entry


FIXTURE_FRAMES = json.loads(FIXTURE.read_text())["frames"]
#: SEND shapes the native path takes: what the Go, C++ and Java clients send, and every
#: metadata field it checks.
TAKEN = [
    send(metadata(7, uncompressed_size=100)),   # the Go client's unbatched message
    send(metadata(8, num_messages_in_batch=100, compression=pb.LZ4), num_messages=100),
    send(metadata(9, properties=[pb.KeyValue(key="k\u00e9", value="\u4e2d")], partition_key="key",
                  replicated_from="r", replicate_to=["a", "b"], event_time=5, encryption_algo="",
                  encryption_param=b"\xff", schema_version=b"\x00\x01", partition_key_b64_encoded=True,
                  ordering_key=b"\x80", deliver_at_time=-1, marker_type=2, txnid_least_bits=1,
                  txnid_most_bits=2, highest_sequence_id=9, null_value=True, uuid="u", num_chunks_from_msg=3,
                  total_chunk_msg_size=300, chunk_id=1, null_partition_key=True, schema_id=b"s"),
         highest_sequence_id=12, is_chunk=True, marker=True),
    bytes.fromhex(FIXTURE_FRAMES["SEND"]),
    bytes.fromhex(FIXTURE_FRAMES["SEND_BATCH"]),
]
#: Well-formed SENDs left to Python: fields the native path does not check.
LEFT = [
    send(metadata(1, encryption_keys=[pb.EncryptionKeys(key="k", value=b"v")])),
    send(metadata(2, compacted_batch_indexes=[1, 2])),
    send(metadata(3), message_id=pb.MessageIdData(ledgerId=1, entryId=2)),
    send(metadata(4), txnid_least_bits=1, txnid_most_bits=2),   # a transaction's: a Frame
    send(metadata(5), txnid_most_bits=2),   # half a transaction id: a plain Send, as in Pulsar
]
OTHERS = [flow_frame(), encode_command(pb.BaseCommand(type=pb.BaseCommand.PING, ping=pb.CommandPing()))]


def decode(data: bytes, native: bool, pieces: random.Random | None = None) -> tuple[list, str | None, int]:
    """(frames, error, bytes left) of decoding data, whole or in random pieces."""
    saved = codec._scan_sends
    codec._scan_sends = NATIVE if native else None
    decoder = FrameDecoder(MAX_FRAME)
    frames: list = []
    try:
        step = len(data) or 1
        for start in range(0, len(data), step):
            if pieces is not None:
                step = pieces.randint(1, 300)
            decoder.receive_data(data[start:start + step])
            while batch := decoder.next_frames():
                frames += batch
    except ProtocolError as exc:
        return frames, str(exc), decoder.buffered
    finally:
        codec._scan_sends = saved
    return frames, None, decoder.buffered


def test_native_decoder_is_built_where_it_can_be() -> None:
    """The extension is optional at install; on this kind of machine it must be there."""
    if os.environ.get("PULSARD_PURE_PYTHON") or platform.machine() != "x86_64" or not shutil.which("cc"):
        pytest.skip("the native decoder is not expected here")
    assert NATIVE is not None


@needs_native
@pytest.mark.parametrize("frame", TAKEN, ids=range(len(TAKEN)))
def test_common_shapes_are_taken_natively(frame: bytes) -> None:
    out: list = []
    assert NATIVE(frame, 0, MAX_FRAME, Send, out) == len(frame)
    assert out == decode(frame, native=False)[0]


@needs_native
@pytest.mark.parametrize("frame", LEFT + OTHERS, ids=range(len(LEFT + OTHERS)))
def test_other_frames_are_left_to_python(frame: bytes) -> None:
    out: list = []
    assert NATIVE(frame, 0, MAX_FRAME, Send, out) == 0 and out == []


@needs_native
def test_scan_stops_at_an_incomplete_frame_and_resumes_at_an_offset() -> None:
    first, second = TAKEN[0], TAKEN[1]
    data = first + second[:-1]
    out: list = []
    assert NATIVE(data, 0, MAX_FRAME, Send, out) == len(first) and len(out) == 1
    assert NATIVE(first + second, len(first), MAX_FRAME, Send, out) == len(first + second) and len(out) == 2
    assert NATIVE(first, 0, len(first) - 5, Send, out) == 0   # over the size limit: Python's to refuse


@needs_native
def test_bad_checksum_is_reported_as_python_does() -> None:
    data = bytearray(TAKEN[0])
    data[-1] ^= 1
    out: list = []
    assert NATIVE(bytes(data), 0, MAX_FRAME, Send, out) == len(data)
    assert out == decode(bytes(data), native=False)[0] and not out[0].checksum_ok


@needs_native
def test_mutated_streams_decode_the_same_both_ways() -> None:
    rng = random.Random(1604)
    valid = TAKEN + LEFT + OTHERS
    for _ in range(6000):
        frames = rng.choices(valid, k=rng.randint(1, 4))
        target = rng.randrange(len(frames))
        frames[target] = mutate(frames[target], rng)
        data = b"".join(frames)
        expected = decode(data, native=False)
        assert decode(data, native=True) == expected, data.hex()
        seed = rng.random()
        assert decode(data, True, random.Random(seed)) == decode(data, False, random.Random(seed)), data.hex()


@needs_native
def test_metadata_fields_of_every_wire_shape_decode_the_same_both_ways() -> None:
    """Each metadata field number 1-40 with each wire type, well formed: the native path
    checks what it knows and leaves the rest, and both ways agree."""
    base = metadata(1).SerializeToString()
    values = {0: b"\x96\x01", 1: b"12345678", 2: b"\x02\xc3\xa9", 5: b"1234"}
    for number in range(1, 41):
        for wire, value in values.items():
            tag = number << 3 | wire
            tag_bytes = bytes([tag]) if tag < 0x80 else bytes([tag & 0x7F | 0x80, tag >> 7])
            header, entry = encode_payload_frame(send_command(), entry_around(base + tag_bytes + value))
            assert decode(header + entry, native=True) == decode(header + entry, native=False), (number, wire)


@needs_native
def test_mutated_metadata_with_a_correct_checksum_decodes_the_same_both_ways() -> None:
    """A mutation inside an entry mostly breaks its checksum, and then the metadata is never
    read: here the checksum is made right again, so the metadata checks are what differ."""
    rng = random.Random(2511)
    for _ in range(6000):
        frame = rng.choice(TAKEN + LEFT)
        cmd_end = 8 + int.from_bytes(frame[4:8], "big")
        meta_size = int.from_bytes(frame[cmd_end + 6:cmd_end + 10], "big")
        body = frame[cmd_end + 10:cmd_end + 10 + meta_size]
        header, entry = encode_payload_frame(pb.BaseCommand.FromString(frame[8:cmd_end]),
                                             entry_around(mutate(body, rng), b"payload"))
        data = header + entry
        assert decode(data, native=True) == decode(data, native=False), data.hex()


@needs_native
def test_receipts_encode_to_the_bytes_protobuf_serialises() -> None:
    rng = random.Random(77)
    edges = [0, 1, 127, 128, 16383, 16384, 2**32, 2**63, 2**64 - 1, -1, -(2**63)]
    for _ in range(20000):
        producer_id, *ids = (rng.choice(edges + [rng.getrandbits(rng.randint(1, 64))]) for _ in range(5))
        assert send_path.encode_receipt(producer_id, *ids) == SendReceipts(producer_id).encode(*ids), (producer_id, ids)
