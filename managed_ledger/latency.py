"""Add-entry latency in Pulsar's storage write latency buckets (milliseconds).

Buckets are not cumulative, as Pulsar's pulsar_storage_write_latency_le_* metrics: each counts
the adds whose latency fell between the previous bound and its own; `overflow` the rest.
Recording is one bisection and three additions per run of adds (which share a latency).
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field

#: Upper bounds of the buckets, in milliseconds.
WRITE_LATENCY_BOUNDS_MS = (0.5, 1.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 1000.0)


@dataclass(slots=True)
class LatencyHistogram:
    counts: list[int] = field(default_factory=lambda: [0] * (len(WRITE_LATENCY_BOUNDS_MS) + 1))
    total_ms: float = 0.0
    count: int = 0

    def record(self, latency_ms: float, adds: int) -> None:
        self.counts[bisect_left(WRITE_LATENCY_BOUNDS_MS, latency_ms)] += adds
        self.total_ms += latency_ms * adds
        self.count += adds
