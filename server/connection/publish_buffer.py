"""The broker-wide budget of bytes received in SENDs and not yet answered (Pulsar's
maxMessagePublishBufferSizeInMB).

Each connection also stops reading past maxPendingPublishRequestsPerConnection SENDs, but a
count does not bound bytes: twenty connections flooding 100 KB messages queued gigabytes
before the journal, and every other producer's receipt waited behind them. Past the budget, a
connection that sends stops being read until the budget is back under half; connections that
do not publish carry on.
"""

from __future__ import annotations

from typing import Protocol


#: Why a connection is not read, as its pause and resume name it.
REASON = "publish buffer"


class Publisher(Protocol):
    def pause_publishing(self, reason: object) -> None: ...

    def resume_publishing(self, reason: object) -> None: ...


class PublishBuffer:
    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        #: Bytes of SENDs taken and not yet receipted (or refused).
        self.pending = 0
        self._paused: set[Publisher] = set()

    def taken(self, publisher: Publisher, size: int) -> None:
        self.pending += size
        if 0 < self.max_bytes < self.pending and publisher not in self._paused:
            self._paused.add(publisher)
            publisher.pause_publishing(REASON)

    def answered(self, size: int) -> None:
        self.pending -= size
        if self._paused and self.pending <= self.max_bytes // 2:
            paused, self._paused = self._paused, set()
            for publisher in paused:
                publisher.resume_publishing(REASON)

    def forget(self, publisher: Publisher) -> None:
        """A closed connection is not resumed."""
        self._paused.discard(publisher)
