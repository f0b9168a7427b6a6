"""Which bookies hold a ledger: ensembles from the bookies registered in ZooKeeper.

Writable bookies are the children of ``<root>/available`` (``readonly`` is a child too, and
skipped). A bookie that failed a request is picked last for a while: a crashed bookie stays
registered until its ZooKeeper session expires, and must not be picked again in that window
while others can be. A bookie registered anew since (restarted: another session owns its node)
is healthy again at once. Striping (RoundRobinDistributionSchedule): entry e goes to the ensemble's bookies
at indexes (e + k) mod E, k = 0..Qw-1.
"""

from __future__ import annotations

import random
import time

from ..errors import NotEnoughBookiesError
from ..zk_metadata_store import ZkMetadataStore

QUARANTINE_S = 30.0
_UNSEEN = -1   # the failed bookie's registration is not looked at yet


def write_set(entry_id: int, ensemble_size: int, write_quorum: int) -> list[int]:
    return [(entry_id + k) % ensemble_size for k in range(write_quorum)]


class Placement:
    def __init__(self, store: ZkMetadataStore, root: str) -> None:
        self._store = store
        self._root = root
        #: bookie -> (quarantined until, session owning its registration then, or None)
        self._quarantined: dict[str, tuple[float, int | None]] = {}

    def quarantine(self, bookie_id: str) -> None:
        _, registration = self._quarantined.get(bookie_id, (0.0, _UNSEEN))
        self._quarantined[bookie_id] = (time.monotonic() + QUARANTINE_S, registration)

    def is_quarantined(self, bookie_id: str) -> bool:
        until, _ = self._quarantined.get(bookie_id, (0.0, None))
        if until < time.monotonic():
            self._quarantined.pop(bookie_id, None)
            return False
        return True

    async def _excluded(self, bookie_id: str) -> bool:
        """Quarantined, and still registered by the session first seen after it failed."""
        if not self.is_quarantined(bookie_id):
            return False
        until, registration = self._quarantined[bookie_id]
        owner = await self._store.ephemeral_owner(f"{self._root}/available/{bookie_id}")
        if registration == _UNSEEN:
            self._quarantined[bookie_id] = (until, owner)
        elif owner is not None and owner != registration:
            del self._quarantined[bookie_id]
            return False
        return True

    async def writable_bookies(self) -> list[str]:
        names = await self._store.children(f"{self._root}/available")
        return [name for name in names if name != "readonly"]

    async def _candidates(self, outside: set[str]) -> list[str]:
        """Writable bookies not in outside, in random order: the healthy first, then the
        quarantined (as BookKeeper does when too few are healthy: bookies cut off a while, all
        quarantined then, are used again as soon as they answer)."""
        healthy, quarantined = [], []
        for bookie in await self.writable_bookies():
            if bookie not in outside:
                (quarantined if await self._excluded(bookie) else healthy).append(bookie)
        random.shuffle(healthy)
        random.shuffle(quarantined)
        return healthy + quarantined

    async def new_ensemble(self, size: int) -> tuple[str, ...]:
        candidates = await self._candidates(set())
        if len(candidates) < size:
            raise NotEnoughBookiesError(f"need {size} bookies, {len(candidates)} writable: {sorted(candidates)}")
        return tuple(candidates[:size])

    async def replacements(self, ensemble: tuple[str, ...], failed: set[str]) -> tuple[str, ...]:
        """ensemble with every failed bookie replaced by a writable one outside it."""
        candidates = await self._candidates(set(ensemble) | failed)
        replaced = []
        for bookie in ensemble:
            if bookie in failed:
                if not candidates:
                    raise NotEnoughBookiesError(f"no bookie to replace {bookie} in {ensemble}")
                bookie = candidates.pop(0)
            replaced.append(bookie)
        return tuple(replaced)
