"""The pull loop every dispatcher shares: at most one read in flight, entries spent on permits.

A subclass decides who gets an entry (`_select_consumer`), who may join, and what a
redelivery means for its subscription type. Entries that cannot be placed go back: replayed
positions to the replay set, fresh ones by moving the cursor's read position back.
"""

from __future__ import annotations

import asyncio
import logging
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Iterable

from managed_ledger.position import Entry, Position
from protocol.entry import read_metadata

if TYPE_CHECKING:
    from .consumer import Consumer
    from .subscription import Subscription

log = logging.getLogger(__name__)

READ_RETRY_DELAY_S = 1.0


def messages_in(entry: Entry) -> int:
    """Messages an entry carries: a batch is one entry holding num_messages_in_batch messages."""
    metadata = read_metadata(entry.data)
    return metadata.num_messages_in_batch if metadata.HasField("num_messages_in_batch") else 1


class Dispatcher(ABC):
    def __init__(self, subscription: "Subscription", max_read_entries: int) -> None:
        self.subscription = subscription
        self.cursor = subscription.cursor
        self.consumers: list["Consumer"] = []
        self._max_read_entries = max_read_entries
        self._replay: set[Position] = set()
        self._read_task: asyncio.Task | None = None
        self._rewind_pending = False
        self._messages_per_entry = 1.0
        self._closed = False

    # -- membership, decided by the subscription type ---------------------------------------

    @abstractmethod
    def add_consumer(self, consumer: "Consumer") -> None: ...

    @abstractmethod
    def remove_consumer(self, consumer: "Consumer") -> None: ...

    @abstractmethod
    def redeliver(self, consumer: "Consumer", positions: Iterable[Position] | None) -> None:
        """The consumer asks for its unacknowledged entries (all, or those named) again."""

    @abstractmethod
    def _select_consumer(self) -> "Consumer | None":
        """Who takes the next entry, or None when nobody has permits."""

    @abstractmethod
    def _permits_available(self) -> int: ...

    # -- the pull loop --------------------------------------------------------------------

    def flow(self, consumer: "Consumer", permits: int) -> None:
        consumer.permits += permits
        self.read_more()

    def read_more(self) -> None:
        """Start a read when none is in flight and some consumer can take messages."""
        if self._read_task is not None or self._closed:
            return
        permits = self._permits_available()
        if permits <= 0:
            return
        max_entries = max(1, min(self._max_read_entries, int(permits / self._messages_per_entry)))
        replay = self._next_replay(max_entries)
        if not replay:
            max_entries = self._new_read_limit(max_entries)
            if max_entries <= 0:
                return
        self._read_task = asyncio.get_running_loop().create_task(self._read(max_entries, replay))

    def _next_replay(self, max_entries: int) -> list[Position]:
        """Take the replay positions the next read fetches (oldest first)."""
        positions = sorted(self._replay)[:max_entries]
        self._replay.difference_update(positions)
        return positions

    def _new_read_limit(self, max_entries: int) -> int:
        """How many entries past the read position the next read may fetch (0: none for now)."""
        return max_entries

    async def _read(self, max_entries: int, replay: list[Position]) -> None:
        replaying = bool(replay)
        try:
            if replaying:
                entries = await self._read_replay(replay)
            else:
                entries = await self.cursor.read_entries_or_wait(max_entries)
        except Exception:
            log.exception("read for subscription %s failed; retrying", self.subscription.name)
            self._read_task = None
            self._requeue(replay)
            asyncio.get_running_loop().call_later(READ_RETRY_DELAY_S, self.read_more)
            return
        self._read_task = None
        if self._rewind_pending:
            self._rewind_pending = False
            self.cursor.rewind()
        elif entries:
            self._dispatch(entries, replaying)
        self.read_more()

    async def _read_replay(self, positions: list[Position]) -> list[Entry]:
        entries = []
        for position in positions:
            if self.cursor.is_deleted(position):
                continue
            entry = await self.subscription.topic.ledger.read_entry(position)
            if entry is not None:
                entries.append(entry)
        return entries

    def _dispatch(self, entries: list[Entry], replaying: bool) -> None:
        messages = 0
        for index, entry in enumerate(entries):
            if replaying and self.cursor.is_deleted(entry.position):
                continue
            consumer = self._select_consumer()
            if consumer is None:
                self._give_back(entries[index:], replaying)
                break
            count = messages_in(entry)
            messages += count
            consumer.send(
                entry,
                count,
                self.subscription.redelivery_counts.get(entry.position, 0),
                self.subscription.ack_set_for_dispatch(entry.position),
            )
        self._messages_per_entry = max(1.0, messages / len(entries))
        self.subscription.topic.stats.dispatched(messages, sum(len(e.data) for e in entries))

    def _give_back(self, entries: list[Entry], replaying: bool) -> None:
        if replaying:
            self._requeue(e.position for e in entries)
        else:
            self.cursor.seek(entries[0].position)

    def _requeue(self, positions: Iterable[Position]) -> None:
        """Put positions (back) into the replay set."""
        self._replay.update(positions)

    def _replay_later(self, positions: Iterable[Position]) -> None:
        """Queue positions for redelivery and interrupt a read parked at the end of the log."""
        self._requeue(positions)
        self._interrupt_read()
        self.read_more()

    def acknowledged(self, consumer: "Consumer", positions: list[Position]) -> None:
        """Entries acknowledged for good (a dispatcher that tracks them per key lets go too)."""
        consumer.acknowledged(positions)

    def rewind(self) -> None:
        """Restart reading just after mark-delete (acked holes are skipped by the cursor); a
        read in flight is discarded, since it may return entries from before the move."""
        self._replay.clear()
        if self._read_task is not None:
            self._rewind_pending = True
            self._interrupt_read()
        else:
            self.cursor.rewind()
            self.read_more()

    def _interrupt_read(self) -> None:
        if self._read_task is not None:
            self.cursor.cancel_pending_read()

    def close(self) -> None:
        self._closed = True
        self._interrupt_read()
