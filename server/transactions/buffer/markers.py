"""What stored entries say about transactions: Pulsar's commit and abort markers (entries of
their own, MessageMetadata with marker_type TXN_COMMIT / TXN_ABORT, the transaction's id and an
empty payload, as Pulsar's Markers write them), and the transaction id of a transactional entry.

A client may send a transaction's message with its id on CommandSend only (the Go client
v0.19.0 does): the id is then written into the entry's metadata, with a new checksum, so that
dispatchers and recovery find it where Pulsar's do. Entries that carry it are stored unchanged.
"""

from __future__ import annotations

import time

from protocol import pulsar_api_pb2 as pb
from protocol.entry import make_entry, payload_of, read_metadata
from server.transactions.interfaces import COMMIT, TxnID

#: PulsarMarkers.MarkerType values of transaction markers.
TXN_COMMIT = 20
TXN_ABORT = 21
MARKER_PRODUCER = "pulsar.txn.marker"
#: The sequence id Pulsar's markers carry (-1 as a uint64).
MARKER_SEQUENCE_ID = (1 << 64) - 1


def marker_entry(txn: TxnID, action: int) -> bytes:
    metadata = pb.MessageMetadata(
        producer_name=MARKER_PRODUCER, sequence_id=MARKER_SEQUENCE_ID, publish_time=int(time.time() * 1000),
        marker_type=TXN_COMMIT if action == COMMIT else TXN_ABORT,
        txnid_most_bits=txn.most_bits, txnid_least_bits=txn.least_bits)
    return make_entry(metadata, b"")


def txn_of(metadata: pb.MessageMetadata) -> TxnID | None:
    """The transaction an entry (or a marker) belongs to, or None."""
    if metadata.HasField("txnid_most_bits") and metadata.HasField("txnid_least_bits"):
        return TxnID(metadata.txnid_most_bits, metadata.txnid_least_bits)
    return None


def is_txn_marker(metadata: pb.MessageMetadata) -> bool:
    return metadata.marker_type in (TXN_COMMIT, TXN_ABORT)


def with_txn_id(entry: bytes, txn: TxnID) -> bytes:
    """The entry with the transaction's id in its metadata: unchanged when it is there already
    (as the Java client writes it), else rewritten around the same payload."""
    metadata = read_metadata(entry)
    if txn_of(metadata) == txn:
        return entry
    metadata.txnid_most_bits, metadata.txnid_least_bits = txn.most_bits, txn.least_bits
    return make_entry(metadata, bytes(payload_of(entry)))

