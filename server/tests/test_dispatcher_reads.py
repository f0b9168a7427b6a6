"""How much the pull loop reads for what it sends: reads sized by permits and batch sizes."""

from __future__ import annotations

import asyncio
import logging

from managed_ledger.errors import NonRecoverableEntryError
from managed_ledger.position import Entry, Position
from protocol import pulsar_api_pb2 as pb
from protocol.entry import make_entry
from server.topics.subscriptions.consumer import Consumer
from server.topics.subscriptions.dispatcher import ReadLimits
from server.topics.subscriptions.dispatcher_single_active import SingleActiveConsumerDispatcher
from server.topics.subscriptions.read_backoff import BackoffTimes, ReadBackoff

from .test_dispatcher_key_shared import FakeSubscription, RecordingConnection, settle


class CountingCursor:
    """An in-memory backlog that counts the entries each read returns (given back or not)."""

    def __init__(self, batch_sizes: list[int]) -> None:
        self.entries = [Entry(Position(1, i), make_entry(
            pb.MessageMetadata(producer_name="p", sequence_id=i, publish_time=1, num_messages_in_batch=n), b"x"))
            for i, n in enumerate(batch_sizes)]
        self.next_index = 0
        self.entries_read = 0
        self.read_sizes: list[int] = []
        self.listener = None

    async def read_entries_or_notify(self, max_entries: int, listener) -> list[Entry] | None:
        batch = self.entries[self.next_index:self.next_index + max_entries]
        self.next_index += len(batch)
        self.entries_read += len(batch)
        self.read_sizes.append(len(batch))
        if not batch:   # the end of the log: park until cancelled
            self.listener = listener
            return None
        return batch

    def seek(self, position: Position) -> None:
        self.next_index = position.entry_id
        self._notify(True)

    def rewind(self) -> None:
        self.next_index = 0
        self._notify(True)

    def cancel_pending_read(self) -> None:
        self._notify(False)

    def _notify(self, more: bool) -> None:
        listener, self.listener = self.listener, None
        if listener is not None:
            listener.entries_available(more)

    def is_deleted(self, position: Position) -> bool:
        return False


async def drain_like_the_go_client(batch_sizes: list[int], queue: int,
                                   limits: ReadLimits = ReadLimits()) -> tuple[CountingCursor, int]:
    """A consumer with a receiver queue of `queue` messages that hands permits back in halves;
    returns the cursor and the most messages the consumer was sent beyond its permits."""
    cursor = CountingCursor(batch_sizes)
    dispatcher = SingleActiveConsumerDispatcher(FakeSubscription(cursor), limits, pb.CommandSubscribe.Exclusive, -1, 0)
    consumer = Consumer(1, "c", dispatcher.subscription, RecordingConnection(), pb.CommandSubscribe.Exclusive)
    dispatcher.add_consumer(consumer)
    dispatcher.flow(consumer, queue)
    returned = 0
    overdrawn = 0
    for _ in range(10 * len(batch_sizes)):
        await settle()
        overdrawn = max(overdrawn, -consumer.permits)
        consumed = sum(batch_sizes[:len(consumer.connection.bodies)])
        if consumed - returned >= queue // 2:
            dispatcher.flow(consumer, consumed - returned)
            returned = consumed
        if len(consumer.connection.bodies) == len(batch_sizes):
            break
    dispatcher.close()
    assert len(consumer.connection.bodies) == len(batch_sizes)
    return cursor, overdrawn


async def test_by_default_permits_count_entries_and_every_entry_read_goes_out():
    """As Pulsar without preciseDispatcherFlowControl: after the first read (one entry), the 500
    permits left fetch 100 batches of 500 at once, all sent (the client takes them), so batches
    never wait on a FLOW each."""
    cursor, overdrawn = await drain_like_the_go_client([500] * 300, queue=1000)
    assert cursor.entries_read == 300   # nothing read was given back to be read again
    assert cursor.read_sizes[:2] == [1, 100]
    assert overdrawn == 101 * 500 - 1000


async def test_precise_flow_control_reads_batches_larger_than_half_the_permits_about_once():
    sizes = [500] * 60
    sizes[10::7] = [1] * len(sizes[10::7])   # a few small batches among them
    cursor, overdrawn = await drain_like_the_go_client(sizes, queue=1000, limits=ReadLimits(precise=True))
    assert cursor.entries_read <= 2 * len(sizes)   # never much more read than sent
    assert overdrawn < 500   # never further than one batch past the permits


async def test_reads_keep_to_about_the_byte_limit_once_entry_sizes_are_known():
    entry_size = len(CountingCursor([50]).entries[0].data)
    limits = ReadLimits(max_bytes=10 * entry_size)
    cursor, _ = await drain_like_the_go_client([50] * 200, queue=1000, limits=limits)
    assert cursor.entries_read == 200
    assert cursor.read_sizes[0] == 1   # before any entry was seen: one
    assert max(cursor.read_sizes[1:]) == 10


async def test_single_messages_are_read_in_reads_of_up_to_the_permits():
    for limits in (ReadLimits(), ReadLimits(precise=True)):
        cursor, overdrawn = await drain_like_the_go_client([1] * 300, queue=100, limits=limits)
        assert cursor.entries_read == 300
        assert overdrawn == 0


async def test_failing_reads_back_off_and_log_one_line_without_traceback(caplog):
    """Storage failing (bookies down, an entry lost) is expected: retried later and later, one
    line per interval, and the entries come once the storage answers again."""

    class FailingCursor(CountingCursor):
        failures = 4

        async def read_entries_or_notify(self, max_entries: int, listener) -> list[Entry] | None:
            if self.failures:
                self.failures -= 1
                raise NonRecoverableEntryError("ledger 1 entry 0: every replica failed")
            return await super().read_entries_or_notify(max_entries, listener)

    cursor = FailingCursor([1, 1])
    limits = ReadLimits(backoff=BackoffTimes(initial_s=0.01, max_s=0.04))
    dispatcher = SingleActiveConsumerDispatcher(FakeSubscription(cursor), limits, pb.CommandSubscribe.Exclusive, -1, 0)
    dispatcher.subscription.topic.name = "persistent://t/n/x"
    consumer = Consumer(1, "c", dispatcher.subscription, RecordingConnection(), pb.CommandSubscribe.Exclusive)
    dispatcher.add_consumer(consumer)
    with caplog.at_level(logging.WARNING):
        dispatcher.flow(consumer, 10)
        for _ in range(100):
            await asyncio.sleep(0.02)
            if len(consumer.connection.bodies) == 2:
                break
    dispatcher.close()
    assert len(consumer.connection.bodies) == 2
    assert [(r.levelno, r.exc_info) for r in caplog.records] == [(logging.WARNING, None)]
    assert "retrying in 0 s" in caplog.records[0].getMessage()


def test_read_backoff_doubles_to_the_max_and_honours_the_mandatory_stop():
    """As Pulsar's Backoff: 1, 2, 4, 4 ...; with a mandatory stop at 5 s, the wait that would
    end past it (4 s, from 3 s after the first failure) is cut to end there, once per run."""
    now = [0.0]
    backoff = ReadBackoff(BackoffTimes(1.0, 4.0), clock=lambda: now[0])
    assert [backoff.next_delay() for _ in range(4)] == [1.0, 2.0, 4.0, 4.0]
    stopping = ReadBackoff(BackoffTimes(1.0, 4.0, mandatory_stop_s=5.0), clock=lambda: now[0])
    delays = []
    for _ in range(4):
        delays.append(stopping.next_delay())
        now[0] += delays[-1]
    assert delays == [1.0, 2.0, 2.0, 4.0]
