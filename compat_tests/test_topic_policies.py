"""Topic-level policies as Pulsar keeps them: events in the namespace's `__change_events` system
topic, read back after a restart and a kill -9; GET answers the topic's own value or, with
?applied=true, the one in force (topic > namespace > broker); DELETE falls back. The system
topic is hidden from listings unless asked for, and users cannot create one."""

from __future__ import annotations

import time

import pytest

from compat_tests.admin_http import AdminHttp, reason
from compat_tests.helpers import unique_topic

NS = "/admin/v2/namespaces/public/default"
#: Pulsar applies a topic policy once its broker has read the event back: reads may lag a write.
SETTLE_S = 10.0


def topic_path(topic: str) -> str:
    return f"/admin/v2/persistent/public/default/{topic}"


@pytest.fixture
def http(fresh_broker) -> AdminHttp:
    return AdminHttp(fresh_broker.web_url)


def value(http: AdminHttp, path: str, **params):
    """A policy as GET answers it: its JSON, or None for unset (200 with no body, as Pulsar)."""
    response = http.get(path, **params)
    assert response.status_code == 200, response.text
    return response.json() if response.content else None


def settles(http: AdminHttp, path: str, expected, **params) -> bool:
    deadline = time.monotonic() + SETTLE_S
    while (found := value(http, path, **params)) != expected:
        assert time.monotonic() < deadline, f"{path}: {found!r}, expected {expected!r}"
        time.sleep(0.1)
    return True


def make_topic(http: AdminHttp) -> str:
    topic = unique_topic().rsplit("/", 1)[-1]
    assert http.put(topic_path(topic)).status_code == 204
    return topic


def test_a_topic_policy_overrides_the_namespace_and_falls_back_when_removed(http):
    topic = make_topic(http)
    path = topic_path(topic)
    assert value(http, path + "/maxProducers") is None
    assert http.post(NS + "/maxProducersPerTopic", json=7).status_code == 204
    assert settles(http, path + "/maxProducers", 7, applied="true")

    assert http.post(path + "/maxProducers", json=3).status_code == 204
    assert settles(http, path + "/maxProducers", 3)
    assert settles(http, path + "/maxProducers", 3, applied="true")

    assert http.delete(path + "/maxProducers").status_code == 204
    assert settles(http, path + "/maxProducers", None)
    assert settles(http, path + "/maxProducers", 7, applied="true")
    assert http.delete(NS + "/maxProducersPerTopic").status_code == 204


def test_shapes_of_the_policies_as_pulsar_takes_them(http):
    path = topic_path(make_topic(http))
    retention = {"retentionTimeInMinutes": 60, "retentionSizeInMB": 100}
    assert http.post(path + "/retention", json=retention).status_code == 204
    assert settles(http, path + "/retention", retention)
    assert http.request("POST", path + "/messageTTL", messageTTL="120").status_code == 204
    assert settles(http, path + "/messageTTL", 120)
    delayed = {"active": False, "tickTime": 500}
    assert http.post(path + "/delayedDelivery", json=delayed).status_code == 204
    assert settles(http, path + "/delayedDelivery", delayed)
    assert http.post(path + "/backlogQuota", json={"limitSize": 1024, "policy": "producer_exception"}).status_code == 204
    deadline = time.monotonic() + SETTLE_S
    while not (quota := value(http, path + "/backlogQuotaMap").get("destination_storage")):
        assert time.monotonic() < deadline, "the backlog quota was not applied"
        time.sleep(0.1)
    assert (quota["limitSize"], quota["policy"]) == (1024, "producer_exception")
    assert http.put(path + "/schemaCompatibilityStrategy", json="FORWARD").status_code == 204
    assert settles(http, path + "/schemaCompatibilityStrategy", "FORWARD")
    assert http.post(path + "/subscriptionTypesEnabled", json=["Shared", "Exclusive"]).status_code == 204
    assert settles(http, path + "/subscriptionTypesEnabled", ["Exclusive", "Shared"])


def test_bad_values_and_unknown_topics_are_refused(http):
    path = topic_path(make_topic(http))
    refused = http.post(path + "/maxConsumers", json=-1)
    assert refused.status_code == 412 and "maxConsumers" in reason(refused)
    assert http.post(path + "/persistence", json={"bookkeeperEnsemble": 1, "bookkeeperWriteQuorum": 2,
                                                  "bookkeeperAckQuorum": 1}).status_code == 400
    # pulsard names the bad type (400); Pulsar's JSON reader fails on it (500)
    assert http.post(path + "/subscriptionTypesEnabled", json=["Sharde"]).status_code in (400, 500)
    missing = topic_path(unique_topic().rsplit("/", 1)[-1])
    assert http.post(missing + "/maxConsumers", json=1).status_code == 404
    assert http.get(missing + "/maxConsumers").status_code == 404


def test_applied_falls_back_to_the_broker(http):
    path = topic_path(make_topic(http))
    assert value(http, path + "/retention", applied="true") == {"retentionTimeInMinutes": 0, "retentionSizeInMB": 0}
    assert value(http, path + "/maxUnackedMessagesOnConsumer", applied="true") == 50000


def test_topic_policies_survive_a_restart_and_a_kill9(fresh_broker, http):
    first, second = make_topic(http), make_topic(http)
    assert http.post(topic_path(first) + "/maxConsumers", json=2).status_code == 204
    assert http.post(topic_path(second) + "/maxConsumers", json=5).status_code == 204
    assert http.delete(topic_path(second) + "/maxConsumers").status_code == 204
    assert http.post(topic_path(second) + "/maxProducers", json=4).status_code == 204   # answered: durable

    fresh_broker.kill9()
    fresh_broker.restart()
    assert settles(http, topic_path(first) + "/maxConsumers", 2)
    assert settles(http, topic_path(second) + "/maxConsumers", None)
    assert settles(http, topic_path(second) + "/maxProducers", 4)

    fresh_broker.stop()
    fresh_broker.restart()
    assert settles(http, topic_path(first) + "/maxConsumers", 2)


def test_the_change_events_topic_is_a_hidden_system_topic(http):
    topic = make_topic(http)
    assert http.post(topic_path(topic) + "/maxConsumers", json=2).status_code == 204
    events = "persistent://public/default/__change_events"
    assert events not in http.get("/admin/v2/persistent/public/default").json()
    assert events in http.get("/admin/v2/persistent/public/default", includeSystemTopic="true").json()
    assert events not in http.get(NS + "/topics").json()



def test_deleting_a_topic_deletes_its_policies(http):
    topic = make_topic(http)
    assert http.post(topic_path(topic) + "/maxConsumers", json=2).status_code == 204
    assert http.delete(topic_path(topic)).status_code == 204
    assert http.put(topic_path(topic)).status_code == 204
    assert settles(http, topic_path(topic) + "/maxConsumers", None)


def test_users_cannot_create_a_system_topic(http):
    """pulsard refuses it (Pulsar 3.0.7's admin API lets it through)."""
    assert http.put("/admin/v2/namespaces/public/fresh-ns").status_code == 204
    refused = http.put("/admin/v2/persistent/public/fresh-ns/__change_events")
    assert refused.status_code == 412 and "system topic" in reason(refused)


def test_the_change_events_topic_is_never_deleted_as_inactive(make_broker, connect):
    broker = make_broker({"brokerDeleteInactiveTopicsFrequencySeconds": 1})
    http = AdminHttp(broker.web_url)
    topic = unique_topic()
    connect(broker).subscribe(topic, "keeps-the-topic")
    name = topic.rsplit("/", 1)[-1]
    assert http.post(topic_path(name) + "/maxConsumers", json=2).status_code == 204
    time.sleep(3)   # three inactivity checks
    listed = http.get("/admin/v2/persistent/public/default", includeSystemTopic="true").json()
    assert "persistent://public/default/__change_events" in listed
    broker.restart()
    assert settles(http, topic_path(name) + "/maxConsumers", 2)
