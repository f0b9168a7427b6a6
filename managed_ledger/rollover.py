"""Replacing the ledger a managed ledger writes to: when (RolloverRule, with a cheap gate that
asks on every add, and RolloverTimer for an idle topic), and the ledgers themselves
(WritingLedgers: making the next one, sealing the last).

The state machine that decides to roll over and queues the adds meanwhile stays in
ManagedLedgerImpl, beside the add path that reads it on every add; what is here touches neither
that state nor the metadata, so the add path pays no indirection for it.
"""

from __future__ import annotations

import asyncio
import logging
import math
from typing import Callable

from bookkeeper.config import MB
from bookkeeper.errors import BookKeeperError, NoSuchLedgerError
from bookkeeper.interfaces import LedgerClient, ReadHandle, WriteHandle

from .config import PersistencePolicy, StorageConfig
from .ledger_list import LedgerInfo, LedgerList, now_ms

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


class RolloverTimer:
    """Asks again when the ledger reaches the maximum age (or a minute, if sooner), so an idle
    topic's last ledger is sealed too: ``check`` rolls over if due, and answers whether to ask
    again later. It runs from a ledger's first entry on (an empty one is never rolled over)."""

    __slots__ = ("_loop", "_config", "_check", "_handle")

    def __init__(self, loop: asyncio.AbstractEventLoop, config: StorageConfig, check: Callable[[], bool]) -> None:
        self._loop = loop
        self._config = config
        self._check = check
        self._handle: asyncio.TimerHandle | None = None

    def restart(self) -> None:
        """A new ledger took its first entry: ask when it may be old enough."""
        self.cancel()
        delay = min(self._config.max_ledger_rollover_minutes * 60, 60.0)
        self._handle = self._loop.call_later(delay, self._fire)

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()

    def _fire(self) -> None:
        self._handle = None
        if self._check():
            self.restart()


class WritingLedgers:
    """Makes the ledgers a managed ledger writes to, and seals them: its own, at rollover and
    at close, and at open the one a previous run may have left open. A seal that fails is one
    warning line: opening with recovery seals the ledger later."""

    __slots__ = ("_name", "_bookkeeper", "_custom")

    def __init__(self, name: str, bookkeeper: LedgerClient, custom: dict[str, bytes]) -> None:
        self._name = name
        self._bookkeeper = bookkeeper
        self._custom = custom   # its tags (ledger_tags.py), so the orphan cleaner knows whose it is

    async def create(self, policy: PersistencePolicy) -> WriteHandle:
        """A ledger for this log's writes, replicated as its persistence policy says now (a
        change of the policy applies from the next ledger on, as in Pulsar)."""
        return await self._bookkeeper.create_ledger(self._custom, policy.ensemble_size,
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
