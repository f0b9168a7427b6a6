"""The coordinator's state machine and replay (metadata_store.py) and its END_TXN sequence
(service.py), over an in-memory log and recording participants."""

from __future__ import annotations

import asyncio

import pytest

from managed_ledger.position import Position
from server.transactions.coordinator.errors import (InvalidTxnStatus, ReachedMaxActiveTransactions,
                                                    TransactionNotFound)
from server.transactions.coordinator.metadata_store import TransactionMetadataStore, TxnStatus
from server.transactions.coordinator.service import TransactionCoordinators
from server.transactions.interfaces import ABORT, COMMIT, TxnID


class MemoryLog:
    """TransactionLog's surface, kept in a list; survives "restarts" by being reused."""

    def __init__(self, tc_id: int = 0) -> None:
        self.tc_id = tc_id
        self.records: list[tuple[Position, dict]] = []
        self.acked: set[Position] = set()
        self.reserved_sequence = 0
        self.appended = 0

    async def replay(self):
        for position, record in list(self.records):
            if position not in self.acked:
                yield position, record

    async def append(self, record: dict) -> Position:
        position = Position(0, len(self.records))
        self.records.append((position, record))
        self.appended += 1
        return position

    def acknowledge(self, positions) -> None:
        self.acked.update(positions)

    async def reserve(self, sequence: int) -> None:
        self.reserved_sequence = max(self.reserved_sequence, sequence + 10)

    async def close(self) -> None:
        pass


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, timeout=10))


def test_states_follow_pulsars_transitions():
    async def scenario():
        store = TransactionMetadataStore(MemoryLog(), max_active=0)
        meta = await store.new_txn(60000, None)
        await store.add_partitions(meta.txn, ["t1", "t1", "t2"])
        assert list(meta.partitions) == ["t1", "t2"]
        await store.update_status(meta.txn, TxnStatus.COMMITTING)
        with pytest.raises(InvalidTxnStatus, match=r"Expect Txn `\(0,1\)` to be in OPEN status but it is in COMMITTING"):
            await store.add_subscriptions(meta.txn, [("t1", "s")])
        with pytest.raises(InvalidTxnStatus):
            await store.update_status(meta.txn, TxnStatus.ABORTED)
        await store.update_status(meta.txn, TxnStatus.COMMITTED)
        with pytest.raises(TransactionNotFound):
            store.get(meta.txn)
        assert store.counters.committed == 1
    run(scenario())


def test_replay_keeps_open_and_ending_transactions_and_forgets_ended_ones():
    async def scenario():
        log = MemoryLog()
        store = TransactionMetadataStore(log, max_active=0)
        ended, ending, open_ = [await store.new_txn(60000, "role") for _ in range(3)]
        await store.add_subscriptions(ending.txn, [("t", "s")])
        await store.update_status(ending.txn, TxnStatus.ABORTING)
        await store.update_status(ended.txn, TxnStatus.COMMITTING)
        await store.update_status(ended.txn, TxnStatus.COMMITTED)
        log.acked.clear()    # acknowledgements not persisted before a crash: replay forgets again
        again = TransactionMetadataStore(log, max_active=0)
        await again.replay()
        assert set(again.txns) == {ending.txn, open_.txn}
        assert again.txns[ending.txn].status is TxnStatus.ABORTING
        assert list(again.txns[ending.txn].subscriptions) == [("t", "s")]
        assert again.txns[open_.txn].owner == "role"
        assert (await again.new_txn(1000, None)).txn.least_bits > open_.txn.least_bits
        assert again.low_water_mark == ending.txn.least_bits - 1
    run(scenario())


def test_max_active_transactions():
    async def scenario():
        store = TransactionMetadataStore(MemoryLog(), max_active=1)
        await store.new_txn(1000, None)
        with pytest.raises(ReachedMaxActiveTransactions, match="New txn op reach max active txn! tcId : 0"):
            await store.new_txn(1000, None)
    run(scenario())


class Participants:
    def __init__(self, failures: int = 0) -> None:
        self.calls: list[tuple] = []
        self.failures = failures

    async def end_on_partition(self, topic: str, txn: TxnID, action: int) -> None:
        if self.failures:
            self.failures -= 1
            raise ConnectionError("owner unreachable")
        self.calls.append((topic, txn, action))

    async def end_on_subscription(self, topic: str, subscription: str, txn: TxnID, action: int) -> None:
        self.calls.append((topic, subscription, txn, action))


class Assign:
    async def create_partitioned(self, name, partitions, exist_ok=False) -> int:
        return partitions

    def check_serves(self, name) -> None:
        pass


async def coordinators_on(log: MemoryLog, participants: Participants) -> TransactionCoordinators:
    service = TransactionCoordinators(None, None, Assign(), participants, 0, 1.0)
    await service.create_assign_topic(1)
    store = TransactionMetadataStore(log, 0)
    await store.replay()
    service.stores[0] = store
    return service


def test_end_txn_ends_every_participant_then_forgets(monkeypatch):
    monkeypatch.setattr("server.transactions.coordinator.service.RETRY_INTERVAL_S", 0.01)

    async def scenario():
        participants = Participants(failures=2)
        service = await coordinators_on(MemoryLog(), participants)
        txn = await service.new_txn(0, 60000, None)
        await service.add_partitions(txn, ["t1"])
        await service.add_subscriptions(txn, [("t1", "s")])
        await service.end_txn(txn, COMMIT)
        assert sorted(map(str, participants.calls)) == sorted(map(str, [("t1", txn, COMMIT), ("t1", "s", txn, COMMIT)]))
        with pytest.raises(TransactionNotFound):
            await service.end_txn(txn, COMMIT)
        await service.close()
    run(scenario())


def test_opposite_end_of_an_ending_transaction_is_invalid():
    async def scenario():
        log = MemoryLog()
        service = await coordinators_on(log, Participants())
        txn = await service.new_txn(0, 60000, None)
        await service.stores[0].update_status(txn, TxnStatus.COMMITTING)
        with pytest.raises(InvalidTxnStatus, match="to be in ABORTING status but it is in COMMITTING status"):
            await service.end_txn(txn, ABORT)
        await service.end_txn(txn, COMMIT)    # the same end again finishes it
        assert txn not in service.stores[0].txns
        await service.close()
    run(scenario())
