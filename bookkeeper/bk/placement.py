"""Which bookies hold a ledger: ensembles from the bookies registered in ZooKeeper.

Writable bookies are the children of ``<root>/available`` (``readonly`` is a child too, and
skipped). A bookie that failed a request is kept out of new ensembles for a while: a crashed
bookie stays registered until its ZooKeeper session expires, and must not be picked again in
that window. Striping (RoundRobinDistributionSchedule): entry e goes to the ensemble's bookies
at indexes (e + k) mod E, k = 0..Qw-1.
"""

from __future__ import annotations

import random
import time

from ..errors import NotEnoughBookiesError
from ..zk_metadata_store import ZkMetadataStore

QUARANTINE_S = 30.0


def write_set(entry_id: int, ensemble_size: int, write_quorum: int) -> list[int]:
    return [(entry_id + k) % ensemble_size for k in range(write_quorum)]


class Placement:
    def __init__(self, store: ZkMetadataStore, root: str) -> None:
        self._store = store
        self._root = root
        self._quarantined: dict[str, float] = {}

    def quarantine(self, bookie_id: str) -> None:
        self._quarantined[bookie_id] = time.monotonic() + QUARANTINE_S

    def is_quarantined(self, bookie_id: str) -> bool:
        until = self._quarantined.get(bookie_id)
        if until is None:
            return False
        if until < time.monotonic():
            del self._quarantined[bookie_id]
            return False
        return True

    async def writable_bookies(self) -> list[str]:
        names = await self._store.children(f"{self._root}/available")
        return [name for name in names if name != "readonly"]

    async def new_ensemble(self, size: int) -> tuple[str, ...]:
        candidates = [b for b in await self.writable_bookies() if not self.is_quarantined(b)]
        if len(candidates) < size:
            raise NotEnoughBookiesError(f"need {size} bookies, {len(candidates)} writable: {candidates}")
        return tuple(random.sample(candidates, size))

    async def replacements(self, ensemble: tuple[str, ...], failed: set[str]) -> tuple[str, ...]:
        """ensemble with every failed bookie replaced by a writable one outside it."""
        taken = set(ensemble)
        candidates = [b for b in await self.writable_bookies()
                      if b not in taken and b not in failed and not self.is_quarantined(b)]
        random.shuffle(candidates)
        replaced = []
        for bookie in ensemble:
            if bookie in failed:
                if not candidates:
                    raise NotEnoughBookiesError(f"no bookie to replace {bookie} in {ensemble}")
                bookie = candidates.pop()
            replaced.append(bookie)
        return tuple(replaced)
