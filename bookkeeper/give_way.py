"""Background storage work gives way to the event loop.

The storage thread shares one interpreter with the loop that serves producers: a checkpoint
writing a full write cache holds the interpreter for a few hundred milliseconds of Python work,
and while it does, sends wait (at 20k unbatched msg/s the loop needs three quarters of the
interpreter, so a flush running flat out added 60-100 ms to every send for half a second). A
``GiveWay`` sleeps after each step of such work for a multiple of the CPU time the step held
the interpreter, which caps the work's share of it without a clock to tune per machine.

Writes are not counted: the kernel's copy into the page cache inside pwrite runs with the
interpreter released. Counted, it made a flush of large entries sleep four times its copy
time, and once copies got slow (a busy machine) the flush outlasted the filling of the next
write cache, which then held every add back for hundreds of milliseconds. The thread's CPU
clock is exact, and the writes are timed on it around the call (``released``); the kernel's
user/system split of a thread's time is not used: it is sampled at clock ticks, so a step of
a few ms of Python could read as no user time at all and give no way.
"""

from __future__ import annotations

import time
from typing import Callable

#: Sleep this many times the interpreter time of each step: the work takes at most a fifth.
SLEEP_PER_CPU = 4.0
#: Entries per step of a pass over a whole write cache (a fraction of a ms of Python each).
STEP_ENTRIES = 8192


class GiveWay:
    """Made on the thread whose steps it paces (it reads that thread's CPU clock)."""

    def __init__(self, sleep_per_cpu: float = SLEEP_PER_CPU) -> None:
        self._sleep_per_cpu = sleep_per_cpu
        self._released = 0.0
        self._since = time.thread_time()

    def released(self, call: Callable[[], None]) -> None:
        """Run ``call``, which releases the interpreter (a write): its CPU time is not slept off."""
        started = time.thread_time()
        try:
            call()
        finally:
            self._released += time.thread_time() - started

    def __call__(self) -> None:
        """End a step: sleep in proportion to the CPU time it held the interpreter."""
        held = time.thread_time() - self._since - self._released
        if held > 0:
            time.sleep(held * self._sleep_per_cpu)
        self._released = 0.0
        self._since = time.thread_time()
