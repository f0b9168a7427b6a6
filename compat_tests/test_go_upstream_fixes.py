"""Regressions found by running pulsar-client-go's own test suite against pulsard
(compat_tests/go_upstream/run.py): each test pins one broker behaviour that suite relies on."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from protocol import pulsar_api_pb2 as pb

from compat_tests.admin_http import AdminHttp
from compat_tests.failover_rule import topic_where
from compat_tests.raw_consumer import RawConsumer

Cmd = pb.BaseCommand

PARTITIONED_METADATA_TYPE = "application/vnd.partitioned-topic-metadata+json"


@pytest.fixture(scope="module")
def http(broker) -> AdminHttp:
    return AdminHttp(broker.web_url)


def topic_path(local: str) -> str:
    return f"/admin/v2/persistent/public/default/{local}-{uuid.uuid4().hex[:8]}"


def put_metadata(http: AdminHttp, path: str, body: str):
    return http.session.put(http.base + path, data=body, headers={"Content-Type": PARTITIONED_METADATA_TYPE},
                            timeout=10)


def test_create_partitioned_from_partitioned_topic_metadata(http):
    """The Go admin client's topics.Create sends {"partitions": N, "properties": null}."""
    path = topic_path("meta")
    assert put_metadata(http, f"{path}/partitions", '{"properties":null,"partitions":3}').status_code == 204
    assert http.get(f"{path}/partitions").json() == {"partitions": 3}
    assert put_metadata(http, f"{path}/partitions", '{"partitions":3}').status_code == 409


def test_partitioned_topic_metadata_is_validated(http):
    path = topic_path("bad-meta")
    assert put_metadata(http, f"{path}/partitions", '{"partitions":"3"}').status_code == 400
    assert put_metadata(http, f"{path}/partitions", '{"partitions":0}').status_code == 406
    assert http.get(f"{path}/partitions").json() == {"partitions": 0}


def test_consumer_stats_show_subscribe_metadata(http, client):
    """TestConsumerMetadata: the properties a consumer subscribes with appear as its stats' metadata."""
    path = topic_path("consumer-meta")
    topic = "persistent://" + path.removeprefix("/admin/v2/persistent/")
    consumer = client.subscribe(topic, "sub", properties={"key1": "value1", "k2": "v2"})
    plain = client.subscribe(topic, "plain")
    subscriptions = http.get(f"{path}/stats").json()["subscriptions"]
    assert [c["metadata"] for c in subscriptions["sub"]["consumers"]] == [{"key1": "value1", "k2": "v2"}]
    assert [c["metadata"] for c in subscriptions["plain"]["consumers"]] == [{}]
    consumer.close()
    plain.close()


def test_active_consumer_change_waits_for_the_failover_delay(broker):
    """TestPartitionTopic_ActiveConsumerChanged: the Go client registers a consumer only after its
    SUBSCRIBE succeeded, so, as in Pulsar, a change of active consumer is announced
    activeConsumerFailoverDelayTimeMillis (1 s) later, never before SUCCESS."""
    topic = topic_where(lambda pick: pick(["a", "b"]) == "a")
    first = RawConsumer(broker, topic, "fo", pb.CommandSubscribe.Failover, "b")
    subscribed = time.monotonic()
    assert first.pending == []                 # nothing arrived before SUCCESS
    announced = first.expect(Cmd.ACTIVE_CONSUMER_CHANGE, timeout_s=3.0)
    assert announced.active_consumer_change.is_active and time.monotonic() - subscribed >= 0.9
    second = RawConsumer(broker, topic, "fo", pb.CommandSubscribe.Failover, "a")   # Pulsar's pick: takes over
    assert second.pending == []
    assert [c.active_consumer_change.is_active for c in second.collect(Cmd.ACTIVE_CONSUMER_CHANGE, 1.5)] == [True]
    assert [c.active_consumer_change.is_active for c in first.collect(Cmd.ACTIVE_CONSUMER_CHANGE, 0.2)] == [False]
    first.close()
    second.close()


def test_backlog_quota_limit_may_be_a_decimal_string(http):
    """TestSendTimeout posts {"limit": "10240"}: Pulsar's JSON reader coerces the string."""
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    assert http.put(f"/admin/v2/tenants/{tenant}", json={"allowedClusters": ["standalone"]}).status_code == 204
    assert http.put(f"/admin/v2/namespaces/{tenant}/ns").status_code == 204
    quota = f"/admin/v2/namespaces/{tenant}/ns/backlogQuota"
    assert http.post(quota, json={"limit": "10240", "policy": "producer_request_hold"}).status_code == 204
    assert http.get(f"{quota}Map").json() == {
        "destination_storage": {"limitSize": 10240, "limitTime": -1, "policy": "producer_request_hold"}}
    assert http.post(quota, json={"limit": "ten", "policy": "producer_request_hold"}).status_code == 400
    assert http.post(quota, json={"limit": "--5", "policy": "producer_request_hold"}).status_code == 400


def test_stats_show_producer_metadata_and_client_versions(http, client):
    """TestProducerMetadata and TestClientVersion: publisher metadata from PRODUCER, and the client
    version from CONNECT on publishers and consumers."""
    path = topic_path("producer-meta")
    topic = "persistent://" + path.removeprefix("/admin/v2/persistent/")
    producer = client.create_producer(topic, properties={"app": "billing"})
    consumer = client.subscribe(topic, "sub")
    stats = http.get(f"{path}/stats").json()
    [publisher] = stats["publishers"]
    [subscriber] = stats["subscriptions"]["sub"]["consumers"]
    assert publisher["metadata"] == {"app": "billing"}
    assert publisher["clientVersion"].startswith("Pulsar-") and " " not in publisher["clientVersion"]
    assert subscriber["clientVersion"] == publisher["clientVersion"]
    producer.close()
    consumer.close()


def test_get_message_by_id(http, client):
    """TestConsumerGetLastMessageIDs: GET {topic}/ledger/{ledgerId}/entry/{entryId} answers that entry."""
    path = topic_path("by-id")
    topic = "persistent://" + path.removeprefix("/admin/v2/persistent/")
    producer = client.create_producer(topic, batching_enabled=False)
    ids = [producer.send(f"m-{i}".encode(), properties={"i": str(i)}) for i in range(3)]
    producer.close()
    for i, message_id in enumerate(ids):
        response = http.get(f"{path}/ledger/{message_id.ledger_id()}/entry/{message_id.entry_id()}")
        assert response.status_code == 200 and response.content == f"m-{i}".encode()
        assert response.headers["X-Pulsar-Message-ID"] == f"{message_id.ledger_id()}:{message_id.entry_id()}"
        assert response.headers["X-Pulsar-PROPERTY"] == f'{{"i": "{i}"}}'
    last = ids[-1]
    assert http.get(f"{path}/ledger/{last.ledger_id()}/entry/{last.entry_id() + 1}").status_code == 404
    assert http.get(f"{path}/ledger/{last.ledger_id() + 1000}/entry/0").status_code == 404
    assert http.get(f"{path}/ledger/x/entry/0").status_code == 400


def test_subscribe_during_unload_gets_the_reloaded_topic(http, broker, client):
    """TestUnloadTopicBeforeConsume: a consumer that re-subscribes the moment CLOSE_CONSUMER arrives
    must not land on the topic being unloaded (whose ledger is then closed under it)."""
    local = f"unload-race-{uuid.uuid4().hex[:8]}"
    topic = f"persistent://public/default/{local}"
    consumer = RawConsumer(broker, topic, "sub", pb.CommandSubscribe.Exclusive, "raw")
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(5):
        producer.send(f"m-{i}".encode())
    unload = threading.Thread(target=http.put, args=(f"/admin/v2/persistent/public/default/{local}/unload",))
    unload.start()
    try:
        assert consumer.expect(Cmd.CLOSE_CONSUMER).close_consumer.consumer_id == 1
        consumer.resubscribe()
        consumer.flow(100)
        messages = [consumer.expect(Cmd.MESSAGE).message.message_id.entryId for _ in range(5)]
        assert messages == [0, 1, 2, 3, 4]
    finally:
        unload.join(timeout=10)
        producer.close()
        consumer.close()
