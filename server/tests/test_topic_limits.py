"""The admission limits without a network: which value is in force, and who is exempt."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest

from protocol import pulsar_api_pb2 as pb
from server.config import BrokerConfig
from server.errors import ConsumerBusy, NotAllowed, ProducerBusy
from server.policies.catalog import applied_view
from server.policies.topic_limits import (check_consumer_room, check_new_subscription, check_producer_room,
                                          check_subscription_type, message_size_limit)
from server.topics.topic_name import TopicName


@dataclass
class FakeTopic:
    name: TopicName
    policies: dict
    broker: SimpleNamespace
    producers: list = field(default_factory=list)
    subscriptions: dict = field(default_factory=dict)


def topic(policies: dict, name: str = "persistent://public/default/t", **config) -> FakeTopic:
    return FakeTopic(TopicName.parse(name), policies, SimpleNamespace(config=BrokerConfig(**config)))


def test_the_policy_in_force_overrides_the_broker_and_zero_is_no_limit():
    limited = topic({"max_producers_per_topic": 1}, max_producers_per_topic=5)
    limited.producers.append(object())
    with pytest.raises(ProducerBusy, match="^Topic 'persistent://public/default/t' reached max producers limit$"):
        check_producer_room(limited, on_request=True)
    with pytest.raises(ProducerBusy, match="^Topic reached max producers limit$"):
        check_producer_room(limited, on_request=False)
    unlimited = topic({"max_producers_per_topic": 0}, max_producers_per_topic=1)
    unlimited.producers.append(object())
    check_producer_room(unlimited, on_request=True)


def test_system_topics_are_exempt():
    events = topic({}, "persistent://public/default/__change_events", max_consumers_per_topic=1,
                   max_subscriptions_per_topic=1, subscription_types_enabled="Shared")
    events.subscriptions["s"] = SimpleNamespace(consumers=[object()])
    check_consumer_room(events)
    check_new_subscription(events, "another")
    check_subscription_type(events, pb.CommandSubscribe.Exclusive)


def test_limits_count_what_the_topic_holds():
    full = topic({"max_consumers_per_topic": 2, "max_subscriptions_per_topic": 2})
    full.subscriptions = {"a": SimpleNamespace(consumers=[object()]), "b": SimpleNamespace(consumers=[object()])}
    with pytest.raises(ConsumerBusy, match="^Topic reached max consumers limit$"):
        check_consumer_room(full)
    check_new_subscription(full, "a")   # an existing one is no new subscription
    with pytest.raises(NotAllowed, match="^Exceed the maximum number of subscriptions of the topic: persistent"):
        check_new_subscription(full, "c")


def test_an_empty_set_of_subscription_types_is_no_setting():
    view = applied_view({"subscription_types_enabled": ["Shared"]}, {"subscriptionTypesEnabled": []}, "standalone")
    assert view["subscription_types_enabled"] == ["Shared"]
    assert "subscription_types_enabled" not in applied_view({"subscription_types_enabled": []}, {}, "standalone")
    with pytest.raises(NotAllowed, match=r"^Topic\[\{persistent://public/default/t\}\] doesn't support Key_Shared"):
        check_subscription_type(topic(view), pb.CommandSubscribe.Key_Shared)
    check_subscription_type(topic({}), pb.CommandSubscribe.Key_Shared)   # the broker's: all four


def test_a_topic_message_size_counts_only_below_the_brokers():
    assert message_size_limit({"maxMessageSize": 1000}, 5000) == 1000
    assert message_size_limit({"maxMessageSize": 5000}, 5000) == 0
    assert message_size_limit({"maxMessageSize": 0}, 5000) == 0
    assert message_size_limit({}, 5000) == 0
