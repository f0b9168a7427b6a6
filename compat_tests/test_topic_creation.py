"""Topics live only in namespaces that exist, as in Pulsar: a client asking for one in a missing
tenant or namespace gets TopicNotFound and nothing is created. Inside an existing namespace,
allowAutoTopicCreation decides, unless the namespace's autoTopicCreationOverride says otherwise."""

from __future__ import annotations

import subprocess
import sys
import uuid

import pulsar
import pytest

from compat_tests.admin_http import AdminHttp, reason
from compat_tests.broker import REPO_ROOT
from compat_tests.helpers import assert_round_trip, unique_topic
from compat_tests.raw_requests import replies
from protocol import pulsar_api_pb2 as pb

Cmd = pb.BaseCommand
MISSING = ["persistent://nosuch/ns/t", "persistent://public/nosuch/t", "non-persistent://nosuch/ns/t"]
NO_AUTO_TOPICS = {"allowAutoTopicCreation": "false"}


@pytest.fixture
def http(broker) -> AdminHttp:
    return AdminHttp(broker.web_url)


def new_namespace(http: AdminHttp, tenant: str | None = None) -> str:
    """A namespace made as a Pulsar user makes one: the tenant, then the namespace."""
    tenant = tenant or f"t-{uuid.uuid4().hex[:8]}"
    if http.get(f"/admin/v2/tenants/{tenant}").status_code == 404:
        assert http.put(f"/admin/v2/tenants/{tenant}", json={"allowedClusters": ["standalone"]}).status_code == 204
    namespace = f"{tenant}/ns-{uuid.uuid4().hex[:8]}"
    assert http.put(f"/admin/v2/namespaces/{namespace}").status_code == 204
    return namespace


@pytest.mark.parametrize("topic", MISSING)
def test_clients_cannot_use_a_topic_of_a_missing_namespace(broker, connect, http, topic):
    client = connect(broker)
    with pytest.raises(pulsar.TopicNotFound):
        client.create_producer(topic)
    with pytest.raises(pulsar.TopicNotFound):
        client.subscribe(topic, "s")
    with pytest.raises(pulsar.TopicNotFound):
        client.create_reader(topic, pulsar.MessageId.earliest)
    assert "nosuch" not in http.get("/admin/v2/tenants").json()
    assert "public/nosuch" not in http.get("/admin/v2/namespaces/public").json()
    assert http.get("/admin/v2/namespaces/public/nosuch/topics").status_code == 404


def test_a_namespace_made_through_the_admin_api_takes_topics(broker, connect, http):
    namespace = new_namespace(http)
    topic = f"persistent://{namespace}/{unique_topic()}"
    assert_round_trip(connect(broker), topic)
    assert http.get(f"/admin/v2/namespaces/{namespace}/topics").json() == [topic]


def test_bare_requests_in_a_missing_namespace_are_refused(broker):
    topic = "persistent://nosuch/ns/t"
    metadata, lookup, producer, subscribe, listed_all, listed, bad_name = replies(
        broker,
        Cmd(type=Cmd.PARTITIONED_METADATA, partitionMetadata=pb.CommandPartitionedTopicMetadata(
            topic=topic, request_id=1)),
        Cmd(type=Cmd.LOOKUP, lookupTopic=pb.CommandLookupTopic(topic=topic, request_id=2)),
        Cmd(type=Cmd.PRODUCER, producer=pb.CommandProducer(topic=topic, producer_id=1, request_id=3)),
        Cmd(type=Cmd.SUBSCRIBE, subscribe=pb.CommandSubscribe(
            topic=topic, subscription="s", subType=pb.CommandSubscribe.Shared, consumer_id=1, request_id=4)),
        Cmd(type=Cmd.GET_TOPICS_OF_NAMESPACE, getTopicsOfNamespace=pb.CommandGetTopicsOfNamespace(
            namespace="nosuch/ns", request_id=5, mode=pb.CommandGetTopicsOfNamespace.ALL)),
        Cmd(type=Cmd.GET_TOPICS_OF_NAMESPACE, getTopicsOfNamespace=pb.CommandGetTopicsOfNamespace(
            namespace="nosuch/ns", request_id=6, mode=pb.CommandGetTopicsOfNamespace.PERSISTENT)),
        Cmd(type=Cmd.GET_TOPICS_OF_NAMESPACE, getTopicsOfNamespace=pb.CommandGetTopicsOfNamespace(
            namespace="nosuch", request_id=7)),
    )
    response = metadata.partitionMetadataResponse
    assert (response.response, response.error) == (response.Failed, pb.TopicNotFound)
    assert "nosuch/ns" in response.message
    response = lookup.lookupTopicResponse
    assert (response.response, response.error) == (response.Failed, pb.TopicNotFound)
    assert (producer.type, producer.error.error) == (Cmd.ERROR, pb.TopicNotFound)
    assert (subscribe.type, subscribe.error.error) == (Cmd.ERROR, pb.TopicNotFound)
    # As Pulsar: the namespace's policies are needed for ALL (and NON_PERSISTENT); PERSISTENT,
    # what regex consumers ask by default, lists what storage has there: nothing.
    assert (listed_all.type, listed_all.error.error) == (Cmd.ERROR, pb.MetadataError)
    assert listed_all.error.message == "Policies not found for nosuch/ns namespace"
    assert listed.type == Cmd.GET_TOPICS_OF_NAMESPACE_RESPONSE and not listed.getTopicsOfNamespaceResponse.topics
    assert (bad_name.type, bad_name.error.error) == (Cmd.ERROR, pb.MetadataError)


def test_offline_policies_need_an_existing_namespace(broker, http):
    """`pulsard namespace-policies set` is no back door: it makes no namespace."""
    refused = subprocess.run(
        [sys.executable, "-m", "server", "namespace-policies", "set", "public/offline", "deduplicationEnabled=true",
         "--data-dir", str(broker.data_dir)], cwd=REPO_ROOT, capture_output=True, text=True, timeout=30)
    assert refused.returncode == 1 and "Namespace public/offline does not exist" in refused.stderr
    assert "public/offline" not in http.get("/admin/v2/namespaces/public").json()


def test_standalone_starts_with_public_default_and_pulsar_system(broker, http):
    assert "public/default" in http.get("/admin/v2/namespaces/public").json()
    assert http.get("/admin/v2/namespaces/pulsar").json() == ["pulsar/system"]
    [probe] = replies(broker, Cmd(type=Cmd.PARTITIONED_METADATA, partitionMetadata=pb.CommandPartitionedTopicMetadata(
        topic="persistent://pulsar/system/transaction_coordinator_assign", request_id=1)))
    response = probe.partitionMetadataResponse   # 0 partitions: clients know transactions are off
    assert (response.response, response.partitions) == (response.Success, 0)


def test_without_auto_creation_only_admin_made_topics_serve(make_broker, connect):
    broker = make_broker(NO_AUTO_TOPICS)
    client = connect(broker)
    topic = unique_topic("no-auto")
    with pytest.raises(pulsar.TopicNotFound):
        client.create_producer(topic)
    with pytest.raises(pulsar.TopicNotFound):
        client.subscribe(topic, "s")
    http = AdminHttp(broker.web_url)
    assert http.get("/admin/v2/persistent/public/default").json() == []
    assert http.put(f"/admin/v2/persistent/public/default/{topic}").status_code == 204
    assert_round_trip(client, topic)
    assert http.put(f"/admin/v2/persistent/public/default/{topic}-parts/partitions", json=2).status_code == 204
    assert_round_trip(client, f"{topic}-parts")


def test_namespace_override_wins_over_the_broker(make_broker, connect):
    broker = make_broker(NO_AUTO_TOPICS)
    client = connect(broker)
    http = AdminHttp(broker.web_url)
    namespace = new_namespace(http, "public")
    path = f"/admin/v2/namespaces/{namespace}/autoTopicCreation"
    assert http.get(path).status_code == 204
    invalid = http.post(path, json={"allowAutoTopicCreation": True, "topicType": "partitioned"})
    assert invalid.status_code == 412 and "defaultNumPartitions" in reason(invalid)
    assert http.post(path, json={"allowAutoTopicCreation": "yes"}).status_code == 400
    override = {"allowAutoTopicCreation": True, "topicType": "partitioned", "defaultNumPartitions": 2}
    assert http.post(path, json=override).status_code == 204
    assert http.get(path).json() == override

    topic = f"persistent://{namespace}/{unique_topic('auto')}"
    assert_round_trip(client, topic)
    assert client.get_topic_partitions(topic) == [f"{topic}-partition-{i}" for i in range(2)]
    with pytest.raises(pulsar.TopicNotFound):   # elsewhere the broker's setting holds
        client.create_producer(unique_topic("elsewhere"))

    assert http.post(path, json={"allowAutoTopicCreation": False}).status_code == 204
    with pytest.raises(pulsar.TopicNotFound):
        client.create_producer(f"persistent://{namespace}/{unique_topic('refused')}")
    assert_round_trip(client, topic)            # what exists still serves
    assert http.delete(path).status_code == 204
    assert http.get(path).status_code == 204
    with pytest.raises(pulsar.TopicNotFound):
        client.create_producer(f"persistent://{namespace}/{unique_topic('broker-default')}")


def test_namespace_override_can_refuse_on_a_permissive_broker(broker, connect, http):
    namespace = new_namespace(http, "public")
    assert http.post(f"/admin/v2/namespaces/{namespace}/autoTopicCreation",
                     json={"allowAutoTopicCreation": False}).status_code == 204
    client = connect(broker)
    with pytest.raises(pulsar.TopicNotFound):
        client.create_producer(f"persistent://{namespace}/{unique_topic()}")
    assert_round_trip(client, unique_topic("default-ns"))
