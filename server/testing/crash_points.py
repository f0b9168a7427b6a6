"""Test-only crash points: `crash_point(name)` kills this process with SIGKILL when the
environment variable PULSARD_CRASH_AT names that point (read once, at import), so a test can
kill -9 the broker at an exact step. Unset, each call costs one comparison."""

from __future__ import annotations

import os
import signal

_CRASH_AT = os.environ.get("PULSARD_CRASH_AT", "")


def crash_point(name: str) -> None:
    if _CRASH_AT == name:
        os.kill(os.getpid(), signal.SIGKILL)
