"""Liveness of a connection, as Pulsar's keepAliveIntervalSeconds: a peer silent for one
interval is pinged, and dropped when the next interval passes without a word from it."""

from __future__ import annotations

import asyncio
from typing import Callable


class Keepalive:
    """Checks the peer once per interval; data_received and PONG mark it heard from."""

    def __init__(self, interval_s: float, ping: Callable[[], None], drop: Callable[[], None]) -> None:
        self._interval_s = interval_s
        self._ping = ping
        self._drop = drop
        #: Set by the connection on any data from the peer.
        self.heard = True
        self._ping_outstanding = False
        self._timer: asyncio.TimerHandle | None = None

    def start(self) -> None:
        self._timer = asyncio.get_running_loop().call_later(self._interval_s, self._check)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()

    def pong(self) -> None:
        self._ping_outstanding = False

    def _check(self) -> None:
        if not self.heard:
            if self._ping_outstanding:
                self._drop()
                return
            self._ping_outstanding = True
            self._ping()
        else:
            self._ping_outstanding = False
        self.heard = False
        self.start()
