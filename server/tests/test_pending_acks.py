"""Pending acks (server/transactions/pending_ack/) over real managed ledgers: conflict rules,
the log's replay (held again; a logged commit applied again), ends that are idempotent, and a
subscription never used transactionally that gets no log."""

from __future__ import annotations

import pytest

from managed_ledger.position import InitialPosition
from managed_ledger.tests.conftest import open_storage
from server.transactions.interfaces import ABORT, COMMIT, TxnID
from server.transactions.pending_ack.ack_sets import acked_mask, words_of
from server.transactions.pending_ack.handle import PendingAckHandle, TransactionConflict
from server.transactions.pending_ack.store import log_name

TOPIC = "persistent://public/default/t"
T1, T2 = TxnID(0, 1), TxnID(0, 2)


class Sub:
    """The subscription side: a real cursor; what commits and aborts hand it is recorded."""

    name = "sub"
    topic_name = TOPIC

    def __init__(self, cursor) -> None:
        self.cursor = cursor
        self.redelivered: list = []

    def commit_acks(self, acks) -> None:
        whole = [p for p, words in acks.items() if words is None or not any(words)]
        for position, words in acks.items():
            if words is not None and any(words):
                self.cursor.ack_batch_indexes(position, words)
        self.cursor.delete(whole)

    def commit_cumulative(self, position) -> None:
        self.cursor.mark_delete(position)

    def redeliver_released(self, positions) -> None:
        self.redelivered.append(positions)


async def _setup(storage, entries: int = 4):
    ledger = await storage.open_ledger(TOPIC)
    positions = [await ledger.add_entry(b"m%d" % i) for i in range(entries)]
    sub = Sub(await ledger.open_cursor("sub", InitialPosition.EARLIEST))
    return positions, sub, PendingAckHandle(sub, storage)


def test_ack_set_words_round_trip():
    assert acked_mask([0b1100], 4) == 0b0011
    assert words_of(0b0011, 4) == [0b1100]
    assert words_of(0, 70) == [-1, 0b111111]   # int64 words, as the protocol carries them
    assert acked_mask(words_of(1 << 65, 70), 70) == 1 << 65


async def test_conflicts_as_pulsar_refuses_them(tmp_path):
    async with open_storage(tmp_path) as storage:
        p, sub, pending = await _setup(storage)
        await pending.acknowledge_individual(T1, {p[0]: (None, 0), p[1]: (0b0011, 4)})
        with pytest.raises(TransactionConflict, match="in pending ack status"):
            await pending.acknowledge_individual(T2, {p[0]: (None, 0)})
        with pytest.raises(TransactionConflict, match="try to ack batch message"):
            await pending.acknowledge_individual(T2, {p[1]: (0b0010, 4)})
        await pending.acknowledge_individual(T2, {p[1]: (0b0100, 4)})   # another index: fine
        assert pending.unacked_words(p[1], None) == [0b1000]
        sub.cursor.delete([p[2]])
        with pytest.raises(TransactionConflict, match="already acked before"):
            await pending.acknowledge_individual(T2, {p[2]: (None, 0)})
        sub.cursor.ack_batch_indexes(p[3], [0b1110])   # index 0 acknowledged by the cursor
        with pytest.raises(TransactionConflict, match="already acked before"):
            await pending.acknowledge_individual(T2, {p[3]: (0b0001, 4)})
        assert pending.hides(p[0]) and not pending.hides(p[1])
        await pending.close()


async def test_cumulative_conflicts(tmp_path):
    async with open_storage(tmp_path) as storage:
        p, sub, pending = await _setup(storage)
        await pending.acknowledge_cumulative(T1, p[1])
        assert pending.hides(p[0]) and pending.hides(p[1]) and not pending.hides(p[2])
        with pytest.raises(TransactionConflict, match="within range of current"):
            await pending.acknowledge_cumulative(T2, p[2])
        with pytest.raises(TransactionConflict, match="within range of current"):
            await pending.acknowledge_cumulative(T1, p[0])
        await pending.end_txn(T1, COMMIT)
        assert sub.cursor.mark_delete_position == p[1]
        with pytest.raises(TransactionConflict, match="markDeletePosition"):
            await pending.acknowledge_cumulative(T2, p[1])
        await pending.close()


async def test_replay_holds_again_and_applies_a_logged_commit_again(tmp_path):
    async with open_storage(tmp_path) as storage:
        p, sub, pending = await _setup(storage)
        await pending.acknowledge_individual(T1, {p[0]: (None, 0)})
        await pending.acknowledge_individual(T2, {p[1]: (None, 0)})
        await pending.close()
        again = PendingAckHandle(sub, storage)
        await again.ready()
        assert again.hides(p[0]) and again.hides(p[1])
        assert again.stats() | {"recoverStartTime": 0, "recoverEndTime": 0} == {
            "state": "Ready", "ongoingTxnSize": 2, "recoverStartTime": 0, "recoverEndTime": 0}
        # the commit reaches the log; the cursor's state is then lost (a crash before it persisted)
        await again._open_log()
        await again._log.append({"t": "commit", "txn": list(T1)})
        await again._log.close()
        ledger = await storage.open_ledger(TOPIC)
        fresh = Sub(ledger.cursors["sub"])
        replayed = PendingAckHandle(fresh, storage)
        await replayed.ready()
        assert fresh.cursor.is_deleted(p[0]) and not replayed.hides(p[0])
        assert replayed.hides(p[1])
        await replayed.end_txn(T2, ABORT)
        await replayed.end_txn(T2, ABORT)   # idempotent
        assert fresh.redelivered == [[p[1]]]
        await replayed.close()
        last = PendingAckHandle(fresh, storage)
        await last.ready()
        assert not last.holds_any and last.stats()["ongoingTxnSize"] == 0
        await last.close()


async def test_no_log_for_a_subscription_never_used_transactionally(tmp_path):
    async with open_storage(tmp_path) as storage:
        p, sub, pending = await _setup(storage)
        await pending.end_txn(T1, COMMIT)    # a transaction never seen here: a success
        assert not await storage.ledger_exists(log_name(TOPIC, "sub"))
        assert pending.stats()["state"] == "None"
        await pending.acknowledge_individual(T1, {p[0]: (None, 0)})
        assert await storage.ledger_exists(log_name(TOPIC, "sub"))
        assert pending.stats()["state"] == "Ready"
        assert pending.stats_of(T1) == {}
        await pending.acknowledge_cumulative(T2, p[1])
        assert pending.stats_of(T2) == {"cumulativeAckPosition": f"{p[1].ledger_id}:{p[1].entry_id}"}
        await pending.delete()
        assert not await storage.ledger_exists(log_name(TOPIC, "sub"))
