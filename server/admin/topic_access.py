"""What the topic and subscription resources share: names from the URL, the namespace check,
the loaded topic, and the partitions an operation on a partitioned topic fans out to."""

from __future__ import annotations

from urllib.parse import unquote_to_bytes

from server import web
from server.broker_service import BrokerService
from server.errors import InvalidTopicName
from server.topics.non_persistent_topic import NonPersistentTopic
from server.topics.subscriptions.subscription import Subscription
from server.topics.topic import Topic
from server.topics.topic_name import TopicName

from .errors import METHOD_NOT_ALLOWED, NOT_FOUND, PRECONDITION_FAILED, RestError, require
from .namespaces import Namespaces

#: Pulsar's REST paths of a topic: domain, tenant, namespace, local name.
TOPIC_PATH = "/admin/v2/{domain:persistent|non-persistent}/{tenant}/{namespace}/{topic}"
NAMESPACE_TOPICS_PATH = "/admin/v2/{domain:persistent|non-persistent}/{tenant}/{namespace}"


class TopicAccess:
    def __init__(self, broker: BrokerService, namespaces: Namespaces) -> None:
        self.broker = broker
        self.namespaces = namespaces

    @staticmethod
    def name(request: web.Request) -> TopicName:
        info = request.match_info
        try:
            unquote_to_bytes(info["topic"]).decode()   # the router leaves invalid UTF-8 %-encoded
        except UnicodeDecodeError:
            raise RestError(PRECONDITION_FAILED, "Topic name is not valid UTF-8") from None
        try:
            return TopicName.parse(f"{info['domain']}://{info['tenant']}/{info['namespace']}/{info['topic']}")
        except InvalidTopicName as exc:
            raise RestError(PRECONDITION_FAILED, str(exc)) from None

    async def existing_namespace(self, request: web.Request) -> TopicName:
        """The topic's name, once its namespace is known to exist (404 otherwise)."""
        name = self.name(request)
        await self.namespaces.get(name.namespace)
        return name

    async def topic(self, name: TopicName, create: bool = False) -> Topic:
        """The loaded persistent topic (loading it when stored, or auto-creating it when asked
        and allowAutoTopicCreation permits); 404 when it does not exist."""
        topic = await self.broker.get_topic(name, create=create)
        require(isinstance(topic, Topic), METHOD_NOT_ALLOWED, "Operation not allowed on a non-persistent topic")
        return topic

    async def any_topic(self, name: TopicName) -> "Topic | NonPersistentTopic":
        """The loaded topic, persistent or not; 404 when it does not exist."""
        return await self.broker.get_topic(name, create=False)

    async def partitions(self, name: TopicName) -> int:
        return await self.broker.partitioned_count(name)

    async def targets(self, name: TopicName, create: bool = False) -> list[Topic]:
        """The topic itself, or every partition of a partitioned topic."""
        count = await self.partitions(name)
        names = [name.partition(i) for i in range(count)] if count else [name]
        return [await self.topic(n, create) for n in names]

    async def subscription(self, topic: Topic, sub_name: str) -> Subscription:
        subscription = topic.subscriptions.get(sub_name)
        require(subscription is not None, NOT_FOUND, "Subscription not found")
        return subscription
