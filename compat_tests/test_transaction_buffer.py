"""The transaction buffer (transactionCoordinatorEnabled=true) over bare requests: transactional
SENDs carrying their id on CommandSend only (as the Go client sends them), ended by
END_TXN_ON_PARTITION (what a coordinator sends), read by the official Python client's consumers
and readers: committed messages delivered once and in order, aborted ones never, markers never;
the max-read position holding later messages behind an open transaction; restarts and kill -9
at each step. The Java and Go clients' own transactions are in test_transactions_e2e.py.
"""

from __future__ import annotations

import pulsar
import pytest

from compat_tests.admin_http import AdminHttp
from compat_tests.helpers import QUIET_MS, expect_nothing, read_all, receive_n, unique_topic
from compat_tests.txn_requests import ABORT, COMMIT, TxnProducer, last_message_id
from protocol import pulsar_api_pb2 as pb

TXN_CONFIG = {"transactionCoordinatorEnabled": "true"}
TXN_A, TXN_B, TXN_C = (0, 101), (0, 102), (1, 103)


@pytest.fixture(scope="module")
def txn_broker(tmp_path_factory):
    from compat_tests.conftest import _broker_fixture
    yield from _broker_fixture(tmp_path_factory, "txn-buffer", TXN_CONFIG)


@pytest.fixture
def producer(txn_broker):
    made = TxnProducer(txn_broker, f"persistent://public/default/{unique_topic('txn')}")
    yield made
    made.close()


def subscribe(client: pulsar.Client, topic: str, sub: str = "sub") -> pulsar.Consumer:
    return client.subscribe(topic, sub, initial_position=pulsar.InitialPosition.Earliest,
                            consumer_type=pulsar.ConsumerType.Shared)


def received(consumer: pulsar.Consumer, n: int) -> list[bytes]:
    return [m.data() for m in receive_n(consumer, n, ack=True)]


def keep(client: pulsar.Client, topic: str) -> None:
    """A subscription that consumes nothing until `everything`: it keeps the ledgers from being
    trimmed once the others acknowledged all."""
    subscribe(client, topic, "audit").close()


def everything(client: pulsar.Client, topic: str, n: int) -> list[bytes]:
    """All `keep`'s subscription gets, which must be n messages and no more."""
    consumer = subscribe(client, topic, "audit")
    got = received(consumer, n)
    expect_nothing(consumer)
    consumer.close()
    return got


def test_committed_are_delivered_in_order_aborted_never(txn_broker, producer, connect):
    consumer = subscribe(connect(txn_broker), producer.topic)
    producer.sent(b"a1", TXN_A)
    producer.sent(b"b1", TXN_B)
    producer.sent(b"a2", TXN_A)
    producer.sent(b"c1", TXN_C)
    assert producer.end(TXN_B, ABORT).error == 0
    assert producer.end(TXN_A, COMMIT).error == 0
    assert producer.end(TXN_C, COMMIT).error == 0
    assert received(consumer, 3) == [b"a1", b"a2", b"c1"]
    expect_nothing(consumer)
    assert read_all(connect(txn_broker), producer.topic) == [b"a1", b"a2", b"c1"]


def test_an_open_transaction_holds_later_messages_back(txn_broker, producer, connect):
    """As Pulsar: nothing after the first entry of an open transaction is delivered, plain
    messages included, nor reported by GET_LAST_MESSAGE_ID, until it ends."""
    consumer = subscribe(connect(txn_broker), producer.topic)
    first = producer.sent(b"p0")
    producer.sent(b"a1", TXN_A)
    producer.sent(b"p1")
    assert received(consumer, 1) == [b"p0"]
    expect_nothing(consumer)
    assert last_message_id(txn_broker, producer.topic) == first
    assert producer.end(TXN_A, COMMIT).error == 0
    assert received(consumer, 2) == [b"a1", b"p1"]
    assert last_message_id(txn_broker, producer.topic)[1] == first[1] + 2   # p1, not the marker after it


def test_aborted_transaction_releases_what_follows_it(txn_broker, producer, connect):
    consumer = subscribe(connect(txn_broker), producer.topic)
    producer.sent(b"b1", TXN_B)
    p1 = producer.sent(b"p1")
    producer.sent(b"b2", TXN_B)
    expect_nothing(consumer)
    assert producer.end(TXN_B, ABORT).error == 0
    assert received(consumer, 1) == [b"p1"]
    expect_nothing(consumer)
    assert last_message_id(txn_broker, producer.topic) == p1
    assert read_all(connect(txn_broker), producer.topic) == [b"p1"]


def test_id_in_the_metadata_too_as_the_java_client_writes_it(txn_broker, producer, connect):
    assert producer.send(b"b1", TXN_B, in_metadata=True).type == pb.BaseCommand.SEND_RECEIPT
    assert producer.send(b"a1", TXN_A, in_metadata=True).type == pb.BaseCommand.SEND_RECEIPT
    producer.end(TXN_B, ABORT)
    producer.end(TXN_A, COMMIT)
    assert read_all(connect(txn_broker), producer.topic) == [b"a1"]


def test_ends_are_idempotent_and_final(txn_broker, producer):
    producer.sent(b"a1", TXN_A)
    producer.sent(b"b1", TXN_B)
    assert producer.end(TXN_A, COMMIT).error == 0
    assert producer.end(TXN_A, COMMIT).error == 0
    assert producer.end(TXN_B, ABORT).error == 0
    assert producer.end(TXN_B, ABORT).error == 0
    assert producer.end((7, 7), COMMIT).error == 0   # never seen here: nothing to end
    assert producer.end((7, 8), ABORT).error == 0
    refused = producer.end(TXN_B, COMMIT)
    assert refused.error == pb.InvalidTxnStatus, refused
    assert producer.end(TXN_A, ABORT).error == pb.InvalidTxnStatus
    for txn in (TXN_A, TXN_B, (7, 7)):   # as Pulsar: a SEND for an ended transaction is refused
        answer = producer.send(b"late", txn)
        assert answer.type == pb.BaseCommand.SEND_ERROR and answer.send_error.error == pb.NotAllowedError
        assert "has been ended" in answer.send_error.message


def test_end_on_a_topic_that_does_not_exist_succeeds(txn_broker, producer):
    answer = producer.end(TXN_A, COMMIT, topic=f"persistent://public/default/{unique_topic('none')}")
    assert answer.error == 0 and (answer.txnid_most_bits, answer.txnid_least_bits) == TXN_A


def test_plain_topics_take_no_snapshot_and_transactional_ones_do(txn_broker, producer):
    admin = AdminHttp(txn_broker.web_url)
    path = f"/admin/v3/transactions/transactionBufferStats/{producer.topic.removeprefix('persistent://')}"
    producer.sent(b"p0")
    stats = admin.get(path).json()
    assert stats["state"] == "NoSnapshot" and stats["ongoingTxnSize"] == 0
    a1 = producer.sent(b"a1", TXN_A)
    stats = admin.get(path).json()
    assert stats["state"] == "Ready" and stats["ongoingTxnSize"] == 1
    assert stats["maxReadPosition"] == f"{a1[0]}:{a1[1] - 1}"
    in_buffer = admin.get(f"/admin/v3/transactions/transactionInBufferStats/{producer.topic.removeprefix('persistent://')}"
                          f"/{TXN_A[0]}/{TXN_A[1]}").json()
    assert in_buffer == {"startPosition": f"{a1[0]}:{a1[1]}", "aborted": False}


def test_disabled_transactions_refuse_transactional_sends(broker):
    producer = TxnProducer(broker, f"persistent://public/default/{unique_topic('off')}")
    try:
        answer = producer.send(b"a1", TXN_A)
        assert answer.type == pb.BaseCommand.SEND_ERROR and answer.send_error.error == pb.NotAllowedError
        assert producer.sent(b"p1")   # the producer goes on
        refused = producer.end(TXN_A, COMMIT)
        assert refused.error == pb.NotAllowedError and refused.message == "Transactions are not enabled."
    finally:
        producer.close()


# -- restarts and kill -9 ---------------------------------------------------------------------

def _topic() -> str:
    return f"persistent://public/default/{unique_topic('crash')}"


def _end_and_crash(producer: TxnProducer, txn: tuple[int, int], action: int, broker) -> None:
    """END_TXN_ON_PARTITION on a broker set to die at a crash point on its way."""
    producer.raw.send(pb.BaseCommand(type=pb.BaseCommand.END_TXN_ON_PARTITION,
                                     endTxnOnPartition=pb.CommandEndTxnOnPartition(
                                         request_id=999, topic=producer.topic, txnid_most_bits=txn[0],
                                         txnid_least_bits=txn[1], txn_action=action)))
    broker.proc.wait(timeout=10)
    producer.close()


def test_open_transactions_survive_restart_and_kill9(make_broker, connect):
    broker = make_broker(TXN_CONFIG)
    topic = _topic()
    producer = TxnProducer(broker, topic)
    keep(connect(broker), topic)
    producer.sent(b"p0")
    producer.sent(b"a1", TXN_A)
    producer.sent(b"b1", TXN_B)
    producer.sent(b"p1")
    producer.sent(b"a2", TXN_A)
    producer.close()
    broker.restart()
    broker.kill9()
    broker.restart()
    consumer = subscribe(connect(broker), topic)
    assert received(consumer, 1) == [b"p0"]
    expect_nothing(consumer)
    producer = TxnProducer(broker, topic)
    try:
        assert producer.end(TXN_B, ABORT).error == 0
        expect_nothing(consumer)   # A is still open
        assert producer.end(TXN_A, COMMIT).error == 0
        assert received(consumer, 3) == [b"a1", b"p1", b"a2"]
        expect_nothing(consumer)
        broker.kill9()
        broker.restart()
        expect_nothing(consumer)
        assert everything(connect(broker), topic, 4) == [b"p0", b"a1", b"p1", b"a2"]
    finally:
        producer.close()


@pytest.mark.parametrize("action", [COMMIT, ABORT], ids=["commit", "abort"])
def test_kill9_right_after_the_marker_is_written(make_broker, connect, monkeypatch, action):
    monkeypatch.setenv("PULSARD_CRASH_AT", "txn-buffer-after-marker")
    broker = make_broker(TXN_CONFIG)
    topic = _topic()
    producer = TxnProducer(broker, topic)
    keep(connect(broker), topic)
    producer.sent(b"a1", TXN_A)
    producer.sent(b"p1")
    _end_and_crash(producer, TXN_A, action, broker)
    monkeypatch.delenv("PULSARD_CRASH_AT")
    broker.restart()
    expected = [b"a1", b"p1"] if action == COMMIT else [b"p1"]
    consumer = subscribe(connect(broker), topic)
    assert received(consumer, len(expected)) == expected
    expect_nothing(consumer)
    producer = TxnProducer(broker, topic)
    try:
        assert producer.end(TXN_A, action).error == 0   # the coordinator's retry: nothing more
        assert producer.end(TXN_A, ABORT if action == COMMIT else COMMIT).error == pb.InvalidTxnStatus
        expect_nothing(consumer)
        assert everything(connect(broker), topic, len(expected)) == expected
    finally:
        producer.close()


@pytest.mark.parametrize("point", ["txn-buffer-before-snapshot", "txn-buffer-after-snapshot"])
def test_kill9_during_a_snapshot(make_broker, connect, monkeypatch, point):
    """A snapshot after every move of the max-read position: the abort's one dies before or
    after it is written; either way the restart hides the aborted entries and keeps the rest."""
    monkeypatch.setenv("PULSARD_CRASH_AT", point)
    broker = make_broker({**TXN_CONFIG, "transactionBufferSnapshotMaxTransactionCount": "1"})
    topic = _topic()
    producer = TxnProducer(broker, topic)
    keep(connect(broker), topic)
    producer.sent(b"b1", TXN_B)   # the first snapshot is taken before it is stored
    producer.sent(b"p1")
    _end_and_crash(producer, TXN_B, ABORT, broker)
    monkeypatch.delenv("PULSARD_CRASH_AT")
    broker.restart()
    producer = TxnProducer(broker, topic)
    try:
        producer.sent(b"a1", TXN_A)
        assert producer.end(TXN_A, COMMIT).error == 0
        consumer = subscribe(connect(broker), topic)
        assert received(consumer, 2) == [b"p1", b"a1"]
        expect_nothing(consumer)
        broker.restart()   # recovered from the snapshots written since
        expect_nothing(consumer)
        assert everything(connect(broker), topic, 2) == [b"p1", b"a1"]
    finally:
        producer.close()
