"""Per-topic counters: cheap increments on the hot path, read by /metrics and the admin API."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class TopicStats:
    messages_in: int = 0
    bytes_in: int = 0
    messages_out: int = 0
    bytes_out: int = 0

    def published(self, messages: int, size: int) -> None:
        self.messages_in += messages
        self.bytes_in += size

    def dispatched(self, messages: int, size: int) -> None:
        self.messages_out += messages
        self.bytes_out += size
