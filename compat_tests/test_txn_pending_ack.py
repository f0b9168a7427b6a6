"""Pending acks (transactionCoordinatorEnabled=true), over the bare protocol as a transactional
client and a coordinator speak it: ACKs carrying a transaction are held (answered in
ACK_RESPONSE, conflicts as TransactionConflict), go to no other consumer and leave the backlog
as it is until END_TXN_ON_SUBSCRIPTION commits them (acknowledged for good) or aborts them
(delivered again: at once on Shared subscriptions, at the consumer's next redelivery request
on Exclusive and Failover ones, as Pulsar); all of it across kill -9."""

from __future__ import annotations

import pulsar
import pytest

from compat_tests.admin_http import AdminHttp
from compat_tests.helpers import full_name, payloads, send_all_async, unique_topic
from compat_tests.raw_txn import TxnConsumer, end_txn_on_subscription
from protocol import pulsar_api_pb2 as pb

TXN_CONFIG = {"transactionCoordinatorEnabled": "true", "acknowledgmentAtBatchIndexLevelEnabled": "true"}
SUB = "txn-sub"
SHARED, EXCLUSIVE = pb.CommandSubscribe.Shared, pb.CommandSubscribe.Exclusive
T1, T2, T3 = (0, 101), (0, 102), (0, 103)


@pytest.fixture
def txn_broker(make_broker):
    return make_broker(TXN_CONFIG)


def produce(broker, topic: str, n: int, batch: bool = False) -> list[tuple[int, int]]:
    """n messages (one batch entry when batch); their entries, in order."""
    client = pulsar.Client(broker.service_url)
    try:
        options = {"batching_enabled": True, "batching_max_messages": n,
                   "batching_max_publish_delay_ms": 5000} if batch else {"batching_enabled": False}
        ids = send_all_async(client.create_producer(topic, **options), payloads(n))
        return sorted({(i.ledger_id(), i.entry_id()) for i in ids})
    finally:
        client.close()


def consumer(broker, topic: str, sub_type: int = SHARED, name: str = "c1", permits: int = 100,
             durable: bool = True) -> TxnConsumer:
    c = TxnConsumer(broker, topic, SUB, sub_type, name, durable=durable)
    c.flow(permits)
    return c


def backlog(broker, topic: str) -> int:
    stats = AdminHttp(broker.web_url).get(f"/admin/v2/persistent/public/default/{topic}/stats").json()
    return stats["subscriptions"][SUB]["msgBacklog"]


def end(broker, topic: str, txn, action) -> None:
    reply = end_txn_on_subscription(broker, full_name(topic), SUB, txn, action)
    assert not reply.HasField("error"), reply.message
    assert (reply.txnid_most_bits, reply.txnid_least_bits) == txn


def test_commit_keeps_acks_and_abort_redelivers(txn_broker):
    topic = unique_topic("txn-ack")
    entries = produce(txn_broker, topic, 4)
    c = consumer(txn_broker, topic)
    assert c.entries() == entries
    assert not c.ack(entries[:2], T1).HasField("error")
    assert not c.ack([entries[2]], T2).HasField("error")
    assert backlog(txn_broker, topic) == 4   # held, not acknowledged
    stats = AdminHttp(txn_broker.web_url).get(f"/admin/v3/transactions/pendingAckStats/public/default/{topic}/{SUB}")
    assert stats.json()["state"] == "Ready" and stats.json()["ongoingTxnSize"] == 2
    end(txn_broker, topic, T1, pb.COMMIT)
    assert backlog(txn_broker, topic) == 2
    end(txn_broker, topic, T2, pb.ABORT)
    assert c.entries() == [entries[2]]       # the abort gave it back
    end(txn_broker, topic, T1, pb.COMMIT)    # repeated: still a success
    end(txn_broker, topic, T3, pb.ABORT)     # a transaction never seen here
    assert backlog(txn_broker, topic) == 2
    c.close()


def test_conflicting_acks_are_refused(txn_broker):
    topic = unique_topic("txn-conflict")
    entries = produce(txn_broker, topic, 3)
    c = consumer(txn_broker, topic)
    c.entries()
    assert not c.ack([entries[0]], T1).HasField("error")
    held_elsewhere = c.ack([entries[0]], T2)
    assert held_elsewhere.error == pb.TransactionConflict and "in pending ack status" in held_elsewhere.message
    assert c.ack([entries[0]], T1).error == pb.TransactionConflict   # held by itself already
    assert not c.ack([entries[1]], None).HasField("error")           # a plain ack
    assert c.ack([entries[1]], T2).error == pb.TransactionConflict   # acknowledged already
    c.close()


def test_cumulative_conflicts_on_exclusive(txn_broker):
    topic = unique_topic("txn-cumulative")
    entries = produce(txn_broker, topic, 4)
    c = consumer(txn_broker, topic, EXCLUSIVE)
    c.entries()
    assert not c.ack([entries[1]], T1, cumulative=True).HasField("error")
    in_txn = AdminHttp(txn_broker.web_url).get(
        f"/admin/v3/transactions/transactionInPendingAckStats/public/default/{topic}/{SUB}/{T1[0]}/{T1[1]}")
    assert in_txn.json()["cumulativeAckPosition"] == "%d:%d" % entries[1]
    internal = AdminHttp(txn_broker.web_url).get(
        f"/admin/v3/transactions/pendingAckInternalStats/public/default/{topic}/{SUB}").json()["pendingAckLogStats"]
    assert internal["managedLedgerName"] == f"public/default/persistent/{topic}-{SUB}__transaction_pending_ack"
    assert internal["managedLedgerInternalStats"]["numberOfEntries"] >= 1   # the cumulative ack's record
    assert c.ack([entries[2]], T2, cumulative=True).error == pb.TransactionConflict   # another txn's
    assert c.ack([entries[0]], T1, cumulative=True).error == pb.TransactionConflict   # behind its own
    assert backlog(txn_broker, topic) == 4
    end(txn_broker, topic, T1, pb.COMMIT)
    assert backlog(txn_broker, topic) == 2
    behind = c.ack([entries[1]], T2, cumulative=True)
    assert behind.error == pb.TransactionConflict and "markDeletePosition" in behind.message
    assert not c.ack([entries[3]], T2, cumulative=True).HasField("error")
    end(txn_broker, topic, T2, pb.ABORT)
    assert c.entries() == []                 # as Pulsar: redelivered when the consumer asks
    c.redeliver_unacknowledged()
    assert c.entries() == entries[2:]        # everything after mark-delete
    c.close()


def test_held_messages_go_to_no_other_consumer(txn_broker):
    topic = unique_topic("txn-held")
    entries = produce(txn_broker, topic, 3)
    first = consumer(txn_broker, topic, name="first")
    first.entries()
    assert not first.ack([entries[0]], T1).HasField("error")
    first.close()   # its unacknowledged messages go to the next consumer, the held one does not
    second = consumer(txn_broker, topic, name="second")
    assert second.entries() == entries[1:]
    end(txn_broker, topic, T1, pb.ABORT)
    assert second.entries() == [entries[0]]
    second.close()


def test_batch_indexes_in_a_transaction(txn_broker):
    topic = unique_topic("txn-batch")
    (entry,) = produce(txn_broker, topic, 4, batch=True)
    c = consumer(txn_broker, topic)
    c.entries()
    # bits SET = still unacknowledged: T1 acknowledges indexes 0 and 1, T2 index 2
    assert not c.ack([entry], T1, ack_set=[0b1100], batch_size=4).HasField("error")
    assert c.ack([entry], T2, ack_set=[0b1101], batch_size=4).error == pb.TransactionConflict
    assert not c.ack([entry], T2, ack_set=[0b1011], batch_size=4).HasField("error")
    end(txn_broker, topic, T1, pb.COMMIT)
    end(txn_broker, topic, T2, pb.ABORT)
    assert c.received() == [(entry, [0b1100])]   # again, without the committed indexes
    c.close()


def test_held_acks_survive_kill9(txn_broker):
    topic = unique_topic("txn-kill")
    entries = produce(txn_broker, topic, 3)
    c = consumer(txn_broker, topic)
    c.entries()
    assert not c.ack([entries[0]], T1).HasField("error")
    assert not c.ack([entries[1]], T2).HasField("error")
    c.close()
    txn_broker.kill9()
    txn_broker.restart()
    c = consumer(txn_broker, topic)
    assert c.entries() == [entries[2]]        # both still held
    end(txn_broker, topic, T1, pb.COMMIT)
    end(txn_broker, topic, T2, pb.ABORT)
    assert c.entries() == [entries[1]]
    c.close()
    txn_broker.kill9()
    txn_broker.restart()
    assert backlog(txn_broker, topic) == 2    # the commit kept, the abort undone
    c = consumer(txn_broker, topic)
    assert c.entries() == entries[1:]
    c.close()


def test_commit_logged_before_the_cursor_persisted_survives_kill9(txn_broker, monkeypatch):
    topic = unique_topic("txn-crash")
    entries = produce(txn_broker, topic, 3)
    c = consumer(txn_broker, topic)
    c.entries()
    assert not c.ack([entries[1]], T2).HasField("error")
    end(txn_broker, topic, T2, pb.ABORT)
    assert not c.ack([entries[0]], T1).HasField("error")
    c.close()
    monkeypatch.setenv("PULSARD_CRASH_AT", "pending_ack_commit_before_cursor_flush")
    txn_broker.restart()
    monkeypatch.delenv("PULSARD_CRASH_AT")
    with pytest.raises(AssertionError):   # the broker dies once the commit is in the log
        end(txn_broker, topic, T1, pb.COMMIT)
    txn_broker.proc.wait(timeout=10)
    txn_broker.restart()
    assert backlog(txn_broker, topic) == 2
    c = consumer(txn_broker, topic)
    assert c.entries() == entries[1:]         # T1's ack kept, T2's undone
    c.close()


def test_subscription_deletion_removes_its_log(txn_broker):
    topic = unique_topic("txn-delete")
    entries = produce(txn_broker, topic, 1)
    c = consumer(txn_broker, topic)
    c.entries()
    assert not c.ack(entries, T1).HasField("error")
    c.close()
    admin = AdminHttp(txn_broker.web_url)
    log_name = f"{topic}-{SUB}__transaction_pending_ack"
    listed = admin.get("/admin/v2/persistent/public/default", includeSystemTopic="true").json()
    assert full_name(log_name) in listed
    assert admin.delete(f"/admin/v2/persistent/public/default/{topic}/subscription/{SUB}").ok
    listed = admin.get("/admin/v2/persistent/public/default", includeSystemTopic="true").json()
    assert full_name(log_name) not in listed


def test_refused_without_transactions_and_on_non_durable_subscriptions(broker, txn_broker):
    topic = unique_topic("txn-refused")
    entries = produce(broker, topic, 1)
    c = consumer(broker, topic)
    c.entries()
    refused = c.ack(entries, T1)
    assert refused.error == pb.NotAllowedError and refused.message == "Server don't support transaction ack!"
    c.close()
    reply = end_txn_on_subscription(broker, full_name(topic), SUB, T1, pb.COMMIT)
    assert reply.error == pb.NotAllowedError and reply.message == "Transactions are not enabled."
    entries = produce(txn_broker, topic, 1)
    reader = consumer(txn_broker, topic, durable=False)
    reader.entries()
    assert reader.ack(entries, T1).error == pb.NotAllowedError
    reader.close()
