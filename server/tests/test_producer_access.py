"""The access-mode rules and the deduplication classifier, without a network."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import pytest

from protocol import pulsar_api_pb2 as pb
from server.errors import ProducerBusy, ProducerFenced
from server.topics.deduplication import DedupStatus, MessageDeduplication, is_last_chunk_or_whole
from server.topics.producer_access import ProducerAccess


@dataclass(eq=False)
class FakeProducer:
    name: str
    access_mode: int
    topic_epoch: int | None = None
    closed: bool = field(default=False)

    def close_by_broker(self) -> None:
        self.closed = True


class Epochs:
    """The topic, as ProducerAccess sees it."""
    name = "t"

    def __init__(self) -> None:
        self.stored: list[int] = []

    async def store_epoch(self, epoch: int) -> None:
        self.stored.append(epoch)


def run(coro):
    return asyncio.run(coro)


def test_exclusive_takes_a_new_epoch_and_keeps_everyone_else_out():
    async def scenario():
        epochs = Epochs()
        access = ProducerAccess(epochs, None)
        owner = FakeProducer("a", pb.Exclusive)
        assert await access.admit(owner, None, lambda: None) == 0
        with pytest.raises(ProducerFenced):
            await access.admit(FakeProducer("b", pb.Exclusive), None, lambda: None)
        with pytest.raises(ProducerBusy):
            await access.admit(FakeProducer("c", pb.Shared), None, lambda: None)
        access.remove(owner)
        assert await access.admit(FakeProducer("d", pb.Exclusive), None, lambda: None) == 1
        assert epochs.stored == [0, 1]
    run(scenario())


def test_an_older_epoch_is_fenced_and_fencing_closes_the_others():
    async def scenario():
        access = ProducerAccess(Epochs(), 4)
        with pytest.raises(ProducerFenced, match="Current epoch: 4"):
            await access.admit(FakeProducer("old", pb.Exclusive), 3, lambda: None)
        shared = FakeProducer("s", pb.Shared)
        await access.admit(shared, None, lambda: None)
        assert await access.admit(FakeProducer("f", pb.ExclusiveWithFencing), None, lambda: None) == 5
        assert shared.closed and [p.name for p in access.producers] == ["f"]
    run(scenario())


def test_wait_for_exclusive_is_queued_then_promoted():
    async def scenario():
        access = ProducerAccess(Epochs(), None)
        owner = FakeProducer("a", pb.Exclusive)
        await access.admit(owner, None, lambda: None)
        queued = []
        waiter = asyncio.ensure_future(
            access.admit(FakeProducer("w", pb.WaitForExclusive), None, lambda: queued.append(True)))
        await asyncio.sleep(0)
        assert queued == [True] and not waiter.done()
        with pytest.raises(ProducerBusy):   # a shared producer may not jump the queue
            await access.admit(FakeProducer("s", pb.Shared), None, lambda: None)
        access.remove(owner)
        assert await asyncio.wait_for(waiter, 1) == 1
        assert [p.name for p in access.producers] == ["w"]
    run(scenario())


def test_a_waiter_that_gives_up_is_skipped():
    async def scenario():
        access = ProducerAccess(Epochs(), None)
        owner = FakeProducer("a", pb.Exclusive)
        await access.admit(owner, None, lambda: None)
        quitter, patient = FakeProducer("q", pb.WaitForExclusive), FakeProducer("p", pb.WaitForExclusive)
        gave_up = asyncio.ensure_future(access.admit(quitter, None, lambda: None))
        waits = asyncio.ensure_future(access.admit(patient, None, lambda: None))
        await asyncio.sleep(0)
        access.remove(quitter)          # CLOSE_PRODUCER while queued
        access.remove(owner)
        assert await asyncio.wait_for(waits, 1) == 1
        with pytest.raises(asyncio.CancelledError):
            await gave_up
        assert [p.name for p in access.producers] == ["p"]
    run(scenario())


def test_same_name_twice_is_busy():
    async def scenario():
        access = ProducerAccess(Epochs(), None)
        await access.admit(FakeProducer("x", pb.Shared), None, lambda: None)
        with pytest.raises(ProducerBusy, match="already connected"):
            await access.admit(FakeProducer("x", pb.Shared), None, lambda: None)
    run(scenario())


def test_deduplication_classifies_new_unknown_and_duplicate():
    dedup = MessageDeduplication(ledger=None, store=None, snapshot_path="/x", entries_interval=1000,
                                 max_producers=10)
    assert dedup.check("p", 0, 0) is DedupStatus.NEW
    assert dedup.check("p", 0, 0) is DedupStatus.UNKNOWN      # pushed, not yet durable
    dedup.persisted["p"] = 0
    assert dedup.check("p", 0, 0) is DedupStatus.DUPLICATE
    assert dedup.check("p", 1, 4) is DedupStatus.NEW           # a batch up to 4
    assert dedup.last_sequence_id("p") == 4
    assert dedup.last_sequence_id("other") == -1
    dedup.forget_pushed("p")                                   # its append failed
    assert dedup.check("p", 1, 4) is DedupStatus.NEW


def test_only_the_last_chunk_is_checked():
    middle = pb.MessageMetadata(producer_name="p", sequence_id=1, publish_time=0, num_chunks_from_msg=3, chunk_id=1)
    last = pb.MessageMetadata(producer_name="p", sequence_id=1, publish_time=0, num_chunks_from_msg=3, chunk_id=2)
    whole = pb.MessageMetadata(producer_name="p", sequence_id=1, publish_time=0)
    assert [is_last_chunk_or_whole(m) for m in (middle, last, whole)] == [False, True, True]
