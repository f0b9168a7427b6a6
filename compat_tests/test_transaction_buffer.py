"""The transaction buffer (transactionCoordinatorEnabled=true) over bare requests: transactional
SENDs carrying their id on CommandSend only (as the Go client sends them), ended by
END_TXN_ON_PARTITION (what a coordinator sends), read by the official Python client's consumers
and readers: committed messages delivered once and in order, aborted ones never, markers never;
the max-read position holding later messages behind an open transaction; restarts and kill -9
at each step. The Java and Go clients' own transactions are in test_transactions_e2e.py.
"""

from __future__ import annotations

import time

import pulsar
import pytest

from compat_tests.admin_http import AdminHttp
from compat_tests.helpers import expect_nothing, read_all, receive_n, unique_topic
from compat_tests.txn_requests import ABORT, COMMIT, TxnProducer, last_message_id
from protocol import pulsar_api_pb2 as pb
from protocol.codec import encode_command, encode_payload_frame

TXN_CONFIG = {"transactionCoordinatorEnabled": "true"}
TXN_A, TXN_B, TXN_C = (0, 101), (0, 102), (1, 103)
POLL_S = 15


def until(condition, what: str) -> None:
    deadline = time.monotonic() + POLL_S
    while not condition():
        assert time.monotonic() < deadline, f"not within {POLL_S} s: {what}"
        time.sleep(0.2)


@pytest.fixture(scope="module")
def txn_broker(tmp_path_factory):
    from compat_tests.conftest import _broker_fixture
    yield from _broker_fixture(tmp_path_factory, "txn-buffer", TXN_CONFIG)


@pytest.fixture(params=["go", "java"])
def producer(txn_broker, request):
    """A bare producer sending as the Go client v0.19.0 (the transaction's id on CommandSend
    only) or as the Java client (in the metadata too; what Apache Pulsar 3.0.7 reads)."""
    made = TxnProducer(txn_broker, f"persistent://public/default/{unique_topic('txn')}",
                       java_style=request.param == "java")
    yield made
    made.close()


@pytest.fixture
def go_producer(txn_broker):
    """For what does not depend on where the id is: as the Go client."""
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
    metrics = AdminHttp(txn_broker.web_url).get("/metrics").text
    labels = f'cluster="standalone",namespace="public/default",topic="{producer.topic}"'
    for name, value in (("active", 0), ("committed", 2), ("aborted", 1)):
        assert f"pulsar_txn_tb_{name}_total{{{labels}}} {value}" in metrics


def test_an_open_transaction_holds_later_messages_back(txn_broker, producer, connect):
    """As Pulsar: nothing after the first entry of an open transaction is delivered, plain
    messages included, nor reported by GET_LAST_MESSAGE_ID, until it ends."""
    plain = [producer.sent(b"p%d" % n) for n in range(3)]
    producer.sent(b"a1", TXN_A)
    producer.sent(b"p3")
    consumer = subscribe(connect(txn_broker), producer.topic)   # its reads cross the max-read position
    assert received(consumer, 3) == [b"p0", b"p1", b"p2"]
    expect_nothing(consumer)
    assert last_message_id(txn_broker, producer.topic) == plain[-1]
    topic_path = producer.topic.removeprefix("persistent://")
    stats = AdminHttp(txn_broker.web_url).get(f"/admin/v2/persistent/{topic_path}/stats")
    assert stats.json()["subscriptions"]["sub"]["msgBacklog"] == 2   # as Pulsar: to the last entry (a1, p3)
    assert producer.end(TXN_A, COMMIT).error == 0
    assert received(consumer, 2) == [b"a1", b"p3"]
    assert last_message_id(txn_broker, producer.topic)[1] == plain[-1][1] + 2   # p3, not the marker after it


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


def test_receipts_keep_their_order_while_the_first_snapshot_is_taken(txn_broker, go_producer):
    """The first transactional SEND of a topic waits for its first snapshot; the plain SENDs
    behind it wait too, so a producer's receipts come in its order."""
    go_producer.send_together([(b"a1", TXN_A)] + [(b"p%d" % n, None) for n in range(5)])
    receipts = [go_producer.raw.receive() for _ in range(6)]
    assert [r.send_receipt.sequence_id for r in receipts] == list(range(6)), receipts
    positions = [(r.send_receipt.message_id.ledgerId, r.send_receipt.message_id.entryId) for r in receipts]
    assert positions == sorted(positions)


def test_an_end_waits_for_the_sends_it_follows(txn_broker, producer, connect):
    """An abort read together with the transaction's first SEND (which waits for the topic's
    first snapshot) is applied after it: the message is aborted, never delivered."""
    command, entry = producer._send_frame(b"b1", TXN_B)
    end = pb.BaseCommand(type=pb.BaseCommand.END_TXN_ON_PARTITION, endTxnOnPartition=pb.CommandEndTxnOnPartition(
        request_id=500, topic=producer.topic, txnid_most_bits=TXN_B[0], txnid_least_bits=TXN_B[1], txn_action=ABORT,
        txnid_least_bits_of_low_watermark=0))
    producer.raw._sock.sendall(b"".join(encode_payload_frame(command, entry)) + encode_command(end))
    answers = {answer.type: answer for answer in (producer.raw.receive(), producer.raw.receive())}
    assert answers[pb.BaseCommand.SEND_RECEIPT] and answers[pb.BaseCommand.END_TXN_ON_PARTITION_RESPONSE]
    assert answers[pb.BaseCommand.END_TXN_ON_PARTITION_RESPONSE].endTxnOnPartitionResponse.error == 0
    producer.sent(b"p1")
    assert read_all(connect(txn_broker), producer.topic) == [b"p1"]


def test_ends_are_idempotent_and_final(txn_broker, go_producer):
    go_producer.sent(b"a1", TXN_A)
    go_producer.sent(b"b1", TXN_B)
    assert go_producer.end(TXN_A, COMMIT).error == 0
    assert go_producer.end(TXN_A, COMMIT).error == 0
    assert go_producer.end(TXN_B, ABORT).error == 0
    assert go_producer.end(TXN_B, ABORT).error == 0
    assert go_producer.end((7, 7), COMMIT).error == 0   # never seen here: nothing to end
    assert go_producer.end((7, 8), ABORT).error == 0
    # as Pulsar's buffer: an end the other way succeeds and changes nothing (its coordinator
    # never sends one)
    assert go_producer.end(TXN_B, COMMIT).error == 0
    assert go_producer.end(TXN_A, ABORT).error == 0
    # A SEND for a transaction ended here is refused in Pulsar's words; Pulsar 3.0.7 refuses only
    # those at or under its coordinator's low watermark, and would take this one as a new open
    # transaction that nothing ends any more, holding the topic back.
    for txn in (TXN_A, TXN_B, (7, 7)):
        answer = go_producer.send(b"late", txn)
        assert answer.type == pb.BaseCommand.SEND_ERROR and answer.send_error.error == pb.NotAllowedError
        assert "has been ended" in answer.send_error.message


def test_end_on_a_topic_that_does_not_exist_succeeds(txn_broker, go_producer):
    answer = go_producer.end(TXN_A, COMMIT, topic=f"persistent://public/default/{unique_topic('none')}")
    assert answer.error == 0 and (answer.txnid_most_bits, answer.txnid_least_bits) == TXN_A


def test_plain_topics_take_no_snapshot_and_transactional_ones_do(txn_broker, go_producer):
    admin = AdminHttp(txn_broker.web_url)
    topic_path = go_producer.topic.removeprefix("persistent://")
    path = f"/admin/v3/transactions/transactionBufferStats/{topic_path}"
    go_producer.sent(b"p0")
    stats = admin.get(path).json()
    assert stats["state"] == "NoSnapshot" and stats["ongoingTxnSize"] == 0
    a1 = go_producer.sent(b"a1", TXN_A)
    stats = admin.get(path).json()
    assert stats["state"] == "Ready" and stats["ongoingTxnSize"] == 1
    assert stats["maxReadPosition"] == f"{a1[0]}:{a1[1] - 1}"
    in_buffer = admin.get(f"/admin/v3/transactions/transactionInBufferStats/{topic_path}/{TXN_A[0]}/{TXN_A[1]}").json()
    assert in_buffer == {"startPosition": f"{a1[0]}:{a1[1]}", "aborted": False}
    go_producer.close()
    assert admin.delete(f"/admin/v2/persistent/{topic_path}", force="true").status_code == 204
    again = TxnProducer(txn_broker, go_producer.topic)   # made again under that name: a plain topic
    try:
        again.sent(b"p0")
        assert admin.get(path).json()["state"] == "NoSnapshot"
    finally:
        again.close()


def test_non_persistent_topics_refuse_transactional_sends(txn_broker):
    producer = TxnProducer(txn_broker, f"non-persistent://public/default/{unique_topic('np')}")
    try:
        answer = producer.send(b"a1", TXN_A)
        assert answer.type == pb.BaseCommand.SEND_ERROR and answer.send_error.error == pb.NotAllowedError
        assert producer.sent(b"p1")
    finally:
        producer.close()


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
        assert producer.end(TXN_A, ABORT if action == COMMIT else COMMIT).error == 0   # changes nothing
        expect_nothing(consumer)
        assert everything(connect(broker), topic, len(expected)) == expected
    finally:
        producer.close()


def test_kill9_after_the_first_snapshot_before_the_first_entry(make_broker, connect, monkeypatch):
    """The first transactional SEND dies between the topic's first snapshot and its entry: the
    client had no receipt (it sends again), and the topic goes on, plain and transactional."""
    monkeypatch.setenv("PULSARD_CRASH_AT", "txn-buffer-after-first-snapshot")
    broker = make_broker(TXN_CONFIG)
    topic = _topic()
    producer = TxnProducer(broker, topic)
    producer.sent(b"p0")
    producer.send_only(b"a1", TXN_A)
    assert producer.raw.receive() is None, "the broker answered instead of crashing"
    broker.proc.wait(timeout=10)
    producer.close()
    monkeypatch.delenv("PULSARD_CRASH_AT")
    broker.restart()
    producer = TxnProducer(broker, topic)
    try:
        producer.sent(b"a1", TXN_A)
        producer.sent(b"p1")
        consumer = subscribe(connect(broker), topic)
        assert received(consumer, 1) == [b"p0"]
        expect_nothing(consumer)
        assert producer.end(TXN_A, COMMIT).error == 0
        assert received(consumer, 2) == [b"a1", b"p1"]
        expect_nothing(consumer)
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


def test_aborted_transactions_are_forgotten_with_their_trimmed_ledgers(make_broker, connect):
    broker = make_broker({**TXN_CONFIG, "managedLedgerMaxEntriesPerLedger": "2",
                          "managedLedgerMinLedgerRolloverTimeMinutes": "0",
                          "transactionBufferSnapshotMaxTransactionCount": "1"})
    topic = _topic()
    admin = AdminHttp(broker.web_url)
    path = f"/admin/v3/transactions/transactionBufferStats/{topic.removeprefix('persistent://')}"
    producer = TxnProducer(broker, topic)
    try:
        consumer = subscribe(connect(broker), topic)
        producer.sent(b"b1", TXN_B)
        assert producer.end(TXN_B, ABORT).error == 0
        assert admin.get(path).json()["totalAbortedTransactions"] == 1
        for n in range(6):   # consumed: their ledgers, and the aborted one's before them, are trimmed
            producer.sent(b"p%d" % n)
        assert received(consumer, 6) == [b"p%d" % n for n in range(6)]

        ids = iter(range(1000, 2000))

        def forgotten() -> bool:
            txn = (0, next(ids))
            producer.sent(b"a", txn)   # each end moves the max-read position: a snapshot
            assert producer.end(txn, COMMIT).error == 0
            return admin.get(path).json()["totalAbortedTransactions"] == 0
        until(forgotten, "the aborted transaction forgotten once its ledgers were trimmed")
        broker.restart()
        assert admin.get(path).json()["totalAbortedTransactions"] == 0
    finally:
        producer.close()


def test_transactional_sends_are_deduplicated(make_broker, connect):
    broker = make_broker({**TXN_CONFIG, "brokerDeduplicationEnabled": "true"})
    topic = _topic()
    producer = TxnProducer(broker, topic)
    try:
        stored = producer.sent(b"a1", TXN_A)
        producer._sequence = iter([0])   # the client resends it (after a reconnect, say)
        again = producer.send(b"a1", TXN_A).send_receipt.message_id
        assert (again.ledgerId, again.entryId) == ((1 << 64) - 1, (1 << 64) - 1) and stored[1] >= 0
        assert producer.end(TXN_A, COMMIT).error == 0
        consumer = subscribe(connect(broker), topic)
        assert received(consumer, 1) == [b"a1"]
        expect_nothing(consumer)
    finally:
        producer.close()


def test_last_message_id_when_only_hidden_entries_are_stored(txn_broker, go_producer, connect):
    """Only an aborted message and its marker: GET_LAST_MESSAGE_ID answers as for an empty
    topic (entry -1), and a reader has nothing available."""
    go_producer.sent(b"b1", TXN_B)
    assert go_producer.end(TXN_B, ABORT).error == 0
    assert last_message_id(txn_broker, go_producer.topic)[1] == -1
    reader = connect(txn_broker).create_reader(go_producer.topic, pulsar.MessageId.earliest)
    try:
        assert not reader.has_message_available()
    finally:
        reader.close()


def test_recovery_from_a_compacted_snapshot_topic(make_broker, connect):
    """The snapshot topic compacted (as the broker does every so many snapshots): a restart
    reads each topic's newest snapshot from the compacted view, then the log after it."""
    broker = make_broker({**TXN_CONFIG, "transactionBufferSnapshotMaxTransactionCount": "1"})
    topics = [_topic(), _topic()]
    producers = [TxnProducer(broker, topic) for topic in topics]
    try:
        for n, producer in enumerate(producers):
            aborted, open_ = (5, 10 + n), (5, 20 + n)
            producer.sent(b"x", aborted)
            producer.sent(b"p1")
            assert producer.end(aborted, ABORT).error == 0   # a snapshot after it, with the abort
            producer.sent(b"a1", open_)
            producer.sent(b"p2")
        admin = AdminHttp(broker.web_url)
        compaction = "/admin/v2/persistent/public/default/__transaction_buffer_snapshot/compaction"
        assert admin.put(compaction).status_code == 204
        until(lambda: admin.get(compaction).json()["status"] == "SUCCESS", "the snapshot topic compacted")
        for producer in producers:
            producer.close()
        broker.restart()
        for n, topic in enumerate(topics):
            consumer = subscribe(connect(broker), topic)
            assert received(consumer, 1) == [b"p1"]
            expect_nothing(consumer)
            producers[n] = TxnProducer(broker, topic)
            assert producers[n].end((5, 20 + n), COMMIT).error == 0
            assert received(consumer, 2) == [b"a1", b"p2"]
    finally:
        for producer in producers:
            producer.close()
