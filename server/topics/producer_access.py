"""Who may produce on a topic: the four access modes, the topic epoch and the waiting queue.

As Pulsar's AbstractTopic: Shared producers coexist; Exclusive is refused (ProducerFenced)
while anyone else produces; ExclusiveWithFencing closes everyone else and takes over;
WaitForExclusive queues until the topic has no producer. Every exclusive take-over moves the
topic epoch forward (persisted by the topic), and a reconnecting exclusive producer that
presents an older epoch is fenced, since somebody else produced in between.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Callable, Protocol

from protocol import pulsar_api_pb2 as pb
from server.errors import BrokerError, NotAllowed, ProducerBusy, ProducerFenced

if TYPE_CHECKING:
    from .producer import Producer

log = logging.getLogger(__name__)

ACCESS_MODES = (pb.Shared, pb.Exclusive, pb.ExclusiveWithFencing, pb.WaitForExclusive)


class EpochKeeper(Protocol):
    """The topic: named in errors and logs, and keeping the epoch an exclusive take-over sets."""

    @property
    def name(self) -> object: ...

    async def store_epoch(self, epoch: int) -> None: ...


class ProducerAccess:
    """The producers of one topic and the rules that admit them."""

    __slots__ = ("_exclusive", "_topic", "_waiting", "epoch", "producers")

    def __init__(self, topic: EpochKeeper, epoch: int | None) -> None:
        self._topic = topic
        self.producers: list["Producer"] = []
        self.epoch = epoch
        self._exclusive: str | None = None  # name of the producer holding exclusive access
        #: () until a producer waits, then a list: few producers ever wait, and a broker holds
        #: 100,000s of topics (an empty deque costs ~700 bytes, an empty list 56)
        self._waiting: list[tuple["Producer", asyncio.Future[int | None]]] | tuple[()] = ()

    async def admit(self, producer: "Producer", requested_epoch: int | None,
                    on_queued: Callable[[], None]) -> int | None:
        """Add the producer under its access mode; return the topic epoch to announce."""
        mode = producer.access_mode
        if mode not in ACCESS_MODES:
            raise NotAllowed(f"Invalid producer access mode: {mode}")
        self._check_name(producer)
        if mode == pb.Shared:
            if self._exclusive is not None or self._waiting:
                raise ProducerBusy(f"Topic has an existing exclusive producer: {self._exclusive}")
            self.producers.append(producer)
            return self.epoch
        if mode == pb.ExclusiveWithFencing:
            self.evict_all(ProducerFenced("Fenced out"))
        elif self._exclusive is not None or self.producers or self._waiting:
            if mode == pb.Exclusive:
                holder = f"an existing exclusive producer: {self._exclusive}" if self._exclusive else "existing shared producers"
                raise ProducerFenced(f"Topic has {holder}")
            return await self._queue(producer, on_queued)
        return await self._take_over(producer, requested_epoch)

    def _check_name(self, producer: "Producer") -> None:
        if any(p.name == producer.name for p in self.producers):
            raise ProducerBusy(f"Producer with name '{producer.name}' is already connected to topic {self._topic.name}")

    def evict_all(self, error: BrokerError) -> None:
        """Fail the queue with error and close every current producer (ExclusiveWithFencing
        taking over, or the topic terminated)."""
        waiting, self._waiting = self._waiting, ()
        for queued, future in waiting:
            if not future.done():
                future.set_exception(error)
        for other in list(self.producers):
            log.info("%s: closing producer %s: %s", self._topic.name, other.name, error)
            self.remove(other, promote=False)
            other.close_by_broker()

    async def _take_over(self, producer: "Producer", requested_epoch: int | None) -> int:
        current = -1 if self.epoch is None else self.epoch
        if requested_epoch is not None and requested_epoch < current:
            raise ProducerFenced(
                f"Topic epoch has already moved. Current epoch: {current}, Producer epoch: {requested_epoch}")
        self._exclusive = producer.name
        self.producers.append(producer)
        new_epoch = requested_epoch if requested_epoch is not None else current + 1
        try:
            await self._topic.store_epoch(new_epoch)
        except BaseException:
            self.remove(producer)
            raise
        self.epoch = new_epoch
        return new_epoch

    async def _queue(self, producer: "Producer", on_queued: Callable[[], None]) -> int | None:
        log.info("%s: queuing producer %s until the topic is free", self._topic.name, producer.name)
        future: asyncio.Future[int | None] = asyncio.get_running_loop().create_future()
        if not self._waiting:
            self._waiting = []
        self._waiting.append((producer, future))
        on_queued()
        return await future

    def remove(self, producer: "Producer", promote: bool = True) -> None:
        """A producer left (or gave up waiting); the first live waiter takes the topic once
        nobody produces."""
        for queued, future in self._waiting:
            if queued is producer and not future.done():
                future.cancel()
        if producer in self.producers:
            self.producers.remove(producer)
            if producer.name == self._exclusive:
                self._exclusive = None
        if promote and not self.producers:
            self._promote_next()

    def _promote_next(self) -> None:
        while self._waiting:
            producer, future = self._waiting.pop(0)
            if future.done():  # its connection went away while it waited
                continue
            task = asyncio.get_running_loop().create_task(self._take_over(producer, producer.topic_epoch))
            task.add_done_callback(lambda done, waiter=future: self._promoted(producer, waiter, done))
            return

    def _promoted(self, producer: "Producer", waiter: "asyncio.Future[int | None]", done: "asyncio.Task[int]") -> None:
        """Hand the outcome of a promotion to the request that waited for it (if still there)."""
        failed = done.cancelled() or done.exception() is not None
        if waiter.done():
            if not failed:
                self.remove(producer)
        elif done.cancelled():
            waiter.cancel()
        elif failed:
            waiter.set_exception(done.exception())
            self._promote_next()
        else:
            waiter.set_result(done.result())

    def close_all(self) -> None:
        for _, future in self._waiting:
            if not future.done():
                future.cancel()
        self._waiting = ()

