"""Where an unowned bundle goes: the registered broker owning the fewest bundles. A small
stand-in for Pulsar's load manager (which also weighs CPU, memory and traffic).

Lookups come in bursts (a client opens every partition at once), faster than the chosen brokers
publish their new counts; so redirects made here in the last seconds count as owned already, and
a bundle asked for again meanwhile goes to the broker chosen for it the first time.
"""

from __future__ import annotations

import time

from .broker_registry import BrokerAddress, BrokerRegistry
from .bundles import Bundle

#: How long a choice counts before the chosen broker's own figure is trusted.
PENDING_S = 5.0


class LoadSpread:
    def __init__(self, registry: BrokerRegistry) -> None:
        self._registry = registry
        self._pending: dict[str, tuple[float, BrokerAddress]] = {}   # bundle path -> (when, chosen)

    async def choose(self, bundle: Bundle) -> BrokerAddress:
        now = time.monotonic()
        self._pending = {path: c for path, c in self._pending.items() if now - c[0] < PENDING_S}
        earlier = self._pending.get(bundle.path)
        if earlier is not None:
            return earlier[1]
        brokers = await self._registry.brokers()
        me = self._registry.me
        if not brokers:
            return me   # our own node is being re-created after a session expiry
        load = {b.address.broker_id: b.num_bundles for b in brokers}
        for _, chosen in self._pending.values():
            if chosen.broker_id in load:
                load[chosen.broker_id] += 1
        best = min(brokers, key=lambda b: (load[b.address.broker_id], b.address.broker_id != me.broker_id,
                                           b.address.broker_id))
        if best.address.broker_id != me.broker_id:   # our own choice is taken (and published) at once
            self._pending[bundle.path] = (now, best.address)
        return best.address
