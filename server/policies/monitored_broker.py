"""What a policy monitor needs of the broker, and nothing more.

The monitors (retention, TTL, backlog quotas, compaction, inactive topics) are built by
BrokerService and act on the topics it has loaded; they see it through this interface, so the
broker service depends on them and never the other way round.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from server.config import BrokerConfig
    from server.topics.non_persistent_topic import NonPersistentTopic
    from server.topics.topic import Topic
    from server.topics.topic_name import TopicName

    from .namespace_policies import NamespacePolicies


class MonitoredBroker(Protocol):
    config: BrokerConfig
    policies: NamespacePolicies

    @property
    def topics(self) -> list[Topic]:
        """The persistent topics loaded now."""

    @property
    def non_persistent_topics(self) -> list[NonPersistentTopic]:
        """The non-persistent topics loaded now."""

    def loaded_namespaces(self) -> set[str]:
        """The namespaces with a topic loaded (or loading) now."""

    async def delete_topic(self, name: TopicName, force: bool) -> None:
        """Delete a topic with its data (an inactive one)."""

    async def refresh_policies(self, topic: Topic | NonPersistentTopic) -> None:
        """Give a loaded topic the policies in force now (topic.policies)."""
