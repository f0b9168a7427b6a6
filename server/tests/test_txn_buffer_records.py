"""What the transaction buffer writes: markers as Pulsar's Markers make them, a transaction id
written into an entry's metadata (only when missing; the payload and a valid checksum kept), and
snapshot records that read back as written."""

from __future__ import annotations

from managed_ledger.position import Position
from protocol import pulsar_api_pb2 as pb
from protocol.entry import make_entry, payload_of, read_metadata, verify_checksum
from server.topics.topic_name import TopicName
from server.transactions.buffer.buffer import Snapshot
from server.transactions.buffer.markers import (TXN_ABORT, TXN_COMMIT, is_txn_marker, marker_entry, txn_of,
                                                with_txn_id)
from server.transactions.buffer.snapshots import decode, encode, encode_removal
from server.transactions.interfaces import ABORT, COMMIT, TxnID

TXN = TxnID(3, 42)


def test_markers_carry_their_type_and_transaction():
    for action, marker_type in ((COMMIT, TXN_COMMIT), (ABORT, TXN_ABORT)):
        entry = marker_entry(TXN, action)
        metadata = read_metadata(entry)
        assert verify_checksum(entry) and bytes(payload_of(entry)) == b""
        assert metadata.marker_type == marker_type and is_txn_marker(metadata) and txn_of(metadata) == TXN
        assert metadata.producer_name == "pulsar.txn.marker"


def test_the_id_is_written_into_metadata_that_lacks_it():
    entry = make_entry(pb.MessageMetadata(producer_name="go", sequence_id=7, publish_time=1,
                                          properties=[pb.KeyValue(key="k", value="v")]), b"payload")
    rewritten = with_txn_id(entry, TXN)
    metadata = read_metadata(rewritten)
    assert txn_of(metadata) == TXN and not is_txn_marker(metadata)
    assert metadata.sequence_id == 7 and metadata.properties[0].value == "v"
    assert bytes(payload_of(rewritten)) == b"payload" and verify_checksum(rewritten)


def test_an_entry_that_carries_the_id_is_stored_unchanged():
    entry = make_entry(pb.MessageMetadata(producer_name="java", sequence_id=1, publish_time=1,
                                          txnid_most_bits=3, txnid_least_bits=42), b"x")
    assert with_txn_id(entry, TXN) is entry


def test_snapshot_records_read_back():
    topic = TopicName.parse("persistent://public/default/t")
    snapshot = Snapshot(Position(5, 9), {TXN: Position(5, 3), TxnID(0, 1): Position(4, 0)})
    assert decode(encode(topic, 1, snapshot)) == (str(topic), snapshot)
    assert decode(encode_removal(topic)) == (str(topic), None)
    assert decode(b"not json") is None
