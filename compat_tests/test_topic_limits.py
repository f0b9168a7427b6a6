"""What a topic admits, under the limit in force (topic policy, else namespace policy, else the
broker's key), as Pulsar 3.0.7 refuses it: producers and consumers per topic, consumers per
subscription, subscriptions per topic, enabled subscription types, and a topic's own
maxMessageSize. Each limit is set through the admin REST API on a topic that is loaded and in
use; a change takes effect without a restart and a removal falls back a level. The official
Python client shows the refusal; a bare connection shows Pulsar's exact error code and text.

Pulsar applies namespace and topic policies asynchronously, so every check that follows a change
retries until the new limit shows (what a retry admits meanwhile is taken back)."""

from __future__ import annotations

import time
import uuid

import pulsar
import pytest

from compat_tests.admin_http import AdminHttp
from compat_tests.helpers import data_of, expect_nothing, receive_n
from compat_tests.raw_requests import RawConnection, replies
from protocol import pulsar_api_pb2 as pb
from protocol.entry import make_entry

Cmd = pb.BaseCommand
SETTLE_S = 10.0
#: Broker keys of test_broker_keys_limit_every_topic.
BROKER_LIMITS = {"maxProducersPerTopic": 1, "maxConsumersPerTopic": 3, "maxConsumersPerSubscription": 2,
                 "maxSubscriptionsPerTopic": 2, "subscriptionTypesEnabled": "Exclusive,Shared"}


@pytest.fixture
def http(broker) -> AdminHttp:
    return AdminHttp(broker.web_url)


@pytest.fixture
def namespace(http) -> str:
    """A namespace of the test's own: its policies reach no other test's topics."""
    name = f"public/limits-{uuid.uuid4().hex[:8]}"
    assert http.put(f"/admin/v2/namespaces/{name}").status_code == 204
    return name


class Policies:
    """Set and remove one policy at namespace and topic level over REST."""

    def __init__(self, http: AdminHttp, topic: str) -> None:
        self.http = http
        self.namespace = topic.split("://", 1)[1].rsplit("/", 1)[0]
        self.topic_path = "/admin/v2/" + topic.replace("://", "/")

    def create_topic(self) -> None:
        assert self.http.put(self.topic_path).status_code == 204

    def set_namespace(self, path: str, value) -> None:
        answer = self.http.post(f"/admin/v2/namespaces/{self.namespace}/{path}", json=value)
        assert answer.status_code == 204, answer.text

    def remove_namespace(self, path: str) -> None:
        assert self.http.delete(f"/admin/v2/namespaces/{self.namespace}/{path}").status_code == 204

    def set_topic(self, path: str, value) -> None:
        answer = self.http.post(f"{self.topic_path}/{path}", json=value)
        assert answer.status_code == 204, answer.text

    def remove_topic(self, path: str) -> None:
        assert self.http.delete(f"{self.topic_path}/{path}").status_code == 204

    def applied(self, path: str):
        answer = self.http.get(f"{self.topic_path}/{path}", applied="true")
        assert answer.status_code == 200, answer.text
        return answer.json()


def admitted(create):
    """What create() makes once the limit in force lets it in."""
    deadline = time.monotonic() + SETTLE_S
    while True:
        try:
            return create()
        except (pulsar.ProducerBusy, pulsar.ConsumerBusy, pulsar.NotAllowedError) as refusal:
            assert time.monotonic() < deadline, f"still refused: {refusal}"
            time.sleep(0.2)


def refused(create, error: type[Exception], take_back=lambda made: made.close()) -> None:
    """create() fails with `error` once the limit in force refuses it; what it made while the
    change was still on its way is taken back."""
    deadline = time.monotonic() + SETTLE_S
    while True:
        try:
            made = create()
        except error:
            return
        take_back(made)
        assert time.monotonic() < deadline, f"still admitted, expected {error.__name__}"
        time.sleep(0.2)


def error_of(reply: Cmd) -> tuple[int, str]:
    assert reply.type == Cmd.ERROR, reply
    return reply.error.error, reply.error.message


def raw_producer(broker, topic: str) -> tuple[int, str]:
    [reply] = replies(broker, Cmd(type=Cmd.PRODUCER, producer=pb.CommandProducer(
        topic=topic, producer_id=1, request_id=1)))
    return error_of(reply)


def raw_subscribe(broker, topic: str, subscription: str, sub_type=pb.CommandSubscribe.Shared) -> tuple[int, str]:
    [reply] = replies(broker, Cmd(type=Cmd.SUBSCRIBE, subscribe=pb.CommandSubscribe(
        topic=topic, subscription=subscription, subType=sub_type, consumer_id=1, request_id=1)))
    return error_of(reply)


def shared(client: pulsar.Client, topic: str, subscription: str = "sub"):
    return lambda: client.subscribe(topic, subscription, consumer_type=pulsar.ConsumerType.Shared)


def unsubscribe(consumer) -> None:
    consumer.unsubscribe()


# -- producers ----------------------------------------------------------------------------------
def test_max_producers_at_namespace_and_topic_level(broker, http, namespace, connect):
    client = connect(broker)
    topic = f"persistent://{namespace}/producers"
    policies = Policies(http, topic)
    policies.create_topic()
    create = lambda: client.create_producer(topic)   # noqa: E731
    producers = [create()]                            # the topic is loaded and in use

    policies.set_namespace("maxProducersPerTopic", 2)
    producers.append(admitted(create))
    refused(create, pulsar.ProducerBusy)
    assert raw_producer(broker, topic) == (pb.ProducerBusy, f"Topic '{topic}' reached max producers limit")

    policies.set_topic("maxProducers", 3)            # the topic's own limit is above its namespace's
    producers.append(admitted(create))
    refused(create, pulsar.ProducerBusy)

    policies.remove_topic("maxProducers")            # back to the namespace's 2, with 3 connected
    producers.pop().close()
    refused(create, pulsar.ProducerBusy)
    policies.remove_namespace("maxProducersPerTopic")   # back to the broker's 0: no limit
    producers.extend(admitted(create) for _ in range(3))
    assert policies.applied("maxProducers") == 0


def test_the_producer_limit_counts_connected_producers(broker, http, namespace, connect):
    client = connect(broker)
    topic = f"persistent://{namespace}/producer-count"
    policies = Policies(http, topic)
    policies.create_topic()
    policies.set_topic("maxProducers", 1)
    first = admitted(lambda: client.create_producer(topic))
    refused(lambda: client.create_producer(topic), pulsar.ProducerBusy)
    first.close()
    client.create_producer(topic).send(b"room again")


# -- consumers ----------------------------------------------------------------------------------
def test_max_consumers_per_topic_at_namespace_and_topic_level(broker, http, namespace, connect):
    client = connect(broker)
    topic = f"persistent://{namespace}/consumers"
    policies = Policies(http, topic)
    policies.create_topic()
    consumers = [shared(client, topic, "a")()]

    policies.set_namespace("maxConsumersPerTopic", 2)
    consumers.append(admitted(shared(client, topic, "b")))   # any subscription counts
    refused(shared(client, topic, "a"), pulsar.ConsumerBusy)
    assert raw_subscribe(broker, topic, "c") == (pb.ConsumerBusy, "Topic reached max consumers limit")

    policies.set_topic("maxConsumers", 3)
    consumers.append(admitted(shared(client, topic, "a")))
    refused(shared(client, topic, "b"), pulsar.ConsumerBusy)

    policies.remove_topic("maxConsumers")
    consumers.pop().close()
    refused(shared(client, topic, "a"), pulsar.ConsumerBusy)
    policies.remove_namespace("maxConsumersPerTopic")
    consumers.extend(admitted(shared(client, topic, "a")) for _ in range(3))


def test_max_consumers_per_subscription_at_namespace_and_topic_level(broker, http, namespace, connect):
    client = connect(broker)
    topic = f"persistent://{namespace}/per-subscription"
    policies = Policies(http, topic)
    policies.create_topic()
    consumers = [shared(client, topic)()]

    policies.set_namespace("maxConsumersPerSubscription", 2)
    consumers.append(admitted(shared(client, topic)))
    refused(shared(client, topic), pulsar.ConsumerBusy)
    assert raw_subscribe(broker, topic, "sub") == (pb.ConsumerBusy, "Subscription reached max consumers limit")
    consumers.append(shared(client, topic, "other")())   # another subscription has room

    policies.set_topic("maxConsumersPerSubscription", 3)
    consumers.append(admitted(shared(client, topic)))
    refused(shared(client, topic), pulsar.ConsumerBusy)

    policies.remove_topic("maxConsumersPerSubscription")
    consumers.pop().close()
    refused(shared(client, topic), pulsar.ConsumerBusy)
    policies.remove_namespace("maxConsumersPerSubscription")
    consumers.extend(admitted(shared(client, topic)) for _ in range(2))


def test_an_exclusive_subscription_is_refused_as_exclusive_first(broker, http, namespace, connect):
    client = connect(broker)
    topic = f"persistent://{namespace}/exclusive"
    policies = Policies(http, topic)
    policies.create_topic()
    policies.set_topic("maxConsumersPerSubscription", 1)
    admitted(lambda: client.subscribe(topic, "excl"))
    assert raw_subscribe(broker, topic, "excl", pb.CommandSubscribe.Exclusive) == (
        pb.ConsumerBusy, "Exclusive consumer is already connected")


# -- subscriptions ------------------------------------------------------------------------------
def test_max_subscriptions_at_namespace_and_topic_level(broker, http, namespace, connect):
    client = connect(broker)
    topic = f"persistent://{namespace}/subscriptions"
    policies = Policies(http, topic)
    policies.create_topic()
    shared(client, topic, "s0")()

    policies.set_namespace("maxSubscriptionsPerTopic", 2)
    admitted(shared(client, topic, "s1"))
    refused(shared(client, topic, "s2"), pulsar.NotAllowedError, unsubscribe)
    assert raw_subscribe(broker, topic, "s2") == (
        pb.NotAllowedError, f"Exceed the maximum number of subscriptions of the topic: {topic}")
    shared(client, topic, "s1")()                    # an existing subscription takes consumers

    policies.set_topic("maxSubscriptionsPerTopic", 3)
    s2 = admitted(shared(client, topic, "s2"))
    refused(shared(client, topic, "s3"), pulsar.NotAllowedError, unsubscribe)

    policies.remove_topic("maxSubscriptionsPerTopic")
    s2.unsubscribe()                                 # 2 left, the namespace's limit
    refused(shared(client, topic, "s3"), pulsar.NotAllowedError, unsubscribe)
    policies.remove_namespace("maxSubscriptionsPerTopic")
    for name in ("s3", "s4", "s5"):
        admitted(shared(client, topic, name))


def test_subscription_types_at_namespace_and_topic_level(broker, http, namespace, connect):
    client = connect(broker)
    topic = f"persistent://{namespace}/types"
    policies = Policies(http, topic)
    policies.create_topic()
    exclusive = lambda: client.subscribe(topic, "e", consumer_type=pulsar.ConsumerType.Exclusive)   # noqa: E731
    shared(client, topic, "s")()

    policies.set_namespace("subscriptionTypesEnabled", ["Shared"])
    refused(exclusive, pulsar.NotAllowedError)
    assert raw_subscribe(broker, topic, "e", pb.CommandSubscribe.Exclusive) == (
        pb.NotAllowedError, f"Topic[{{{topic}}}] doesn't support Exclusive sub type!")
    shared(client, topic, "s")()

    policies.set_topic("subscriptionTypesEnabled", ["Exclusive", "Failover"])
    admitted(exclusive).close()
    refused(shared(client, topic, "s"), pulsar.NotAllowedError)
    policies.set_topic("subscriptionTypesEnabled", [])   # an empty set is no setting: the namespace's
    admitted(shared(client, topic, "s"))
    refused(exclusive, pulsar.NotAllowedError)

    policies.remove_topic("subscriptionTypesEnabled")
    policies.remove_namespace("subscriptionTypesEnabled")   # the broker's: all four
    admitted(exclusive)
    admitted(lambda: client.subscribe(topic, "k", consumer_type=pulsar.ConsumerType.KeyShared))


# -- the broker's keys ---------------------------------------------------------------------------
def test_broker_keys_limit_every_topic(make_broker, connect):
    broker = make_broker(BROKER_LIMITS)
    client = connect(broker)
    http = AdminHttp(broker.web_url)
    topic = "persistent://public/default/broker-limited"
    first = client.create_producer(topic)
    with pytest.raises(pulsar.ProducerBusy):
        client.create_producer(topic)

    s1 = [shared(client, topic, "s1")() for _ in range(2)]
    with pytest.raises(pulsar.ConsumerBusy):        # maxConsumersPerSubscription
        shared(client, topic, "s1")()
    s2 = shared(client, topic, "s2")()
    with pytest.raises(pulsar.ConsumerBusy):        # maxConsumersPerTopic, checked first
        shared(client, topic, "s3")()
    s1[0].close()
    with pytest.raises(pulsar.NotAllowedError):     # maxSubscriptionsPerTopic
        shared(client, topic, "s3")()
    with pytest.raises(pulsar.NotAllowedError):     # subscriptionTypesEnabled
        client.subscribe(topic, "s2", consumer_type=pulsar.ConsumerType.Failover)
    s2.close()
    client.subscribe(topic, "s2", consumer_type=pulsar.ConsumerType.Exclusive).close()

    applied = Policies(http, topic).applied         # Pulsar answers ?applied=true for these two
    assert (applied("maxProducers"), applied("maxConsumers")) == (1, 3)
    first.send(b"still producing")


def test_a_namespace_policy_lifts_a_broker_limit(make_broker, connect):
    broker = make_broker({"maxProducersPerTopic": 1})
    client = connect(broker)
    topic = "persistent://public/default/lifted"
    client.create_producer(topic)
    Policies(AdminHttp(broker.web_url), topic).set_namespace("maxProducersPerTopic", 0)
    admitted(lambda: client.create_producer(topic))


# -- message size --------------------------------------------------------------------------------
def test_a_topic_max_message_size_refuses_larger_messages(small_message_broker, connect):
    """The limit covers the whole entry (checksum and metadata too) and spares chunks. A refused
    message stays with the Python client, which reconnects and sends it again, so it goes
    through once the limit is removed."""
    client = connect(small_message_broker)
    topic = f"persistent://public/default/msg-size-{uuid.uuid4().hex[:8]}"
    policies = Policies(AdminHttp(small_message_broker.web_url), topic)
    policies.create_topic()
    policies.set_topic("maxMessageSize", 50_000)
    deadline = time.monotonic() + SETTLE_S
    while raw_send(small_message_broker, topic, 60_000) is None:   # stored while the limit was on its way
        assert time.monotonic() < deadline, "a message above the topic's maxMessageSize is still taken"
        time.sleep(0.2)
    assert raw_send(small_message_broker, topic, 60_000) == (pb.NotAllowedError, "Exceed maximum message size")

    consumer = client.subscribe(topic, "sub")        # from here on
    assert raw_send(small_message_broker, topic, 50_000 - 200) is None
    client.create_producer(topic, batching_enabled=False, chunking_enabled=True).send(b"c" * 250_000)
    sent = []
    retrying = connect(small_message_broker)         # its connection alone is dropped and made again
    retrying.create_producer(topic, batching_enabled=False).send_async(
        b"x" * 60_000, lambda result, msg_id: sent.append(result))
    assert [len(m.data()) for m in receive_n(consumer, 2, ack=True)] == [50_000 - 200, 250_000]
    expect_nothing(consumer, 2000)
    assert sent == []

    policies.remove_topic("maxMessageSize")          # the broker's limit again
    assert data_of(receive_n(consumer, 1, timeout_ms=15_000)) == [b"x" * 60_000]
    assert sent == [pulsar.Result.Ok]


def raw_send(broker, topic: str, payload_size: int) -> tuple[int, str] | None:
    """Publish one message of payload_size bytes on a bare connection: None when stored, else
    the SEND_ERROR's (code, message)."""
    with RawConnection(broker.broker_port) as raw:
        assert raw.connect(pb.CommandConnect(client_version="compat", protocol_version=21)).type == Cmd.CONNECTED
        raw.send(Cmd(type=Cmd.PRODUCER, producer=pb.CommandProducer(topic=topic, producer_id=1, request_id=1)))
        assert raw.receive().type == Cmd.PRODUCER_SUCCESS
        entry = make_entry(pb.MessageMetadata(producer_name=f"raw-{uuid.uuid4().hex[:6]}", sequence_id=0,
                                              publish_time=int(time.time() * 1000)), b"r" * payload_size)
        raw.send(Cmd(type=Cmd.SEND, send=pb.CommandSend(producer_id=1, sequence_id=0)), entry)
        answer = raw.receive()
    if answer.type == Cmd.SEND_RECEIPT:
        return None
    assert answer.type == Cmd.SEND_ERROR, answer
    return answer.send_error.error, answer.send_error.message
