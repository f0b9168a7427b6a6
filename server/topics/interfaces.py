"""What topics, producers and consumers need of the two things around them: the broker that
loaded the topic, and the client connection a producer or consumer lives on.

BrokerService and Connection build topics and call into them; topics see those two only through
these small interfaces, so no import points back up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from managed_ledger.interfaces import MetadataStore
    from protocol import pulsar_api_pb2 as pb
    from server.config import BrokerConfig
    from server.policies.namespace_policies import NamespacePolicies

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

    def new_producer_name(self) -> str:
        """A producer name unique in this cluster, for producers that bring none."""

    async def unload_topic(self, name: TopicName) -> bool:
        """Close a loaded topic; its clients reconnect and look it up again."""


class ClientConnection(Protocol):
    """The connection of a producer or a consumer."""

    remote: str
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

    def detach_producer(self, producer: Producer) -> None: ...

    def close_producer_by_broker(self, producer: Producer) -> None: ...

    def close_consumer_by_broker(self, consumer: Consumer) -> None: ...
