"""The pull loop every dispatcher shares: at most one read in flight, entries spent on permits.

A subclass decides who gets an entry (`_select_consumer`), who may join, and what a
redelivery means for its subscription type. Entries that cannot be placed go back: replayed
positions to the replay set, fresh ones by moving the cursor's read position back.

Each entry's top-level metadata is read once here: it gives the message count (permits) and
deliver_at_time, which a subclass that honours delays holds in a DelayedDeliveryTracker
(`self.delayed`, made on the first delayed entry) while the topic's policy is active.
The dispatcher also counts messages sent and not yet acknowledged, over all its consumers.
Each read is sized within the dispatch rates in force (server/policies/dispatch_throttle.py),
and sending stops where they run out (the rest goes back, as entries no consumer can take);
without permits left the next read waits for them.
"""

from __future__ import annotations

import asyncio
import logging
import random
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

from log_limits.repeats import RepeatLimitedLog
from managed_ledger.errors import ManagedLedgerStorageError, NonRecoverableEntryError
from managed_ledger.position import Entry, Position
from protocol import pulsar_api_pb2 as pb
from protocol.entry import read_metadata
from protocol.errors import ProtocolError
from server.policies.topic_limits import check_subscription_room

from .delayed_delivery import DelayedDeliveryTracker
from .read_backoff import BackoffTimes, ReadBackoff

if TYPE_CHECKING:
    from ..interfaces import DispatchLimit
    from .consumer import Consumer
    from .subscription import Subscription

log = logging.getLogger(__name__)
_repeats = RepeatLimitedLog(log)

#: Weight of the previous estimate in the moving averages of messages and bytes per entry.
MESSAGES_PER_ENTRY_KEEP = 0.9
#: A read that waits for dispatch rate permits tries again after this long at most (Pulsar's
#: MESSAGE_RATE_BACKOFF_MS), and after this long at least.
RATE_RETRY_S = 1.0
MIN_RATE_WAIT_S = 0.001
RATE_WAIT_SPREAD_S = 0.005


@dataclass(frozen=True, slots=True)
class ReadLimits:
    """How much one read may fetch (dispatcherMaxReadBatchSize entries, about
    dispatcherMaxReadSizeBytes), how permits count (preciseDispatcherFlowControl) and when a
    failed read is retried (dispatcherReadFailureBackoff*, see read_backoff.py).

    As in Pulsar, permits count entries by default: a read fetches up to as many entries as
    there are permits, and all of them go out, each batch's messages coming off the permits,
    which may go negative (the client takes them; the next read waits for permits). A consumer
    of batches then never waits on a FLOW round trip per batch. Precise flow control sizes
    reads by the average batch instead and sends no further than the permits go."""
    max_entries: int = 100
    max_bytes: int = 5 * 1024 * 1024
    precise: bool = False
    backoff: BackoffTimes = BackoffTimes()


def moving_average(previous: float | None, sample: float) -> float:
    """The next value of a moving average (the sample alone for the first)."""
    if previous is None:
        return sample
    return MESSAGES_PER_ENTRY_KEEP * previous + (1 - MESSAGES_PER_ENTRY_KEEP) * sample


def messages_in(metadata: pb.MessageMetadata) -> int:
    """Messages an entry carries: a batch is one entry holding num_messages_in_batch messages."""
    return metadata.num_messages_in_batch if metadata.HasField("num_messages_in_batch") else 1


def unacked_in(ack_set: list[int]) -> int:
    """Messages of a batch still unacknowledged: SET bits of its int64 ack-set words."""
    return sum((word & 0xFFFF_FFFF_FFFF_FFFF).bit_count() for word in ack_set)


class Dispatcher(ABC):
    __slots__ = ("_backoff", "_bytes_per_entry", "_closed", "_limits", "_messages_per_entry", "_parked",
                 "_rate_wait", "_read_task", "_replay", "_rewind_pending", "blocked_on_unacked", "consumers",
                 "cursor", "delayed", "subscription", "unacked_messages")

    #: Whether deliver_at_time is honoured (Shared, Key_Shared).
    honours_delays = False

    def __init__(self, subscription: "Subscription", limits: ReadLimits) -> None:
        self.subscription = subscription
        self.cursor = subscription.cursor
        self.consumers: list["Consumer"] = []
        self._limits = limits
        #: positions to deliver again (a dict as a set: an empty one is a third of the size)
        self._replay: dict[Position, None] = {}
        self._read_task: asyncio.Task | None = None
        #: Read to the end of the log: the cursor calls entries_available when to read again.
        self._parked = False
        self._backoff: ReadBackoff | None = None   # from a failed read until one succeeds
        self._rewind_pending = False
        #: Moving averages of messages and bytes per entry; None until entries were seen.
        self._messages_per_entry: float | None = None
        self._bytes_per_entry: float | None = None
        self._closed = False
        #: Messages sent to the consumers and not yet acknowledged (or taken back).
        self.unacked_messages = 0
        #: The delayed entries held, once there was one (honours_delays only).
        self.delayed: DelayedDeliveryTracker | None = None
        #: Reads stopped on maxUnackedMessagesPerSubscription (Shared, Key_Shared).
        self.blocked_on_unacked = False
        #: The read that waits for dispatch rate permits.
        self._rate_wait: asyncio.TimerHandle | None = None

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

    def check_room(self) -> None:
        """ConsumerBusy when the subscription has its maximum of consumers."""
        check_subscription_room(self.subscription.topic, len(self.consumers))

    # -- the pull loop --------------------------------------------------------------------

    def flow(self, consumer: "Consumer", permits: int) -> None:
        consumer.flow(permits)
        self.read_more()

    def read_more(self) -> None:
        """Start a read when none is in flight and some consumer can take messages."""
        if self._read_task is not None or self._parked or self._closed:
            return
        permits = self._permits_available()
        if permits <= 0:
            return
        max_entries = self._read_size(permits)
        throttle = self.subscription.dispatch_throttle()
        if throttle is not None:
            max_entries = throttle.read_limit(max_entries, self._messages_per_entry, self._bytes_per_entry)
            if max_entries <= 0:
                self._read_when_refilled(throttle.refill_in_s())
                return
        replay = self._next_replay(max_entries)
        if not replay:
            max_entries = self._new_read_limit(max_entries)
            if max_entries <= 0:
                return
        self._read_task = asyncio.get_running_loop().create_task(self._read(max_entries, replay))

    def _read_when_refilled(self, wait_s: float) -> None:
        """Read again once the dispatch rates have permits, or after a second at most (as
        Pulsar retries), so that a limit removed meanwhile is not waited for. The wait ends at a
        random instant of a few milliseconds: subscriptions that share a limit (a topic's, a
        resource group's) then take turns at its permits, where the first to wait would
        otherwise read first, and spend them, at every refill."""
        if self._rate_wait is None:
            wait_s = min(RATE_RETRY_S, wait_s) + random.uniform(MIN_RATE_WAIT_S, RATE_WAIT_SPREAD_S)
            self._rate_wait = asyncio.get_running_loop().call_later(wait_s, self._rate_refilled)

    def _rate_refilled(self) -> None:
        self._rate_wait = None
        self.read_more()

    def _read_size(self, permits: int) -> int:
        """Entries the next read may fetch for these permits: one while no entry size is known
        (as Pulsar, whose byte cap starts its estimate that way), then at least one."""
        if self._bytes_per_entry is None:
            return 1
        limits = self._limits
        per_entry = (self._messages_per_entry or 1.0) if limits.precise else 1.0
        entries = min(limits.max_entries, int(permits / per_entry), int(limits.max_bytes / self._bytes_per_entry))
        return max(1, entries)

    def _next_replay(self, max_entries: int) -> list[Position]:
        """Take the replay positions the next read fetches (oldest first)."""
        positions = sorted(self._replay)[:max_entries]
        for position in positions:
            del self._replay[position]
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
                entries = await self.cursor.read_entries_or_notify(max_entries, self)
        except Exception as exc:
            self._read_failed(exc, replay)
            return
        self._read_task = None
        self._backoff = None
        if entries is None:
            self._parked = True
            return
        if self._rewind_pending:
            self._rewind_pending = False
            self.cursor.rewind()
        elif entries:
            self._hand_out(entries, replaying)
        self.read_more()

    def _read_failed(self, error: Exception, replay: list[Position]) -> None:
        """Retry later, backing off (as Pulsar's readFailureBackoff). Storage failing is expected
        (bookies down, an entry lost): one line per interval; anything else is a bug."""
        if self._backoff is None:
            self._backoff = ReadBackoff(self._limits.backoff)
        delay = self._backoff.next_delay()
        name = f"{self.subscription.topic.name}/{self.subscription.name}"
        if isinstance(error, ManagedLedgerStorageError):
            _repeats.warning((name, type(error)), "read for subscription %s failed: %s; retrying in %.0f s",
                             name, error, delay)
        else:
            log.exception("read for subscription %s failed; retrying in %.0f s", name, delay, exc_info=error)
        self._read_task = None
        self._requeue(replay)
        asyncio.get_running_loop().call_later(delay, self.read_more)

    def _hand_out(self, entries: list[Entry], replaying: bool) -> None:
        """Dispatch what a read brought; unless flow control is precise, each consumer may take
        as many entries as it had permits when they arrived (see ReadLimits)."""
        self._bytes_per_entry = moving_average(self._bytes_per_entry,
                                               sum(len(entry.data) for entry in entries) / len(entries))
        if self._limits.precise:
            self._dispatch(entries, replaying)
            return
        for consumer in self.consumers:
            consumer.entry_allowance = max(0, consumer.permits)
        try:
            self._dispatch(entries, replaying)
        finally:
            for consumer in self.consumers:
                consumer.entry_allowance = None

    async def _read_replay(self, positions: list[Position]) -> list[Entry]:
        entries = []
        for position in positions:
            if self.cursor.is_deleted(position):
                continue
            try:
                entry = await self.subscription.topic.ledger.read_entry(position)
            except NonRecoverableEntryError as exc:
                self.cursor.skip_lost(position, exc)   # raises unless autoSkipNonRecoverableData
                continue
            if entry is not None:
                entries.append(entry)
        return entries

    def _dispatch(self, entries: list[Entry], replaying: bool) -> None:
        """Send entries while someone has permits and the dispatch rates allow; the rest go
        back. Batch sizes are taken from the entries examined, not from all those read: counting
        given-back entries would dilute the estimate and keep reads larger than the permits,
        each given-back entry read again."""
        throttle = self.subscription.dispatch_throttle()
        held = self.subscription.held_acks
        messages = sent_bytes = seen_messages = seen_entries = 0
        for index, entry in enumerate(entries):
            if replaying and self.cursor.is_deleted(entry.position):
                continue
            if held is not None and held.hides(entry.position):   # a transaction acknowledged it
                continue
            metadata = self._readable_metadata(entry)
            if metadata is None:
                continue
            count = messages_in(metadata)
            seen_messages += count
            seen_entries += 1
            if self._held_back(entry.position, metadata):
                continue
            consumer = self._select_consumer() if throttle is None or throttle.allows_more() else None
            if consumer is None:
                self._give_back(entries[index:], replaying)
                break
            messages += self._send(consumer, entry, count, throttle)
            sent_bytes += len(entry.data)
        self._observe_batch_sizes(seen_messages, seen_entries)
        self.subscription.dispatched(messages, sent_bytes)

    def _observe_batch_sizes(self, messages: int, entries: int) -> None:
        """Fold messages per entry of the entries just examined into the moving average that
        sizes reads (as Pulsar's avgMessagesPerEntry, 0.9 old / 0.1 new): one small batch must not
        make the next read fetch many entries that the permits cannot take."""
        if not entries:
            return
        self._messages_per_entry = max(1.0, moving_average(self._messages_per_entry, messages / entries))

    def _readable_metadata(self, entry: Entry) -> pb.MessageMetadata | None:
        """The entry's metadata; None for an entry stored unreadable (SENDs are checked now,
        older data may not be): no consumer could take it, so it is skipped as acknowledged,
        counted and logged, and never stalls the subscription. None too, and skipped as
        acknowledged as Pulsar's dispatchers do, for a marker or an aborted transaction's entry."""
        try:
            metadata = read_metadata(entry.data)
        except ProtocolError as exc:
            log.warning("subscription %s skips unreadable entry %s: %s", self.subscription.name, entry.position, exc)
            self.subscription.topic.stats.unreadable_entries += 1
            self.cursor.delete([entry.position])
            return None
        if metadata.HasField("txnid_most_bits") and self._hidden(metadata):   # (markers carry it too)
            self.cursor.delete([entry.position])
            return None
        return metadata

    def _hidden(self, metadata: pb.MessageMetadata) -> bool:
        """A marker, or an aborted transaction's entry (the buffer knows both; a topic without
        one can still hold markers written while transactions were on)."""
        buffer = self.subscription.topic.transaction_buffer
        return buffer.hides(metadata) if buffer is not None else metadata.HasField("marker_type")

    def _held_back(self, position: Position, metadata: pb.MessageMetadata) -> bool:
        """A delayed message whose time has not come: the tracker keeps it for later, as the
        topic's delayed delivery policy says now."""
        if not self.honours_delays or not metadata.HasField("deliver_at_time"):
            return False
        policy = self.subscription.topic.delayed_delivery
        if not policy.active:
            return False
        if self.delayed is None:
            self.delayed = DelayedDeliveryTracker(policy.tick_ms, self._replay_later)
        else:
            self.delayed.set_tick(policy.tick_ms)
        return self.delayed.hold(position, metadata.deliver_at_time)

    def _send(self, consumer: "Consumer", entry: Entry, count: int, throttle: "DispatchLimit | None") -> int:
        """Send one entry, counted against the dispatch rates; a partly acknowledged batch costs
        only its unacknowledged messages."""
        ack_set = self.subscription.ack_set_for_dispatch(entry.position)
        if ack_set is not None:
            count = unacked_in(ack_set)
        consumer.send(entry, count, self.subscription.redelivery_counts.get(entry.position, 0), ack_set)
        self._count_unacked(count)
        if throttle is not None:
            throttle.dispatched(count, len(entry.data))
        return count

    # -- acknowledgements and taking entries back ------------------------------------------

    def acknowledged(self, consumer: "Consumer", positions: Iterable[Position]) -> None:
        self._count_unacked(-consumer.acknowledged(positions))
        self._after_ack(consumer)

    def acknowledged_up_to(self, consumer: "Consumer", position: Position) -> None:
        self._count_unacked(-consumer.acknowledged_up_to(position))
        self._after_ack(consumer)

    def acknowledged_in_part(self, consumer: "Consumer", position: Position, unacked_in_entry: int) -> None:
        self._count_unacked(-consumer.acknowledged_in_part(position, unacked_in_entry))
        self._after_ack(consumer)

    def _count_unacked(self, change: int) -> None:
        """Messages sent (positive) or acknowledged and taken back (negative)."""
        self.unacked_messages += change

    def _after_ack(self, consumer: "Consumer") -> None:
        """Hook: a subscription type that blocks on unacknowledged messages resumes here."""

    def _take_pending(self, consumer: "Consumer", positions: Iterable[Position] | None = None) -> list[Position]:
        """Take a consumer's unacknowledged entries (all, or those named) back for redelivery."""
        before = consumer.unacked_messages
        taken = consumer.take_pending(positions)
        self._count_unacked(consumer.unacked_messages - before)
        return taken

    def replay_released(self, positions: list[Position]) -> None:
        """An aborted transaction released these entries: deliver them again, as Pulsar's abort
        redelivers."""
        for position in positions:
            self.subscription.count_redelivery(position)
        self._replay_later(positions)

    def _give_back(self, entries: list[Entry], replaying: bool) -> None:
        if replaying:
            self._requeue(e.position for e in entries)
        else:
            self.cursor.seek(entries[0].position)

    def _requeue(self, positions: Iterable[Position]) -> None:
        """Put positions (back) into the replay set."""
        self._replay.update(dict.fromkeys(positions))

    def _replay_later(self, positions: Iterable[Position]) -> None:
        """Queue positions for redelivery and interrupt a read parked at the end of the log."""
        self._requeue(positions)
        self.stop_reading()
        self.read_more()

    def rewind(self) -> None:
        """Restart reading just after mark-delete (acked holes are skipped by the cursor); a
        read in flight is discarded, since it may return entries from before the move."""
        self._replay.clear()
        if self.delayed is not None:
            self.delayed.clear()
        if self._read_task is not None:
            self._rewind_pending = True
            self.stop_reading()
        else:
            self.cursor.rewind()
            self.read_more()

    def stop_reading(self) -> None:
        """The read in flight returns at once (an entry it already fetched is kept for replay),
        or the parked one ends."""
        if self._read_task is not None or self._parked:
            self.cursor.cancel_pending_read()

    def entries_available(self, more: bool) -> None:
        """The cursor's call after a read that reached the end of the log (EntriesListener)."""
        self._parked = False
        if more:
            self.read_more()

    def close(self) -> None:
        self._closed = True
        if self.delayed is not None:
            self.delayed.clear()
        if self._rate_wait is not None:
            self._rate_wait.cancel()
            self._rate_wait = None
        self.stop_reading()
