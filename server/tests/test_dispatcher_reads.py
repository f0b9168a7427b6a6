"""How much the pull loop reads for what it sends: reads sized by permits and batch sizes."""

from __future__ import annotations

import asyncio

from managed_ledger.position import Entry, Position
from protocol import pulsar_api_pb2 as pb
from protocol.entry import make_entry
from server.topics.subscriptions.consumer import Consumer
from server.topics.subscriptions.dispatcher_single_active import SingleActiveConsumerDispatcher

from .test_dispatcher_key_shared import FakeSubscription, RecordingConnection, settle


class CountingCursor:
    """An in-memory backlog that counts the entries each read returns (given back or not)."""

    def __init__(self, batch_sizes: list[int]) -> None:
        self.entries = [Entry(Position(1, i), make_entry(
            pb.MessageMetadata(producer_name="p", sequence_id=i, publish_time=1, num_messages_in_batch=n), b"x"))
            for i, n in enumerate(batch_sizes)]
        self.next_index = 0
        self.entries_read = 0

    async def read_entries_or_wait(self, max_entries: int) -> list[Entry]:
        batch = self.entries[self.next_index:self.next_index + max_entries]
        self.next_index += len(batch)
        self.entries_read += len(batch)
        if not batch:
            await asyncio.Event().wait()   # the end of the log: park until cancelled
        return batch

    def seek(self, position: Position) -> None:
        self.next_index = position.entry_id

    def rewind(self) -> None:
        self.next_index = 0

    def cancel_pending_read(self) -> None:
        pass

    def is_deleted(self, position: Position) -> bool:
        return False


async def drain_like_the_go_client(batch_sizes: list[int], queue: int) -> CountingCursor:
    """A consumer with a receiver queue of `queue` messages that hands permits back in halves."""
    cursor = CountingCursor(batch_sizes)
    dispatcher = SingleActiveConsumerDispatcher(FakeSubscription(cursor), 100, pb.CommandSubscribe.Exclusive, -1, 0)
    consumer = Consumer(1, "c", dispatcher.subscription, RecordingConnection(), pb.CommandSubscribe.Exclusive)
    dispatcher.add_consumer(consumer)
    dispatcher.flow(consumer, queue)
    returned = 0
    for _ in range(10 * len(batch_sizes)):
        await settle()
        consumed = sum(batch_sizes[:len(consumer.connection.bodies)])
        if consumed - returned >= queue // 2:
            dispatcher.flow(consumer, consumed - returned)
            returned = consumed
        if len(consumer.connection.bodies) == len(batch_sizes):
            break
    dispatcher.close()
    assert len(consumer.connection.bodies) == len(batch_sizes)
    return cursor


async def test_batches_larger_than_half_the_permits_are_read_about_once():
    sizes = [500] * 60
    sizes[10::7] = [1] * len(sizes[10::7])   # a few small batches among them
    cursor = await drain_like_the_go_client(sizes, queue=1000)
    assert cursor.entries_read <= 100 + len(sizes)   # only the first read (100) knows no batch size


async def test_single_messages_are_read_in_reads_of_up_to_the_permits():
    cursor = await drain_like_the_go_client([1] * 300, queue=100)
    assert cursor.entries_read == 300
