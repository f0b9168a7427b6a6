"""Transactional acknowledgements over the bare protocol (the Python client has no transactions
API): a consumer that acknowledges in a transaction and reads ACK_RESPONSE, and the
END_TXN_ON_SUBSCRIPTION a coordinator sends."""

from __future__ import annotations

from compat_tests.raw_consumer import RawConsumer
from compat_tests.raw_requests import replies
from protocol import pulsar_api_pb2 as pb

Cmd = pb.BaseCommand
Entry = tuple[int, int]


class TxnConsumer(RawConsumer):
    """A RawConsumer that acknowledges in transactions (txn = (most bits, least bits))."""

    _request_id = 100

    def ack(self, entries: list[Entry], txn: tuple[int, int] | None, cumulative: bool = False,
            ack_set: list[int] | None = None, batch_size: int | None = None) -> pb.CommandAckResponse:
        """ACK with a request id; its ACK_RESPONSE (MESSAGE frames meanwhile are kept)."""
        self._request_id += 1
        ids = []
        for ledger_id, entry_id in entries:
            message_id = pb.MessageIdData(ledgerId=ledger_id, entryId=entry_id, ack_set=ack_set or [])
            if batch_size is not None:
                message_id.batch_size = batch_size
            ids.append(message_id)
        ack = pb.CommandAck(consumer_id=1, message_id=ids, request_id=self._request_id,
                            ack_type=pb.CommandAck.Cumulative if cumulative else pb.CommandAck.Individual)
        if txn is not None:
            ack.txnid_most_bits, ack.txnid_least_bits = txn
        self._send(Cmd(type=Cmd.ACK, ack=ack))
        early = []
        while (frame := self.next_frame(5.0)) is not None:
            if frame.command.type == Cmd.ACK_RESPONSE:
                self.pending = early + self.pending
                return frame.command.ackResponse
            early.append(frame)
        raise AssertionError("no ACK_RESPONSE within 5s")

    def received(self, quiet_s: float = 0.5) -> list[tuple[Entry, list[int]]]:
        """Every MESSAGE until quiet_s passes without one: its entry and ack set."""
        return [((m.message.message_id.ledgerId, m.message.message_id.entryId), list(m.message.ack_set))
                for m in self.collect(Cmd.MESSAGE, quiet_s)]

    def entries(self, quiet_s: float = 0.5) -> list[Entry]:
        return [entry for entry, _ in self.received(quiet_s)]


def end_txn_on_subscription(broker, topic: str, subscription: str, txn: tuple[int, int],
                            action: int) -> pb.CommandEndTxnOnSubscriptionResponse:
    """As Pulsar's coordinator sends it (Pulsar refuses it without a low watermark; 0 ends no
    other transaction)."""
    request = pb.CommandEndTxnOnSubscription(
        request_id=7, txnid_most_bits=txn[0], txnid_least_bits=txn[1], txn_action=action,
        subscription=pb.Subscription(topic=topic, subscription=subscription), txnid_least_bits_of_low_watermark=0)
    (reply,) = replies(broker, Cmd(type=Cmd.END_TXN_ON_SUBSCRIPTION, endTxnOnSubscription=request))
    assert reply.type == Cmd.END_TXN_ON_SUBSCRIPTION_RESPONSE, Cmd.Type.Name(reply.type)
    return reply.endTxnOnSubscriptionResponse
