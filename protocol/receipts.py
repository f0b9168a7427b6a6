"""SEND_RECEIPT frames of one producer: one per stored message, so built cheaply.

The native path encodes a frame in C (0.08 us); the Python path sets the four fields that
change on a command kept per producer, half the cost of building a fresh command each time.
Both give the same bytes.
"""

from __future__ import annotations

from functools import partial
from typing import Callable

from protocol import pulsar_api_pb2 as pb
from protocol.codec import encode_command
from protocol.commands import _U64_MASK   # what commands._u64 applies, inlined once per field
from protocol.native import send_path

#: encode(sequence_id, highest_sequence_id, ledger_id, entry_id) -> the whole frame.
ReceiptEncoder = Callable[[int, int, int, int], bytes]


def receipt_encoder(producer_id: int) -> ReceiptEncoder:
    """The encoder of one producer's receipts (ids may be signed: (-1, -1) names a duplicate)."""
    if send_path is not None:
        return partial(send_path.encode_receipt, producer_id)
    return SendReceipts(producer_id).encode


class SendReceipts:
    """Encodes the receipts of one producer in Python, from one reused command."""

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
