"""Topic policies in a cluster (two brokers on the session's ZooKeeper + bookies, the official
Python client): a namespace's `__change_events` is written by the broker serving it, and read
by every broker serving topics of the namespace, so a policy is in force wherever the topic is
served, reaches the broker serving it within seconds, and survives a kill -9 of the writer."""

from __future__ import annotations

import time
import uuid

import pulsar
import pytest
from pulsar.schema import JsonSchema

from compat_tests.cluster_brokers import BrokerGroup, http
from compat_tests.test_cluster import BUNDLES, create_namespace
from compat_tests.test_schema_compatibility import ADD_Y_DEFAULT, V1, accepts
from server.topics.topic_name import TopicName

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(240)]

RETENTION = {"retentionTimeInMinutes": 60, "retentionSizeInMB": 10}


@pytest.fixture(scope="module")
def brokers(cluster, tmp_path_factory):
    group = BrokerGroup(cluster, tmp_path_factory.mktemp("cluster-topic-policies"), 2)
    try:
        yield group.start().brokers
    finally:
        group.stop()


def new_namespace(broker) -> str:
    namespace = f"public/tp-{uuid.uuid4().hex[:8]}"
    create_namespace(broker, namespace)
    return namespace


def bundle(topic: str) -> str:
    return BUNDLES.bundle_of(TopicName.parse(topic)).range


def names_apart(namespace: str, *stems: str) -> list[str]:
    """A topic per stem (stem-N), each in a bundle of its own and none in the bundle of the
    namespace's `__change_events`."""
    taken = {bundle(f"persistent://{namespace}/__change_events")}
    found = []
    for stem in stems:
        topic = next(f"persistent://{namespace}/{stem}-{i}" for i in range(1000)
                     if bundle(f"persistent://{namespace}/{stem}-{i}") not in taken)
        taken.add(bundle(topic))
        found.append(topic)
    return found


def place_on(broker, topic: str) -> None:
    """The topic's (unowned) bundle taken by this broker: an authoritative lookup there."""
    name = TopicName.parse(topic)
    status, body = http("GET", f"{broker.web_url}/lookup/v2/topic/persistent/{name.namespace}/{name.local_name}"
                               f"?authoritative=true")
    assert status == 200 and body["brokerUrl"] == broker.service_url, body


def policy_url(broker, topic: str, policy: str) -> str:
    name = TopicName.parse(topic)
    return f"{broker.web_url}/admin/v2/persistent/{name.namespace}/{name.local_name}/{policy}"


def applied_here(broker, topic: str, policy: str) -> object:
    """The policy in force, as the broker serving the topic answers it (no 307 followed)."""
    status, body = http("GET", policy_url(broker, topic, policy) + "?applied=true", follow=False)
    assert status == 200, (status, body)
    return body


def set_policies(broker, topic: str) -> None:
    status, body = http("PUT", policy_url(broker, topic, "schemaCompatibilityStrategy"), "ALWAYS_INCOMPATIBLE")
    assert status == 204, body
    status, body = http("POST", policy_url(broker, topic, "retention"), RETENTION)
    assert status == 204, body


def unload_bundle(broker, topic: str) -> None:
    namespace = TopicName.parse(topic).namespace
    status, body = http("PUT", f"{broker.web_url}/admin/v2/namespaces/{namespace}/{bundle(topic)}/unload")
    assert status == 204, body


def test_a_policy_set_through_one_broker_is_in_force_where_the_topic_moves(brokers):
    """A serves `__change_events` and the topic, B another topic of the namespace; the policies
    set through A are in force on B once the topic's bundle is unloaded and B takes it. Deleted
    at B, the topic's policies go with it."""
    a, b = brokers
    namespace = new_namespace(a)
    topic, other = names_apart(namespace, "moving", "elsewhere")
    place_on(a, f"persistent://{namespace}/__change_events")
    place_on(a, topic)
    place_on(b, other)
    client = pulsar.Client(a.service_url, operation_timeout_seconds=30)
    try:
        client.create_producer(topic, schema=JsonSchema(V1)).close()
        held = client.create_producer(other)   # B reads the namespace's policies meanwhile
        set_policies(a, topic)
        unload_bundle(a, topic)
        place_on(b, topic)
        assert not accepts(client, topic, ADD_Y_DEFAULT, JsonSchema)   # refused by B
        assert accepts(client, topic, V1, JsonSchema)
        assert applied_here(b, topic, "retention") == RETENTION
        assert applied_here(b, topic, "schemaCompatibilityStrategy") == "ALWAYS_INCOMPATIBLE"
        held.close()
        topic_url = policy_url(a, topic, "")[:-1]
        status, body = http("DELETE", topic_url + "?force=true")   # at B, which has A append the DELETE
        assert status == 204, body
        status, body = http("PUT", topic_url)
        assert status == 204, body
        assert http("GET", policy_url(a, topic, "retention")) == (200, None)   # gone with the topic
    finally:
        client.close()


def test_a_change_made_through_another_broker_reaches_the_serving_broker_within_seconds(brokers):
    """The admin calls on a partitioned topic's policies go to the broker of its name's bundle
    (A, which serves `__change_events` too); B serves its partition and learns of the change by
    reading A's ledger."""
    a, b = brokers
    namespace = new_namespace(a)
    events = f"persistent://{namespace}/__change_events"
    parent = next(f"persistent://{namespace}/parted-{i}" for i in range(1000)   # its partition's bundle apart
                  if bundle(f"persistent://{namespace}/parted-{i}-partition-0")
                  not in (bundle(f"persistent://{namespace}/parted-{i}"), bundle(events)))
    partition = f"{parent}-partition-0"
    status, body = http("PUT", policy_url(a, parent, "partitions"), 1)
    assert status == 204, body
    place_on(a, events)
    place_on(a, parent)
    place_on(b, partition)
    client = pulsar.Client(a.service_url, operation_timeout_seconds=30)
    try:
        producer = client.create_producer(partition, schema=JsonSchema(V1))   # served by B
        assert applied_here(b, partition, "schemaCompatibilityStrategy") != "ALWAYS_INCOMPATIBLE"
        set_policies(a, parent)
        deadline = time.monotonic() + 15
        while applied_here(b, partition, "retention") != RETENTION and time.monotonic() < deadline:
            time.sleep(0.2)
        assert applied_here(b, partition, "retention") == RETENTION
        assert applied_here(b, partition, "schemaCompatibilityStrategy") == "ALWAYS_INCOMPATIBLE"
        assert not accepts(client, partition, ADD_Y_DEFAULT, JsonSchema)
        producer.send(V1(x=1))   # the topic serves on
    finally:
        client.close()


def test_a_kill9_of_the_writer_loses_no_acknowledged_policy(brokers):
    """Runs last: it kills A, the broker serving `__change_events`, right after it acknowledged
    two policies. B, serving the topic next, has them in force (read from A's ledger, left
    open); a change made through B then makes B the writer (recovering A's ledger); and A,
    restarted and given everything back, replays all three."""
    a, b = brokers
    namespace = new_namespace(a)
    events = f"persistent://{namespace}/__change_events"
    topic, = names_apart(namespace, "survivor")
    place_on(a, events)
    place_on(a, topic)
    client = pulsar.Client(b.service_url, operation_timeout_seconds=30)
    try:
        client.create_producer(topic, schema=JsonSchema(V1)).close()
        set_policies(a, topic)
        a.kill9()
        deadline = time.monotonic() + 30   # until A's ZooKeeper session expired
        while time.monotonic() < deadline:
            name = TopicName.parse(topic)
            status, body = http("GET", f"{b.web_url}/lookup/v2/topic/persistent/{namespace}/{name.local_name}"
                                       f"?authoritative=true")
            if status == 200 and body["brokerUrl"] == b.service_url:
                break
            time.sleep(0.5)
        assert applied_here(b, topic, "retention") == RETENTION
        assert not accepts(client, topic, ADD_Y_DEFAULT, JsonSchema)
        status, body = http("POST", policy_url(b, topic, "messageTTL") + "?messageTTL=120")
        assert status == 204, body
        assert applied_here(b, topic, "messageTTL") == 120
    finally:
        client.close()
    a.restart(timeout=60)
    status, body = http("PUT", f"{b.web_url}/admin/v2/namespaces/{namespace}/unload")
    assert status == 204, body
    place_on(a, events)
    place_on(a, topic)
    assert applied_here(a, topic, "retention") == RETENTION
    assert applied_here(a, topic, "messageTTL") == 120
    assert applied_here(a, topic, "schemaCompatibilityStrategy") == "ALWAYS_INCOMPATIBLE"
