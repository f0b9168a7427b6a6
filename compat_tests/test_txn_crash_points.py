"""kill -9 while a coordinator ends a transaction, between its participants: after one of two
partitions (or the subscription) has ended it and before the others have. After the restart
the coordinator finishes the end: a commit's messages are all visible exactly once on both
topics and its acks kept; an abort's messages never delivered and its acks undone."""

from __future__ import annotations

import pulsar
import pytest

from compat_tests.helpers import unique_topic
from compat_tests.raw_txn import TxnConsumer
from compat_tests.test_transaction_buffer import TXN_CONFIG, until
from compat_tests.test_transactions_coordinator import Coordinator
from compat_tests.txn_requests import TxnProducer
from protocol import pulsar_api_pb2 as pb
from server.transactions.coordinator.service import CRASH_AFTER_A_PARTICIPANT

Cmd = pb.BaseCommand


def readable(client: pulsar.Client, topic: str) -> list[bytes]:
    """Every message a reader from the earliest position gets."""
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    got = []
    try:
        while reader.has_message_available():
            got.append(reader.read_next(timeout_millis=5000).data())
    finally:
        reader.close()
    return got


@pytest.mark.parametrize("action", [pb.COMMIT, pb.ABORT], ids=["commit", "abort"])
def test_kill9_between_participants(make_broker, connect, monkeypatch, action):
    monkeypatch.setenv("PULSARD_CRASH_AT", CRASH_AFTER_A_PARTICIPANT)
    broker = make_broker(TXN_CONFIG)
    source = f"persistent://public/default/{unique_topic('in')}"
    outputs = [f"persistent://public/default/{unique_topic(f'out{i}')}" for i in range(2)]

    plain = TxnProducer(broker, source, name="feeder")
    plain.send(b"input")
    plain.close()
    consumer = TxnConsumer(broker, source, "sub", pb.CommandSubscribe.Exclusive, "c")
    consumer.flow(10)
    (entry,) = consumer.entries()

    tc = Coordinator(broker)
    txn = tc.begin()
    producers = [TxnProducer(broker, topic, name=f"p{i}") for i, topic in enumerate(outputs)]
    for topic, producer in zip(outputs, producers):
        assert tc.add_partition(txn, topic).error == 0
        assert producer.send(b"out of " + topic.encode(), txn).type == Cmd.SEND_RECEIPT
    assert tc.add_subscription(txn, source, "sub").error == 0
    assert consumer.ack([entry], txn).error == 0

    tc.raw.send(Cmd(type=Cmd.END_TXN, endTxn=pb.CommandEndTxn(request_id=1000, txnid_most_bits=txn[0],
                                                               txnid_least_bits=txn[1], txn_action=action)))
    assert tc.raw.receive() is None, "the broker answered END_TXN instead of crashing"
    broker.proc.wait(timeout=10)
    for closing in (tc, consumer, *producers):
        closing.close()
    monkeypatch.delenv("PULSARD_CRASH_AT")
    broker.restart()

    client = connect(broker)
    committed = action == pb.COMMIT
    for topic in outputs:
        expected = [b"out of " + topic.encode()] if committed else []
        until(lambda: readable(client, topic) == expected,
              f"{topic} shows what the {'commit' if committed else 'abort'} left, once")
    again = TxnConsumer(broker, source, "sub", pb.CommandSubscribe.Exclusive, "c2")
    try:
        again.flow(10)
        assert again.entries() == ([] if committed else [entry]), "a committed ack kept, an aborted one undone"
    finally:
        again.close()
