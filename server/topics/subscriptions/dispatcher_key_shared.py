"""Key_Shared: every entry goes to the consumer that owns its sticky key's hash, in order per key.

The sticky key comes from the entry's top-level MessageMetadata only (ordering_key, else
partition_key, else NONE_KEY), as in Pulsar: a batch is dispatched as one entry under the key of
its top-level metadata (the clients' key-based batcher puts one key per batch). The metadata is
parsed once per entry; the hash is remembered while the entry is unacknowledged or waiting.

Ordering across consumer changes uses Pulsar 4's "draining hashes" rule rather than the older
recently-joined-consumers rule: an entry of hash h may go to h's current owner only when no other
consumer still holds unacknowledged entries of h. So a key moves to its new owner as soon as its
own unacked messages are acked, without pausing the new owner's other keys. allowOutOfOrderDelivery
lifts that rule (and the next one).

Entries that cannot go now (owner without permits or at its unacked limit, hash still draining,
or older entries of the same hash waiting for redelivery) wait in the replay set without blocking
other keys; reading past them is bounded by Pulsar's look-ahead limits
(keySharedLookAheadMsgInReplayThreshold*). Delayed messages wait in the Shared dispatcher's
tracker and, when due, go to their key's owner without holding up newer messages of the key.
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

from protocol import pulsar_api_pb2 as pb

from .dispatcher import ReadLimits, messages_in
from .dispatcher_shared import SharedDispatcher
from .key_shared_selector import NONE_KEY, ConsumerSelector, policy_conflict, sticky_key_hash

if TYPE_CHECKING:
    from managed_ledger.position import Entry, Position

    from .consumer import Consumer
    from .subscription import Subscription

log = logging.getLogger(__name__)


@dataclass(slots=True, frozen=True)
class KeyedEntry:
    key_hash: int
    messages: int


@dataclass(frozen=True)
class LookAheadLimits:
    """How many messages may wait for replay while reading on (0 disables a bound)."""

    per_consumer: int = 2000
    per_subscription: int = 20000


def sticky_key_of(metadata: pb.MessageMetadata) -> bytes:
    if metadata.HasField("ordering_key"):
        return metadata.ordering_key
    if metadata.HasField("partition_key"):
        if metadata.partition_key_b64_encoded:
            try:
                return base64.b64decode(metadata.partition_key, validate=True)
            except (binascii.Error, ValueError):
                return NONE_KEY   # Pulsar falls back to NONE_KEY when the key does not decode
        return metadata.partition_key.encode()
    return NONE_KEY


def keyed_entry(metadata: pb.MessageMetadata) -> KeyedEntry:
    """Hash and message count of an entry, from its top-level metadata."""
    return KeyedEntry(sticky_key_hash(sticky_key_of(metadata)), messages_in(metadata))


class KeySharedDispatcher(SharedDispatcher):
    __slots__ = ("_holder", "_holders", "_keyed", "_look_ahead", "_replay_hashes", "_replay_messages",
                 "_selector", "allow_out_of_order", "meta")

    def __init__(
        self, subscription: "Subscription", limits: ReadLimits, meta: pb.KeySharedMeta,
        selector: ConsumerSelector, look_ahead: LookAheadLimits,
    ) -> None:
        super().__init__(subscription, limits)
        self.meta = meta
        self.allow_out_of_order = meta.allowOutOfOrderDelivery
        self._selector = selector
        self._look_ahead = look_ahead
        #: entries sent and unacked, or waiting for replay -> their hash and message count.
        self._keyed: dict["Position", KeyedEntry] = {}
        #: entries sent and unacked -> the consumer holding them.
        self._holder: dict["Position", "Consumer"] = {}
        #: hash -> consumer -> how many unacked entries of that hash it holds.
        self._holders: dict[int, Counter["Consumer"]] = {}
        #: hash -> entries of that hash in the replay set; and the messages in the replay set.
        self._replay_hashes: Counter[int] = Counter()
        self._replay_messages = 0

    def incompatibility(self, meta: pb.KeySharedMeta) -> str | None:
        """Why a consumer with this policy cannot join the connected ones (Pulsar's wording)."""
        return policy_conflict(self.meta, meta)

    # -- membership ---------------------------------------------------------------------------

    def _join(self, consumer: "Consumer") -> None:
        self._selector.add_consumer(consumer)
        super()._join(consumer)
        self._wake()

    def remove_consumer(self, consumer: "Consumer") -> None:
        if consumer in self.consumers:
            self._selector.remove_consumer(consumer)
            super().remove_consumer(consumer)

    def flow(self, consumer: "Consumer", permits: int) -> None:
        consumer.flow(permits)
        if self._replay:
            self._wake()
        else:
            self.read_more()

    def acknowledged(self, consumer: "Consumer", positions: Iterable["Position"]) -> None:
        positions = list(positions)
        super().acknowledged(consumer, positions)
        for position in positions:
            self._release(position)
            self._unqueue(position)
            self._keyed.pop(position, None)
        if self._replay:
            self._wake()   # a hash may be free, a consumer unblocked, or look-ahead room made

    def _wake(self) -> None:
        """Something waiting may go now: stop a read parked at the end of the log and read again."""
        self.stop_reading()
        self.read_more()

    # -- holders: who has unacked entries of which hash ----------------------------------------

    def _hold(self, position: "Position", key_hash: int, consumer: "Consumer") -> None:
        self._holder[position] = consumer
        self._holders.setdefault(key_hash, Counter())[consumer] += 1

    def _release(self, position: "Position") -> None:
        """Forget who holds position (acknowledged, or taken back for redelivery)."""
        consumer = self._holder.pop(position, None)
        if consumer is None:
            return
        key_hash = self._keyed[position].key_hash
        counts = self._holders[key_hash]
        counts[consumer] -= 1
        if counts[consumer] <= 0:
            del counts[consumer]
            if not counts:
                del self._holders[key_hash]

    def _held_by_another(self, key_hash: int, consumer: "Consumer") -> bool:
        holders = self._holders.get(key_hash)
        return bool(holders) and any(holder is not consumer for holder in holders)

    # -- the replay set, with its hashes ----------------------------------------------------

    def _requeue(self, positions: Iterable["Position"]) -> None:
        for position in positions:
            self._release(position)
            if position in self._replay:
                continue
            self._replay[position] = None
            keyed = self._keyed.get(position)
            if keyed is not None:
                self._replay_hashes[keyed.key_hash] += 1
                self._replay_messages += keyed.messages

    def _unqueue(self, position: "Position") -> None:
        if position not in self._replay:
            return
        del self._replay[position]
        keyed = self._keyed.get(position)
        if keyed is not None:
            self._replay_hashes[keyed.key_hash] -= 1
            if self._replay_hashes[keyed.key_hash] <= 0:
                del self._replay_hashes[keyed.key_hash]
            self._replay_messages -= keyed.messages

    def _next_replay(self, max_entries: int) -> list["Position"]:
        """The oldest waiting entries whose owner can take them now; the others keep waiting."""
        chosen: list["Position"] = []
        ready: dict[int, bool] = {}
        for position in sorted(self._replay):
            keyed = self._keyed.get(position)
            if keyed is not None:
                if keyed.key_hash not in ready:
                    ready[keyed.key_hash] = self._can_go_now(keyed.key_hash)
                if not ready[keyed.key_hash]:
                    continue
            chosen.append(position)
            if len(chosen) >= max_entries:
                break
        for position in chosen:
            self._unqueue(position)
        return chosen

    def _can_go_now(self, key_hash: int) -> bool:
        consumer = self._selector.select(key_hash)
        return consumer is not None and consumer.can_take_messages and not self._must_wait(key_hash, consumer, True)

    def _new_read_limit(self, max_entries: int) -> int:
        """Read on past waiting entries only while fewer messages than the look-ahead limit wait
        (an entry holds at least one message, so the room in messages bounds the entries)."""
        limits = [self._look_ahead.per_subscription, self._look_ahead.per_consumer * len(self.consumers)]
        bounds = [limit for limit in limits if limit > 0]
        if not bounds:
            return max_entries
        return min(max_entries, min(bounds) - self._replay_messages)

    def rewind(self) -> None:
        super().rewind()
        self._replay_hashes.clear()
        self._replay_messages = 0
        self._keyed = {p: k for p, k in self._keyed.items() if p in self._holder}

    # -- dispatching ----------------------------------------------------------------------

    def _must_wait(self, key_hash: int, consumer: "Consumer", replaying: bool) -> bool:
        """Per-key order: older entries of the hash are still held by another consumer, or
        (for a fresh entry) older entries of the hash wait for redelivery."""
        if self.allow_out_of_order:
            return False
        if self._held_by_another(key_hash, consumer):
            return True
        return not replaying and self._replay_hashes.get(key_hash, 0) > 0

    def _dispatch(self, entries: list["Entry"], replaying: bool) -> None:
        throttle = self.subscription.dispatch_throttle()
        sent_messages = sent_bytes = read_messages = 0
        for entry in entries:
            position = entry.position
            if replaying and self.cursor.is_deleted(position):
                self._keyed.pop(position, None)
                continue
            keyed = self._keyed.get(position)
            if keyed is None:   # first dispatch (or due after a delay): the one metadata parse
                metadata = self._readable_metadata(entry)
                if metadata is None or self._held_back(position, metadata):
                    continue
                keyed = self._keyed[position] = keyed_entry(metadata)
            read_messages += keyed.messages
            consumer = self._selector.select(keyed.key_hash)
            if (consumer is None or not consumer.can_take_messages
                    or (throttle is not None and not throttle.allows_more())
                    or self._must_wait(keyed.key_hash, consumer, replaying)):
                self._requeue([position])
                continue
            self._hold(position, keyed.key_hash, consumer)
            sent_messages += self._send(consumer, entry, keyed.messages, throttle)
            sent_bytes += len(entry.data)
        self._observe_batch_sizes(read_messages, len(entries))
        self.subscription.dispatched(sent_messages, sent_bytes)
