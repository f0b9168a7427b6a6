"""Where the leader puts an unowned bundle: Pulsar's ModularLoadManagerImpl choice with its
default strategy, LeastLongTermMessageRate.

1. A bundle placed since its broker last reported goes to the same broker again (a client
   retrying its lookup must not be sent elsewhere meanwhile).
2. Of the brokers, those serving the fewest bundles of the bundle's namespace, counting the
   placements not reported yet (a namespace spreads over the cluster).
3. Of those, the one with the lowest long-term message rate (its bundles' means, plus the
   bundles placed on it since its report, each counted at its own mean or Pulsar's default
   guess); a broker whose busiest resource is above loadBalancerBrokerOverloadedThresholdPercentage
   counts as infinitely loaded. Pulsar picks at random among equals; here the broker owning
   fewest bundles, then the first by name, so a burst of lookups spreads the same way each time.
"""

from __future__ import annotations

import math

from .load_data import LoadData, namespace_of

#: A placement the chosen broker never took (its client went away) stops counting after this.
PREALLOCATION_TTL_S = 30.0


def forget_placements(data: LoadData, now: float) -> None:
    """Drop the placements the chosen broker has reported taking, or never took, or of a
    broker that is gone."""
    data.preallocated = {bundle: (broker, when) for bundle, (broker, when) in data.preallocated.items()
                         if broker in data.brokers and bundle not in data.brokers[broker].bundles
                         and now - when < PREALLOCATION_TTL_S}


def select_broker(data: LoadData, bundle: str, overloaded_fraction: float, now: float) -> str | None:
    """The broker for the bundle (None when no broker has reported), remembered as placed."""
    earlier = data.preallocated.get(bundle)
    if earlier is not None and earlier[0] in data.brokers:
        return earlier[0]
    if not data.brokers:
        return None
    namespace = namespace_of(bundle)
    spread = {broker: data.namespace_bundles(broker, namespace) for broker in data.brokers}
    fewest = min(spread.values())
    best = least_long_term_message_rate(data, [b for b, n in spread.items() if n == fewest], overloaded_fraction)
    data.preallocated[bundle] = (best, now)
    return best


def least_long_term_message_rate(data: LoadData, candidates: list[str], overloaded_fraction: float) -> str:
    def score(broker: str) -> tuple[float, int, str]:
        load = data.brokers[broker]
        rate = math.inf if load.max_usage() > overloaded_fraction else data.long_term_rate(broker)
        pending = sum(1 for chosen, _ in data.preallocated.values() if chosen == broker)
        return rate, len(load.bundles) + pending, broker
    return min(candidates, key=score)
