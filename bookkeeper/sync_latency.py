"""How long the journal's fsyncs take, as a Prometheus histogram (cumulative buckets, seconds):
the one number that bounds every send's latency. Written by the journal thread, read by
metrics scrapes; a scrape may see a count one sync ahead of the sum, which is harmless."""

from __future__ import annotations

from dataclasses import dataclass, field

#: Upper bounds in seconds (0.1 ms .. 1 s), then +Inf.
SYNC_BOUNDS_S = (0.0001, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0)


@dataclass
class SyncLatency:
    buckets: list[int] = field(default_factory=lambda: [0] * len(SYNC_BOUNDS_S))
    count: int = 0
    total_s: float = 0.0

    def record(self, seconds: float) -> None:
        for index, bound in enumerate(SYNC_BOUNDS_S):
            if seconds <= bound:
                self.buckets[index] += 1
        self.count += 1
        self.total_s += seconds
