"""What topics, producers and consumers need of the two things around them: the broker that
loaded the topic, and the client connection a producer or consumer lives on.

BrokerService and Connection build topics and call into them; topics see those two only through
these small interfaces, so no import points back up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterable, Protocol

if TYPE_CHECKING:
    from managed_ledger.interfaces import ManagedLedgerFactory, MetadataStore
    from protocol import pulsar_api_pb2 as pb
    from server.config import BrokerConfig
    from server.policies.namespace_policies import NamespacePolicies

    from managed_ledger.position import Entry, Position
    from server.errors import BrokerError
    from server.transactions.interfaces import TxnID

    from .producer import Producer
    from .subscriptions.consumer import Consumer
    from .topic import Topic
    from .topic_name import TopicName


class ProducerAdmission(Protocol):
    async def check_producer_allowed(self, topic: Topic) -> None:
        """Raise when the topic's backlog quota refuses new producers."""


class TopicBroker(Protocol):
    """The broker that loaded a topic."""

    config: BrokerConfig
    policies: NamespacePolicies
    metadata: MetadataStore
    backlog_quotas: ProducerAdmission
    #: Where its subscriptions keep their pending-ack logs (transactions).
    storage: ManagedLedgerFactory

    def new_producer_name(self) -> str:
        """A producer name unique in this cluster, for producers that bring none."""

    async def unload_topic(self, name: TopicName) -> bool:
        """Close a loaded topic; its clients reconnect and look it up again."""


class PublishLimit(Protocol):
    """A publish rate a topic counts its runs of SENDs against (server/policies/publish_throttle.py)."""

    def published(self, messages: int, size: int, producers: Iterable[Producer]) -> None:
        """Past the rate, the producers' connections stop being read for a while."""


class DispatchLimit(Protocol):
    """The dispatch rates a subscription's reads obey (server/policies/dispatch_throttle.py)."""

    def read_limit(self, entries: int, messages_per_entry: float | None, bytes_per_entry: float | None) -> int:
        """Entries the next read may fetch, at most `entries`; 0 until refill_in_s()."""

    def refill_in_s(self) -> float: ...

    def allows_more(self) -> bool:
        """Whether the next entry may go out."""

    def dispatched(self, messages: int, size: int) -> None:
        """An entry of `messages` messages and `size` bytes went out."""


class TopicRateLimits(Protocol):
    """A topic's dispatch and subscribe rates (server/policies/rate_limits.py)."""

    def dispatch(self, subscription: str) -> DispatchLimit | None:
        """None when nothing limits the subscription's dispatch."""

    def check_subscribe(self, host: str, consumer_name: str, consumer_id: int) -> None:
        """Raise NotAllowed when this consumer subscribes too often."""


class ClientConnection(Protocol):
    """The connection of a producer or a consumer."""

    remote: str
    #: The client's host (its address without the port).
    host: str
    client_version: str
    #: Whether the client understands REACHED_END_OF_TOPIC.
    handles_end_of_topic: bool

    @property
    def writable(self) -> bool:
        """False while the transport's write buffer is above its high-water mark."""

    def write(self, command: pb.BaseCommand) -> None: ...

    def write_parts(self, *parts: bytes) -> None: ...

    def write_frame(self, frame: bytes) -> None: ...

    def publish_completed(self, size: int, count: int) -> None:
        """count SENDs of size bytes in all got their answers: they leave the publish budget."""

    def pause_publishing(self, reason: object) -> None:
        """Stop reading the connection until resume_publishing with the same reason."""

    def resume_publishing(self, reason: object) -> None: ...

    def detach_producer(self, producer: Producer) -> None: ...

    def close_producer_by_broker(self, producer: Producer) -> None: ...

    def close_consumer_by_broker(self, consumer: Consumer) -> None: ...


class TopicTransactions(Protocol):
    """A persistent topic's transaction buffer as the topic, its producers and dispatchers use
    it (server/transactions/buffer/; the coordinator's side is the contract's TransactionBuffer)."""

    def refusal(self, txn: "TxnID") -> "BrokerError | None":
        """Why a SEND of the transaction is refused here (it ended on this topic), or None."""

    def append(self, entry: bytes, num_messages: int, txn: "TxnID",
               on_done: "Callable[[Position | None, BaseException | None], None]") -> None: ...

    def hides(self, metadata: "pb.MessageMetadata") -> bool:
        """A marker, or an aborted transaction's entry: never delivered (skipped as acknowledged)."""

    def hides_entry(self, entry: "Entry") -> bool:
        """hides, for a whole entry (an unreadable one too)."""

    async def last_dispatchable(self) -> "Entry | None": ...

    async def close(self) -> None: ...
