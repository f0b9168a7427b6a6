"""The limits a topic puts on what it admits, as Pulsar 3.0.7 enforces them, each read from the
policies in force (`topic.policies`: the topic's own, else its namespace's; a dict lookup, never
the store) and else from the broker's key; 0 or less is no limit. System topics are exempt.

- producers per topic: ProducerBusy, checked when the PRODUCER arrives (naming the topic, as
  Pulsar's ServerCnx) and again when the producer is added (AbstractTopic.internalAddProducer);
- consumers per topic: ConsumerBusy, likewise on SUBSCRIBE and when the consumer is added;
- consumers per subscription: ConsumerBusy, when the dispatcher takes the consumer;
- subscriptions per topic: NotAllowed, when a subscription would be created;
- enabled subscription types (persistent topics): NotAllowed, on SUBSCRIBE;
- maxMessageSize (topic level only): a SEND above it is refused with NotAllowed, unless it is a
  chunk or the limit is not below the broker's maxMessageSize (which the frame decoder enforces);
- unacknowledged messages per consumer / per subscription: read at every change of the counts
  (server/topics/subscriptions), so a new value reaches connected consumers at their next
  dispatch, FLOW or acknowledgement.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from protocol import pulsar_api_pb2 as pb
from server.errors import ConsumerBusy, NotAllowed, ProducerBusy

from .change_events import is_system_topic

if TYPE_CHECKING:
    from server.config import BrokerConfig
    from server.topics.topic_name import TopicName

MAX_PRODUCERS = "max_producers_per_topic"
MAX_CONSUMERS = "max_consumers_per_topic"
MAX_CONSUMERS_PER_SUBSCRIPTION = "max_consumers_per_subscription"
MAX_UNACKED_PER_CONSUMER = "max_unacked_messages_per_consumer"
MAX_UNACKED_PER_SUBSCRIPTION = "max_unacked_messages_per_subscription"
MAX_SUBSCRIPTIONS = "max_subscriptions_per_topic"
SUBSCRIPTION_TYPES = "subscription_types_enabled"
MAX_MESSAGE_SIZE = "maxMessageSize"


class ConfiguredBroker(Protocol):
    config: "BrokerConfig"


class LimitedTopic(Protocol):
    """What the checks need of a topic: its name, the policies in force, its broker's
    configuration, and what it holds."""

    name: "TopicName"
    policies: dict[str, Any]
    broker: ConfiguredBroker
    subscriptions: dict

    @property
    def producers(self) -> list: ...


def in_force(policies: dict[str, Any], field: str, broker_value: int) -> int:
    value = policies.get(field)
    return broker_value if value is None else value


def _reached(topic: LimitedTopic, field: str, broker_value: int, count: int) -> bool:
    limit = in_force(topic.policies, field, broker_value)
    return 0 < limit <= count and not is_system_topic(topic.name)


def check_producer_room(topic: LimitedTopic, on_request: bool) -> None:
    """ProducerBusy when the topic has its maximum of producers; on the PRODUCER request the
    message names the topic."""
    if _reached(topic, MAX_PRODUCERS, topic.broker.config.max_producers_per_topic, len(topic.producers)):
        where = f" '{topic.name}'" if on_request else ""
        raise ProducerBusy(f"Topic{where} reached max producers limit")


def check_consumer_room(topic: LimitedTopic) -> None:
    consumers = sum(len(subscription.consumers) for subscription in topic.subscriptions.values())
    if _reached(topic, MAX_CONSUMERS, topic.broker.config.max_consumers_per_topic, consumers):
        raise ConsumerBusy("Topic reached max consumers limit")


def check_subscription_room(topic: LimitedTopic, consumers: int) -> None:
    """A subscription with `consumers` connected takes one more, or ConsumerBusy."""
    if _reached(topic, MAX_CONSUMERS_PER_SUBSCRIPTION, topic.broker.config.max_consumers_per_subscription,
                consumers):
        raise ConsumerBusy("Subscription reached max consumers limit")


def check_new_subscription(topic: LimitedTopic, name: str) -> None:
    """NotAllowed when a subscription of that name would be one too many."""
    if name not in topic.subscriptions and _reached(
            topic, MAX_SUBSCRIPTIONS, topic.broker.config.max_subscriptions_per_topic, len(topic.subscriptions)):
        raise NotAllowed(f"Exceed the maximum number of subscriptions of the topic: {topic.name}")


def check_subscription_type(topic: LimitedTopic, sub_type: int) -> None:
    """NotAllowed for a type the topic does not enable (an empty set at a level is no setting)."""
    if is_system_topic(topic.name):
        return
    enabled = topic.policies.get(SUBSCRIPTION_TYPES) or topic.broker.config.enabled_subscription_types
    name = pb.CommandSubscribe.SubType.Name(sub_type)
    if name not in enabled:
        raise NotAllowed(f"Topic[{{{topic.name}}}] doesn't support {name} sub type!")


def message_size_limit(policies: dict[str, Any], broker_max: int) -> int:
    """The topic's maxMessageSize where it is below the broker's (0: none of its own)."""
    limit = policies.get(MAX_MESSAGE_SIZE) or 0
    return limit if 0 < limit < broker_max else 0


def unacked_per_consumer(policies: dict[str, Any], config: "BrokerConfig") -> int:
    return in_force(policies, MAX_UNACKED_PER_CONSUMER, config.max_unacked_messages_per_consumer)


def unacked_per_subscription(policies: dict[str, Any], config: "BrokerConfig") -> int:
    return in_force(policies, MAX_UNACKED_PER_SUBSCRIPTION, config.max_unacked_messages_per_subscription)
