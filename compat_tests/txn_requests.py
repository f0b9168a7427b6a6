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
from protocol.entry import make_entry

Cmd = pb.BaseCommand
COMMIT, ABORT = pb.COMMIT, pb.ABORT


class TxnProducer:
    """One bare connection with one producer on `topic`."""

    def __init__(self, broker, topic: str, name: str = "txn-producer") -> None:
        self.raw = RawConnection(broker.broker_port)
        connected = self.raw.connect(pb.CommandConnect(client_version="compat", protocol_version=21))
        assert connected is not None and connected.type == Cmd.CONNECTED
        self.topic = topic
        self.name = name
        self._ids = itertools.count(1)
        self._sequence = itertools.count()
        answer = self.call(Cmd(type=Cmd.PRODUCER, producer=pb.CommandProducer(
            topic=topic, producer_id=1, request_id=next(self._ids), producer_name=name)))
        assert answer.type == Cmd.PRODUCER_SUCCESS, answer

    def call(self, command: Cmd, entry: bytes | None = None) -> Cmd:
        self.raw.send(command, entry)
        answer = self.raw.receive()
        assert answer is not None, "the broker closed the connection"
        return answer

    def send(self, payload: bytes, txn: tuple[int, int] | None = None, in_metadata: bool = False) -> Cmd:
        """SEND_RECEIPT or SEND_ERROR; the txn id on the command (and in the metadata if asked)."""
        sequence_id = next(self._sequence)
        metadata = pb.MessageMetadata(producer_name=self.name, sequence_id=sequence_id,
                                      publish_time=int(time.time() * 1000))
        send = pb.CommandSend(producer_id=1, sequence_id=sequence_id)
        if txn is not None:
            send.txnid_most_bits, send.txnid_least_bits = txn
            if in_metadata:
                metadata.txnid_most_bits, metadata.txnid_least_bits = txn
        return self.call(Cmd(type=Cmd.SEND, send=send), make_entry(metadata, payload))

    def sent(self, payload: bytes, txn: tuple[int, int] | None = None) -> tuple[int, int]:
        answer = self.send(payload, txn)
        assert answer.type == Cmd.SEND_RECEIPT, answer
        return answer.send_receipt.message_id.ledgerId, answer.send_receipt.message_id.entryId

    def end(self, txn: tuple[int, int], action: int, topic: str | None = None) -> pb.CommandEndTxnOnPartitionResponse:
        """END_TXN_ON_PARTITION, as a coordinator on another broker sends it."""
        return self.call(Cmd(type=Cmd.END_TXN_ON_PARTITION, endTxnOnPartition=pb.CommandEndTxnOnPartition(
            request_id=next(self._ids), topic=topic or self.topic, txnid_most_bits=txn[0],
            txnid_least_bits=txn[1], txn_action=action))).endTxnOnPartitionResponse

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
