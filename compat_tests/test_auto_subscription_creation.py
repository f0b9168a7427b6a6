"""allowAutoSubscriptionCreation=false: a durable subscription must exist before a consumer
joins it (made through the admin API), readers still work, a namespace's
autoSubscriptionCreationOverride wins over the broker's setting, and a producer cannot have
its initial subscription made for it."""

from __future__ import annotations

import pulsar
import pytest

from compat_tests.admin_http import AdminHttp
from compat_tests.helpers import data_of, receive_n, send_all, unique_topic
from compat_tests.raw_requests import replies
from protocol import pulsar_api_pb2 as pb

Cmd = pb.BaseCommand
NO_AUTO_SUBSCRIPTIONS = {"allowAutoSubscriptionCreation": "false"}


@pytest.fixture
def strict_broker(make_broker):
    return make_broker(NO_AUTO_SUBSCRIPTIONS)


def expect_refused(broker, topic: str, subscription: str) -> None:
    """The C++ client under Python retries SubscriptionNotFound until its operation timeout (the
    exact refusal is checked on a bare connection below), so a short timeout here."""
    client = pulsar.Client(broker.service_url, operation_timeout_seconds=2,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        with pytest.raises(pulsar.Timeout):
            client.subscribe(topic, subscription)
    finally:
        client.close()


def test_new_subscription_refused_but_an_admin_made_one_serves(strict_broker, connect):
    client = connect(strict_broker)
    topic = unique_topic("no-auto-sub")
    send_all(client.create_producer(topic, batching_enabled=False), [b"m0", b"m1"])
    expect_refused(strict_broker, topic, "not-made")
    admin = AdminHttp(strict_broker.web_url)
    assert admin.put(f"/admin/v2/persistent/public/default/{topic}/subscription/made",
                     json={"ledgerId": -1, "entryId": -1}).status_code == 204
    consumer = client.subscribe(topic, "made")
    assert data_of(receive_n(consumer, 2)) == [b"m0", b"m1"]
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    assert data_of(receive_n(reader, 2)) == [b"m0", b"m1"]
    listed = admin.get(f"/admin/v2/persistent/public/default/{topic}/subscriptions").json()
    assert sorted(name for name in listed if not name.startswith("reader-")) == ["made"]


def test_namespace_override_allows_it(strict_broker, connect):
    admin = AdminHttp(strict_broker.web_url)
    namespace = "public/auto-sub"
    assert admin.put(f"/admin/v2/namespaces/{namespace}", json={}).status_code == 204
    path = f"/admin/v2/namespaces/{namespace}/autoSubscriptionCreation"
    assert admin.post(path, json={"allowAutoSubscriptionCreation": "yes"}).status_code == 400
    assert admin.post(path, json={"allowAutoSubscriptionCreation": True}).status_code == 204
    assert admin.get(path).json() == {"allowAutoSubscriptionCreation": True}
    client = connect(strict_broker)
    topic = f"persistent://{namespace}/{unique_topic('override')}"
    client.subscribe(topic, "auto-made").close()
    assert admin.delete(path).status_code == 204
    expect_refused(strict_broker, topic, "another")


def test_the_refusal_is_subscription_not_found(strict_broker):
    """(The Python client retries SubscriptionNotFound until its timeout; Java and Go give up.)"""
    topic = f"persistent://public/default/{unique_topic('code')}"
    [reply] = replies(strict_broker, Cmd(type=Cmd.SUBSCRIBE, subscribe=pb.CommandSubscribe(
        topic=topic, subscription="s", subType=pb.CommandSubscribe.Exclusive, consumer_id=1,
        request_id=1)))
    assert (reply.type, reply.error.error, reply.error.message) == \
        (Cmd.ERROR, pb.SubscriptionNotFound, "Subscription does not exist")


def test_producer_initial_subscription_refused(strict_broker):
    topic = f"persistent://public/default/{unique_topic('initial-sub')}"
    [reply] = replies(strict_broker, Cmd(type=Cmd.PRODUCER, producer=pb.CommandProducer(
        topic=topic, producer_id=1, request_id=1, initial_subscription_name="dlq-sub")))
    assert reply.type == Cmd.ERROR and reply.error.error == pb.NotAllowedError
    assert "auto subscription creation" in reply.error.message
