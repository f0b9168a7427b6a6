"""When the writing ledger is rolled over, and a cheap gate that asks on every add."""

from __future__ import annotations

import math

from bookkeeper.config import MB

from .config import StorageConfig


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
