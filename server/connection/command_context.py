"""What a command handler outside connection.py may use of its connection: the handlers of
transactions and client queries take this, not Connection, so arrows point one way."""

from __future__ import annotations

from typing import TYPE_CHECKING, Awaitable, Callable, Protocol

from protocol import commands
from protocol import pulsar_api_pb2 as pb
from protocol.codec import Send
from server.security.client_auth import ClientAuth

if TYPE_CHECKING:
    from server.broker_service import BrokerService
    from server.topics.producer import Producer
    from server.topics.subscriptions.consumer import Consumer

Cmd = pb.BaseCommand
ErrorBuilder = Callable[[int, int, str], Cmd]


class CommandContext(Protocol):
    broker: "BrokerService"
    auth: ClientAuth
    remote: str

    def write(self, command: Cmd) -> None: ...

    def respond(self, request_id: int, work: Awaitable[Cmd | None], on_error: ErrorBuilder = commands.error,
                answered: Callable[[], None] | None = None) -> None:
        """Run a request in the background; write its answer, or the error it raised."""

    def consumer(self, consumer_id: int) -> "Consumer":
        """The connection's consumer; NotAllowed when it has none of that id."""

    def admitted_producer(self, send: Send) -> "Producer | None":
        """The SEND's producer when the send passes the connection's checks (else answered)."""
