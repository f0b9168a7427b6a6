"""Back-pressure on a connection's write side: a consumer that stops reading its socket must
not make the broker buffer everything it is sent, whatever permits it handed out.

The transport says when its write buffer passes the high-water mark (pause_writing) and when
it drains below the low one (resume_writing). In between, dispatchers treat the connection's
consumers as unable to take messages (as Pulsar checks Netty's channel writability): entries
stay in storage, other consumers of a Shared subscription carry on, and a non-persistent topic
drops what such a consumer cannot take. Memory per connection is then bounded by the
high-water mark plus one dispatch batch.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:
    from server.topics.subscriptions.consumer import Consumer

#: Above this many buffered bytes a connection takes no more messages (Netty's default is
#: 64 KiB; larger keeps a fast consumer's pipe full between two loop iterations).
HIGH_WATER = 1024 * 1024
#: Below this many it takes messages again.
LOW_WATER = 256 * 1024


class WriteGate:
    """Open while the connection's transport can take more bytes."""

    def __init__(self) -> None:
        self.open = True

    @staticmethod
    def attach(transport: asyncio.WriteTransport) -> None:
        transport.set_write_buffer_limits(high=HIGH_WATER, low=LOW_WATER)

    def pause(self) -> None:
        self.open = False

    def resume(self, consumers: Iterable["Consumer"]) -> None:
        """The buffer drained: the consumers' dispatchers may send to them again."""
        self.open = True
        for consumer in consumers:
            consumer.subscription.flow(consumer, 0)
