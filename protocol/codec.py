"""Sans-IO framing of the Pulsar binary protocol: bytes in, commands out, and back.

Frames are ``[u32 total][u32 cmdSize][BaseCommand]`` and, for SEND and MESSAGE,
``... [BaseCommand][entry]`` where the entry runs from the checksum magic to the end
of the frame (see ``protocol.entry``). Integers are big-endian; ``total`` counts
everything after itself.

Like h11, nothing here touches a socket: the connection feeds received bytes to a
``FrameDecoder`` and writes what ``encode_command`` / ``encode_payload_frame`` return.

A SEND decodes to a ``Send`` tuple rather than a ``Frame``: it is every unbatched message,
and the broker reads only a few of its fields. The optional native module ``_send_path``
decodes plain SENDs in C (a third of the broker's CPU per unbatched message went to decoding
in Python); whatever it leaves, and everything when it is missing (``protocol.native``), is
decoded here, to the same tuples. A transactional SEND (one whose CommandSend carries a
transaction id) is the exception: it stays a ``Frame``, for the broker's handler of
transactional sends, which turns it into a ``Send`` with ``send_of`` (plain SENDs never pay
for transactions).
"""

from __future__ import annotations

import struct
from collections import deque
from typing import NamedTuple

from google.protobuf.message import DecodeError

from protocol import pulsar_api_pb2 as pb
from protocol.entry import entry_from_frame_payload, read_metadata
from protocol.errors import ProtocolError
from protocol.native import send_path

__all__ = ["Frame", "FrameDecoder", "ProtocolError", "Send", "encode_command", "encode_payload_frame", "send_of",
           "is_transactional"]

#: scan_sends(chunk, offset, max_frame_size, Send, out) -> offset of the first frame not taken.
_scan_sends = send_path.scan_sends if send_path is not None else None

_U32 = struct.Struct(">I")
_SIZES = struct.Struct(">II")
_parse_command = pb.BaseCommand.FromString

PAYLOAD_COMMANDS = frozenset({pb.BaseCommand.SEND, pb.BaseCommand.MESSAGE})
"""Command types followed by an entry inside the same frame."""

# Every BaseCommand sub-command sits at the field number equal to its type value.
_SUBCOMMAND_FIELD = {
    value: pb.BaseCommand.DESCRIPTOR.fields_by_number[value].name
    for value in pb.BaseCommand.Type.values()
}


class Frame(NamedTuple):
    """One decoded frame (a named tuple: one is made per message, several times faster than
    a frozen dataclass).

    ``entry`` is set for SEND/MESSAGE only: the bytes from the magic onward, ready to
    store. ``checksum_ok`` is False when such an entry's CRC32C does not match; the
    broker then answers SEND_ERROR ChecksumError instead of storing it.
    """

    command: pb.BaseCommand
    entry: bytes | None = None
    checksum_ok: bool = True


class Send(NamedTuple):
    """A SEND frame: what the broker reads of its CommandSend, and its entry (magic onward).

    ``highest_sequence_id`` is ``sequence_id`` when the client did not set it. When the CRC32C
    does not match, ``checksum_ok`` is False and the metadata was not looked at; otherwise
    ``metadata_error`` says why the entry's MessageMetadata is unreadable (None: it is fine).
    Field order matters: ``_send_path.c`` builds these tuples.
    """

    producer_id: int
    sequence_id: int
    highest_sequence_id: int
    num_messages: int
    is_chunk: bool
    entry: bytes
    checksum_ok: bool
    metadata_error: str | None


class FrameDecoder:
    """Reassembles frames from arbitrary chunks of received bytes.

    Chunks are kept as received and whole frames are sliced out of them; bytes are
    joined only for a frame that straddles chunks, and only that frame's bytes.
    After a ``ProtocolError`` the stream is out of sync for good, so the decoder
    stays failed and every later call raises.
    """

    __slots__ = ("_max_frame_size", "_chunks", "_offset", "_buffered", "_failure")

    def __init__(self, max_frame_size: int) -> None:
        self._max_frame_size = max_frame_size
        self._chunks: deque[bytes] = deque()
        self._offset = 0  # bytes of _chunks[0] already consumed
        self._buffered = 0  # bytes received and not yet consumed
        self._failure: str | None = None

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as frames (for back-pressure)."""
        return self._buffered

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        """Queue received bytes; mutable buffers are copied, bytes are kept as they are."""
        self._raise_if_failed()
        if data:
            chunk = data if type(data) is bytes else bytes(data)
            self._chunks.append(chunk)
            self._buffered += len(chunk)

    def next_frames(self) -> list[Frame | Send]:
        """Every complete frame received so far, in order ([] until more data arrives).

        A ProtocolError is raised at once only when no frame precedes it; otherwise the
        frames before it are returned and the next call raises."""
        frames: list[Frame | Send] = []
        try:
            while True:
                if _scan_sends is not None and self._buffered:
                    self._scan_native(frames)
                frame = self.next_frame()
                if frame is None:
                    return frames
                frames.append(frame)
        except ProtocolError:
            if frames:
                return frames
            raise

    def _scan_native(self, frames: list[Frame | Send]) -> None:
        """Take the plain SENDs at the front of the first chunk in C."""
        first = self._chunks[0]
        end = _scan_sends(first, self._offset, self._max_frame_size, Send, frames)
        if end != self._offset:
            self._buffered -= end - self._offset
            if end == len(first):
                self._chunks.popleft()
                self._offset = 0
            else:
                self._offset = end

    def next_frame(self) -> Frame | Send | None:
        """The next complete frame, or None until more data has been received (decoded in
        Python: ``next_frames`` is the fast way through many)."""
        if self._failure is not None:
            self._raise_if_failed()
        if self._buffered < _U32.size:
            return None
        try:
            total = self._peek_total()
            if self._buffered < _U32.size + total:
                return None
            return _parse_frame(self._take(_U32.size + total))
        except ProtocolError as exc:
            self._fail(str(exc))
            raise

    def _peek_total(self) -> int:
        first = self._chunks[0]
        if len(first) - self._offset >= _U32.size:
            (total,) = _U32.unpack_from(first, self._offset)
        else:
            (total,) = _U32.unpack(self._gather(_U32.size))
        if total > self._max_frame_size:
            raise ProtocolError(f"frame of {total} bytes exceeds the maximum of {self._max_frame_size}")
        if total < _U32.size:
            raise ProtocolError(f"frame size {total} is too small to hold a command size")
        return total

    def _gather(self, size: int) -> bytes:
        """Copy the first ``size`` unconsumed bytes without consuming them."""
        parts = []
        needed = size
        offset = self._offset
        for chunk in self._chunks:
            part = chunk[offset:offset + needed]
            parts.append(part)
            needed -= len(part)
            if not needed:
                break
            offset = 0
        return b"".join(parts)

    def _take(self, size: int) -> memoryview:
        """Consume ``size`` bytes (all buffered) and return them."""
        self._buffered -= size
        first = self._chunks[0]
        end = self._offset + size
        if end <= len(first):
            view = memoryview(first)[self._offset:end]
            if end == len(first):
                self._chunks.popleft()
                self._offset = 0
            else:
                self._offset = end
            return view
        data = self._gather(size)
        remaining = size
        while remaining:
            available = len(self._chunks[0]) - self._offset
            if available > remaining:
                self._offset += remaining
                break
            remaining -= available
            self._chunks.popleft()
            self._offset = 0
        return memoryview(data)

    def _fail(self, reason: str) -> None:
        self._failure = reason
        self._chunks.clear()
        self._buffered = 0

    def _raise_if_failed(self) -> None:
        if self._failure is not None:
            raise ProtocolError(f"decoder failed earlier: {self._failure}")


def _parse_frame(frame: memoryview) -> Frame | Send:
    """Decode one frame given with its leading total-size field (already checked)."""
    (cmd_size,) = _U32.unpack_from(frame, _U32.size)
    cmd_end = _SIZES.size + cmd_size
    if cmd_size == 0 or cmd_end > len(frame):
        raise ProtocolError(f"command size {cmd_size} does not fit a frame of {len(frame) - _U32.size} bytes")
    try:   # FromString on a bytes copy: the cheapest parse protobuf offers; it refuses bad UTF-8
        command = _parse_command(bytes(frame[_SIZES.size:cmd_end]))
    except (DecodeError, UnicodeDecodeError) as exc:   # the latter from protobuf's pure-Python parser
        raise ProtocolError(f"BaseCommand does not parse: {exc}") from None
    kind = command.type
    field = _SUBCOMMAND_FIELD[kind]
    if command.HasField("type") and not command.HasField(field):
        raise ProtocolError(f"{pb.BaseCommand.Type.Name(kind)} command without its '{field}' body")
    # Only the body the type names is ever read: checking it alone costs a third of checking
    # the whole command, which every SEND would pay.
    if not command.HasField("type") or not getattr(command, field).IsInitialized():
        missing = ", ".join(command.FindInitializationErrors())
        raise ProtocolError(f"BaseCommand lacks required fields: {missing}")
    if kind in PAYLOAD_COMMANDS:
        entry, checksum_ok = entry_from_frame_payload(frame[cmd_end:])
        if kind == pb.BaseCommand.SEND and not is_transactional(command.send):
            return _send_of(command.send, entry, checksum_ok)
        return Frame(command, entry, checksum_ok)
    if cmd_end < len(frame):
        raise ProtocolError(f"{pb.BaseCommand.Type.Name(kind)} frame carries {len(frame) - cmd_end} stray bytes")
    return Frame(command)


def is_transactional(send: pb.CommandSend) -> bool:
    """As Pulsar's ServerCnx: a SEND is a transaction's when it carries both halves of its id."""
    return send.HasField("txnid_most_bits") and send.HasField("txnid_least_bits")


def send_of(frame: Frame) -> Send:
    """The ``Send`` of a transactional SEND's frame (what the refusal checks and producers take)."""
    assert frame.entry is not None
    return _send_of(frame.command.send, frame.entry, frame.checksum_ok)


def _send_of(send: pb.CommandSend, entry: bytes, checksum_ok: bool) -> Send:
    metadata_error = None
    if checksum_ok:
        try:   # stored unreadable, it could never be dispatched: the broker refuses it
            read_metadata(entry)
        except ProtocolError as exc:
            metadata_error = str(exc)
    sequence_id = send.sequence_id
    highest = send.highest_sequence_id if send.HasField("highest_sequence_id") else sequence_id
    return Send(send.producer_id, sequence_id, highest, send.num_messages, send.is_chunk, entry, checksum_ok,
                metadata_error)


def encode_command(cmd: pb.BaseCommand) -> bytes:
    """A simple frame. Raises protobuf's EncodeError if a required field is unset."""
    body = cmd.SerializeToString()
    return _SIZES.pack(_U32.size + len(body), len(body)) + body


def encode_payload_frame(cmd: pb.BaseCommand, entry: bytes) -> tuple[bytes, bytes]:
    """``(header, entry)`` of a SEND/MESSAGE frame, for ``writelines`` without copying the entry.

    ``entry`` is a stored entry (magic onward) and goes on the wire unchanged.
    """
    body = cmd.SerializeToString()
    return _SIZES.pack(_U32.size + len(body) + len(entry), len(body)) + body, entry
