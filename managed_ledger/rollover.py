"""Replacing the ledger a managed ledger writes to: when (RolloverRule, with a cheap gate that
asks on every add, and RolloverTimer on the shared RolloverClock for an idle topic), and the
ledgers themselves (WritingLedgers: making the next one, sealing the last).

The state machine that decides to roll over and queues the adds meanwhile stays in
ManagedLedgerImpl, beside the add path that reads it on every add; what is here touches neither
that state nor the metadata, so the add path pays no indirection for it.
"""

from __future__ import annotations

import asyncio
import heapq
import logging
import math
from typing import Any, Callable

from bookkeeper.config import MB
from bookkeeper.errors import BookKeeperError, NoSuchLedgerError
from bookkeeper.interfaces import LedgerClient, ReadHandle, WriteHandle

from .config import PersistencePolicy, StorageConfig
from .ledger_list import LedgerInfo, LedgerList, now_ms
from .ledger_tags import MANAGED_LEDGER, LedgerOwner, LedgerTags

logger = logging.getLogger(__name__)


class RolloverRule:
    """Pulsar's rule: full (entries or size) or older than the maximum rollover time, and not
    younger than the minimum; a ledger without entries is never rolled over.

    ``ask_at`` is (entries, bytes, loop time) past which ``due`` is worth asking: every add
    compares against it, so a full ledger that is still too young is asked again only when it
    is old enough, not on each add until then."""

    __slots__ = ("_config", "_created", "ask_at")

    def __init__(self, config: StorageConfig) -> None:
        self._config = config
        self._created = 0.0
        self.ask_at: tuple[float, float, float] = (0, 0, 0.0)

    def start(self, now: float) -> None:
        """A new ledger starts taking adds."""
        config = self._config
        self._created = now
        self.ask_at = (config.max_entries_per_ledger, config.max_size_per_ledger_mb * MB,
                       now + config.max_ledger_rollover_minutes * 60)

    def due(self, entries: int, size: int, now: float) -> bool:
        if not entries:
            return False
        config = self._config
        age_s = now - self._created
        if (entries >= config.max_entries_per_ledger or size >= config.max_size_per_ledger_mb * MB
                or age_s >= config.max_ledger_rollover_minutes * 60):
            if age_s >= config.min_ledger_rollover_minutes * 60:
                return True
            self.ask_at = (math.inf, math.inf, self._created + config.min_ledger_rollover_minutes * 60)
        return False


class RolloverClock:
    """The rollover deadlines of every managed ledger on one loop timer: a deadline waits in
    the bucket of its tenth of a second (a list; a timer restarted or stopped meanwhile is
    passed over when its old bucket comes due), so idle topics keep no timer each."""

    __slots__ = ("_buckets", "_due", "_handle")

    #: Buckets per second: how late a deadline may fire.
    RESOLUTION = 10

    def __init__(self) -> None:
        self._buckets: dict[int, list[RolloverTimer]] = {}
        self._due: list[int] = []   # a heap of the buckets' keys
        self._handle: asyncio.TimerHandle | None = None

    def add(self, timer: RolloverTimer, delay: float) -> int:
        """Fire `timer` after `delay` seconds; the key it will be fired with."""
        loop = asyncio.get_running_loop()
        key = math.ceil((loop.time() + delay) * self.RESOLUTION)
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = []
            heapq.heappush(self._due, key)
            if self._due[0] == key:
                self._arm(loop)
        bucket.append(timer)
        return key

    def _arm(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._handle = loop.call_at(self._due[0] / self.RESOLUTION, self._fire, loop)

    def _fire(self, loop: asyncio.AbstractEventLoop) -> None:
        self._handle = None
        now = loop.time() * self.RESOLUTION
        while self._due and self._due[0] <= now:
            key = heapq.heappop(self._due)
            for timer in self._buckets.pop(key):
                try:
                    timer.fire(key)
                except Exception:   # one ledger's failure must not stop the others' deadlines
                    logger.exception("rollover check failed")
        if self._due:
            self._arm(loop)


class RolloverTimer:
    """Asks when the ledger reaches the maximum age (and a minute later while it was not
    due then), so an idle topic's last ledger is sealed too: ``check`` rolls over if due, and
    answers whether to ask again later. It runs from a ledger's first entry on (an empty one is
    never rolled over). ``check`` is a function of ``owner`` (see coalesced_task.py for why not
    a bound method)."""

    __slots__ = ("_clock", "_config", "_check", "_key", "_owner")

    RETRY_S = 60.0

    def __init__(self, clock: RolloverClock, config: StorageConfig, check: Callable[[Any], bool],
                 owner: object) -> None:
        self._clock = clock
        self._config = config
        self._check: Callable[[Any], bool] | None = check
        self._owner: object = owner
        self._key: int | None = None

    def restart(self) -> None:
        """A new ledger took its first entry: ask when it is old enough to roll over."""
        self._key = self._clock.add(self, self._config.max_ledger_rollover_minutes * 60)

    def cancel(self) -> None:
        self._key = None

    def stop(self) -> None:
        """For good (the ledger closes): a deadline still waiting holds no reference to it."""
        self._key = self._check = self._owner = None

    def fire(self, key: int) -> None:
        if key != self._key or self._check is None:
            return   # restarted, cancelled or stopped since
        self._key = None
        if self._check(self._owner):
            self._key = self._clock.add(self, self.RETRY_S)


class WritingLedgers:
    """Makes the ledgers a managed ledger writes to, and seals them: its own, at rollover and
    at close, and at open the one a previous run may have left open. A seal that fails is one
    warning line: opening with recovery seals the ledger later."""

    __slots__ = ("_name", "_bookkeeper", "_tags")

    def __init__(self, name: str, bookkeeper: LedgerClient, tags: LedgerTags) -> None:
        self._name = name
        self._bookkeeper = bookkeeper
        #: the store's: each ledger gets its own tags at creation, so the orphan cleaner knows whose it is
        self._tags = tags

    async def create(self, policy: PersistencePolicy) -> WriteHandle:
        """A ledger for this log's writes, replicated as its persistence policy says now (a
        change of the policy applies from the next ledger on, as in Pulsar)."""
        custom = self._tags.of(LedgerOwner(MANAGED_LEDGER, self._name))
        return await self._bookkeeper.create_ledger(custom, policy.ensemble_size,
                                                    policy.write_quorum, policy.ack_quorum)

    async def seal(self, writer: WriteHandle, ledgers: LedgerList) -> None:
        info = ledgers.get(writer.ledger_id)
        if info is not None:
            info.closed_at_ms = now_ms()
        try:
            await writer.close()
        except BookKeeperError as exc:
            logger.warning("managed ledger %s: sealing ledger %d failed: %s",
                           self._name, writer.ledger_id, exc)

    async def recover(self, info: LedgerInfo) -> ReadHandle | None:
        """Seal a ledger a previous run may have left open (only the last one can be, and for
        the others this is one metadata read); learn its true size, or that it is gone (None)."""
        try:
            handle = await self._bookkeeper.open_ledger(info.ledger_id, recovery=True)
        except NoSuchLedgerError:
            logger.warning("managed ledger %s: ledger %d is gone", self._name, info.ledger_id)
            info.entries = info.size = 0
            return None
        info.entries = handle.last_add_confirmed + 1
        info.size = handle.length
        if not info.closed_at_ms:
            info.closed_at_ms = now_ms()
        return handle
