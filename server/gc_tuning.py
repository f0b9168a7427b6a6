"""Keep Python's cyclic garbage collector off the start-up and the publish path.

Start-up: the collector is off while the modules load (server/__main__.py); they make some
hundred thousand objects that all stay, so its passes over them (about 13 ms of a start) found
nothing. Once the broker serves, what start-up made is frozen out of every later collection.

Publish path: with the default thresholds the collector ran a full collection every ~13k
unbatched messages, each stalling the event loop for 40-100 ms (more than 1 s of CPU per 250k
messages, and the p99 publish latency). Nearly everything a message allocates is freed by
reference counting, so the young generation is collected after 20k allocations instead of 700
and the older ones rarely.
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 20_000
MIDDLE_THRESHOLD = 20
OLD_THRESHOLD = 100


def collect_rarely() -> None:
    """Raise the thresholds (when a broker starts)."""
    gc.set_threshold(YOUNG_THRESHOLD, MIDDLE_THRESHOLD, OLD_THRESHOLD)


def collect_from_now_on() -> None:
    """Once the broker serves: freeze what start-up made (never scanned again), then collect."""
    gc.freeze()
    gc.enable()
