"""SEND_RECEIPT frames of one producer, encoded from one reused command.

Every unbatched message gets a receipt, and building a fresh protobuf command for each cost
twice as much as setting the four fields that change on a command kept per producer.
"""

from __future__ import annotations

from protocol import pulsar_api_pb2 as pb
from protocol.codec import encode_command
from protocol.commands import _U64_MASK   # what commands._u64 applies, inlined once per field


class SendReceipts:
    """Encodes the receipts of one producer (ids may be signed: (-1, -1) names a duplicate)."""

    __slots__ = ("_command", "_body", "_message_id")

    def __init__(self, producer_id: int) -> None:
        self._command = pb.BaseCommand(type=pb.BaseCommand.SEND_RECEIPT)
        self._body = self._command.send_receipt
        self._body.producer_id = producer_id & _U64_MASK
        self._message_id = self._body.message_id

    def encode(self, sequence_id: int, highest_sequence_id: int, ledger_id: int, entry_id: int) -> bytes:
        """The whole frame, ready to write."""
        body = self._body
        body.sequence_id = sequence_id & _U64_MASK
        body.highest_sequence_id = highest_sequence_id & _U64_MASK
        message_id = self._message_id
        message_id.ledgerId = ledger_id & _U64_MASK
        message_id.entryId = entry_id & _U64_MASK
        return encode_command(self._command)
