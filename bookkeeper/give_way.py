"""Background storage work gives way to the event loop.

The storage thread shares one interpreter with the loop that serves producers: a checkpoint
writing a full write cache holds the interpreter for a few hundred milliseconds of Python work,
and while it does, sends wait (at 20k unbatched msg/s the loop needs three quarters of the
interpreter, so a flush running flat out added 60-100 ms to every send for half a second). A
``GiveWay`` sleeps after each step of such work for a multiple of the user CPU time the step
took, which caps the work's share of the interpreter without a clock to tune per machine.

User time only: the kernel's share (copying into the page cache inside pwrite) runs with the
interpreter released. Counted too, it made a flush of large entries sleep four times its copy
time, and once copies got slow (a busy machine) the flush outlasted the filling of the next
write cache, which then held every add back for hundreds of milliseconds.
"""

from __future__ import annotations

import resource
import time

#: Sleep this many times the user CPU time of each step: the work takes at most a fifth.
SLEEP_PER_CPU = 4.0
#: Entries per step of a pass over a whole write cache (a fraction of a ms of Python each).
STEP_ENTRIES = 8192


def _thread_user_time() -> float:
    return resource.getrusage(resource.RUSAGE_THREAD).ru_utime


class GiveWay:
    def __init__(self, sleep_per_cpu: float = SLEEP_PER_CPU) -> None:
        self._sleep_per_cpu = sleep_per_cpu
        self._since = _thread_user_time()

    def __call__(self) -> None:
        """End a step: sleep in proportion to the user CPU it used (of the calling thread)."""
        used = _thread_user_time() - self._since
        if used > 0:
            time.sleep(used * self._sleep_per_cpu)
        self._since = _thread_user_time()
