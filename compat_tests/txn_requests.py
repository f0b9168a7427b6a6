"""Bare transactional requests for the transaction buffer's tests: a producer whose SENDs carry
a transaction id on CommandSend only (as the Go client v0.19.0 sends them; the Java client also
writes it into the metadata), END_TXN_ON_PARTITION as a coordinator sends it, and
GET_LAST_MESSAGE_ID through a bare consumer."""

from __future__ import annotations

import itertools
import time

from compat_tests.raw_consumer import RawConsumer
from compat_tests.raw_requests import RawConnection
from protocol import pulsar_api_pb2 as pb
from protocol.codec import encode_payload_frame
from protocol.entry import make_entry

Cmd = pb.BaseCommand
COMMIT, ABORT = pb.COMMIT, pb.ABORT


class TxnProducer:
    """One bare connection with one producer on `topic`."""

    def __init__(self, broker, topic: str, name: str = "txn-producer", java_style: bool = False) -> None:
        """java_style: as the Java client, txn_enabled on PRODUCER and the transaction's id in each
        message's metadata too (else as the Go client v0.19.0: on CommandSend only)."""
        self.java_style = java_style
        self.raw = RawConnection(broker.broker_port)
        connected = self.raw.connect(pb.CommandConnect(client_version="compat", protocol_version=21))
        assert connected is not None and connected.type == Cmd.CONNECTED
        self.topic = topic
        self.name = name
        self._ids = itertools.count(1)
        self._sequence = itertools.count()
        lookup = self.call(Cmd(type=Cmd.LOOKUP, lookupTopic=pb.CommandLookupTopic(
            topic=topic, request_id=next(self._ids))))   # a broker serves a topic once looked up
        assert lookup.type == Cmd.LOOKUP_RESPONSE, lookup
        answer = self.call(Cmd(type=Cmd.PRODUCER, producer=pb.CommandProducer(
            topic=topic, producer_id=1, request_id=next(self._ids), producer_name=name, txn_enabled=java_style)))
        assert answer.type == Cmd.PRODUCER_SUCCESS, answer

    def call(self, command: Cmd, entry: bytes | None = None) -> Cmd:
        self.raw.send(command, entry)
        answer = self.raw.receive()
        assert answer is not None, "the broker closed the connection"
        return answer

    def send(self, payload: bytes, txn: tuple[int, int] | None = None, in_metadata: bool = False) -> Cmd:
        """SEND_RECEIPT or SEND_ERROR; the txn id on the command (and in the metadata if asked)."""
        self.send_only(payload, txn, in_metadata)
        answer = self.raw.receive()
        assert answer is not None, "the broker closed the connection"
        return answer

    def send_only(self, payload: bytes, txn: tuple[int, int] | None = None, in_metadata: bool = False) -> None:
        """A SEND whose answer is left to read (raw.receive())."""
        self.raw.send(*self._send_frame(payload, txn, in_metadata))

    def send_together(self, sends: list[tuple[bytes, tuple[int, int] | None]]) -> None:
        """SENDs (payload, txn) in one write, so the broker reads them at once; answers left to read."""
        self.raw._sock.sendall(b"".join(b"".join(encode_payload_frame(*self._send_frame(payload, txn)))
                                        for payload, txn in sends))

    def _send_frame(self, payload: bytes, txn: tuple[int, int] | None,
                    in_metadata: bool = False) -> tuple[Cmd, bytes]:
        sequence_id = next(self._sequence)
        metadata = pb.MessageMetadata(producer_name=self.name, sequence_id=sequence_id,
                                      publish_time=int(time.time() * 1000))
        send = pb.CommandSend(producer_id=1, sequence_id=sequence_id)
        if txn is not None:
            send.txnid_most_bits, send.txnid_least_bits = txn
            if in_metadata or self.java_style:
                metadata.txnid_most_bits, metadata.txnid_least_bits = txn
        return Cmd(type=Cmd.SEND, send=send), make_entry(metadata, payload)

    def sent(self, payload: bytes, txn: tuple[int, int] | None = None) -> tuple[int, int]:
        answer = self.send(payload, txn)
        assert answer.type == Cmd.SEND_RECEIPT, answer
        return answer.send_receipt.message_id.ledgerId, answer.send_receipt.message_id.entryId

    def end(self, txn: tuple[int, int], action: int, topic: str | None = None) -> pb.CommandEndTxnOnPartitionResponse:
        """END_TXN_ON_PARTITION, as a coordinator on another broker sends it."""
        return self.call(Cmd(type=Cmd.END_TXN_ON_PARTITION, endTxnOnPartition=pb.CommandEndTxnOnPartition(
            request_id=next(self._ids), topic=topic or self.topic, txnid_most_bits=txn[0],
            txnid_least_bits=txn[1], txn_action=action, txnid_least_bits_of_low_watermark=0))).endTxnOnPartitionResponse

    def close(self) -> None:
        self.raw.close()


def last_message_id(broker, topic: str) -> tuple[int, int]:
    """GET_LAST_MESSAGE_ID's (ledger, entry), from a bare consumer."""
    consumer = RawConsumer(broker, topic, "last-id-probe", pb.Exclusive, "probe")
    try:
        consumer._send(Cmd(type=Cmd.GET_LAST_MESSAGE_ID, getLastMessageId=pb.CommandGetLastMessageId(
            consumer_id=1, request_id=77)))
        answer = consumer.expect(Cmd.GET_LAST_MESSAGE_ID_RESPONSE).getLastMessageIdResponse
        signed = [value - (1 << 64) if value >= 1 << 63 else value
                  for value in (answer.last_message_id.ledgerId, answer.last_message_id.entryId)]
        return signed[0], signed[1]
    finally:
        consumer.close()
