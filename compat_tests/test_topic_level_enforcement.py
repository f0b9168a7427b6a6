"""Policies set on one TOPIC (not its namespace) act on that topic only, as Pulsar's topic
policies do: message TTL, backlog quota, retention, compaction threshold and inactive-topic
deletion. Each test sets the policy on one topic and leaves a sibling in the same namespace
under the broker's values, and shows the client-visible difference. The broker's checks run
every second or so here."""

from __future__ import annotations

import time

import pulsar
import pytest

from compat_tests.admin_http import AdminHttp
from compat_tests.conftest import _broker_fixture
from compat_tests.helpers import (
    data_of, expect_nothing, payloads, read_all, receive_n, send_all, subscribe_earliest, unique_topic,
)
from compat_tests.test_backlog_quota import BODY, LIMIT, _create_fails, _fill
from compat_tests.test_compaction import COMPACTED, KEYED, read_compacted, send_keyed
from compat_tests.test_topic_policies import settles, topic_path

CONFIG = {
    "messageExpiryCheckIntervalInMinutes": 0.01,   # every 0.6 s
    "managedLedgerMaxEntriesPerLedger": 5, "managedLedgerMinLedgerRolloverTimeMinutes": 0,
    "retentionCheckIntervalInSeconds": 1,
    "backlogQuotaCheckIntervalInSeconds": 1,
    "brokerServiceCompactionMonitorIntervalInSeconds": 1,
    # deletion on (Pulsar checks no topic at all otherwise), but after an hour
    "brokerDeleteInactiveTopicsFrequencySeconds": 1,
    "brokerDeleteInactiveTopicsMaxInactiveDurationSeconds": 3600,
}
WAIT_S = 15.0


@pytest.fixture(scope="module")
def policy_broker(tmp_path_factory):
    yield from _broker_fixture(tmp_path_factory, "topic-level", CONFIG)


@pytest.fixture
def setup(policy_broker, connect):
    return connect(policy_broker), AdminHttp(policy_broker.web_url)


def set_policy(http: AdminHttp, topic: str, path: str, body, **params) -> None:
    response = http.request("POST", topic_path(topic) + "/" + path, json=body, **params)
    assert response.status_code == 204, response.text


def wait_until(condition, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"not within {WAIT_S} s: {what}"
        time.sleep(0.2)


def test_a_topic_ttl_expires_messages_of_that_topic_only(setup):
    client, http = setup
    expiring, kept = unique_topic("ttl"), unique_topic("no-ttl")
    for topic in (expiring, kept):
        subscribe_earliest(client, topic).close()
    set_policy(http, expiring, "messageTTL", None, messageTTL="2")
    assert settles(http, topic_path(expiring) + "/messageTTL", 2)
    sent = payloads(5)
    for topic in (expiring, kept):
        send_all(client.create_producer(topic, batching_enabled=False), sent)
    time.sleep(2 + 2.0)   # the TTL, and a few checks after it

    expired = subscribe_earliest(client, expiring)
    expect_nothing(expired)
    assert data_of(receive_n(subscribe_earliest(client, kept), 5)) == sent


def test_a_topic_backlog_quota_refuses_producers_of_that_topic_only(setup):
    client, http = setup
    limited, free = unique_topic("quota"), unique_topic("no-quota")
    for topic in (limited, free):
        _fill(client, topic)   # 20 unconsumed messages of BODY bytes: over LIMIT
    assert 20 * BODY > LIMIT
    set_policy(http, limited, "backlogQuota", {"limitSize": LIMIT, "policy": "producer_exception"},
               backlogQuotaType="destination_storage")
    wait_until(lambda: _create_fails(client, limited, pulsar.ProducerBlockedQuotaExceededException),
               "a new producer of the topic over its quota is refused")
    client.create_producer(free).send(b"accepted")


def test_a_topic_retention_keeps_data_the_brokers_would_drop(setup):
    """Consumed ledgers (5 entries each) go at once under the broker's 0 / 0; the topic's own
    retention keeps them."""
    client, http = setup
    retained, trimmed = unique_topic("retained"), unique_topic("trimmed")
    consumers = {topic: subscribe_earliest(client, topic) for topic in (retained, trimmed)}
    retention = {"retentionTimeInMinutes": 60, "retentionSizeInMB": 10}
    set_policy(http, retained, "retention", retention)
    assert settles(http, topic_path(retained) + "/retention", retention)
    sent = payloads(7)
    for topic, consumer in consumers.items():
        send_all(client.create_producer(topic, batching_enabled=False), sent)
        assert data_of(receive_n(consumer, 7, ack=True)) == sent

    wait_until(lambda: read_all(client, trimmed) == sent[5:], "the sibling's consumed ledger is deleted")
    assert read_all(client, retained) == sent


def test_a_topic_compaction_threshold_compacts_that_topic_only(setup):
    client, http = setup
    compacted, plain = unique_topic("compacted"), unique_topic("plain")
    for topic in (compacted, plain):
        subscribe_earliest(client, topic).close()   # keeps its ledgers (5 entries each here)
    set_policy(http, compacted, "compactionThreshold", 100)
    assert settles(http, topic_path(compacted) + "/compactionThreshold", 100)
    for topic in (compacted, plain):
        send_keyed(client.create_producer(topic, batching_enabled=False), KEYED)

    wait_until(lambda: read_compacted(client, compacted) == COMPACTED, "the topic is compacted")
    assert http.get(topic_path(plain) + "/compaction").json()["status"] == "NOT_RUN"
    assert read_compacted(client, plain) == [value for _, value in KEYED]


def test_a_topic_inactive_policy_deletes_that_topic_only(setup):
    client, http = setup
    deleted, kept = unique_topic("inactive"), unique_topic("kept")
    for topic in (deleted, kept):
        client.create_producer(topic).close()
    policy = {"inactiveTopicDeleteMode": "delete_when_no_subscriptions", "maxInactiveDurationSeconds": 1,
              "deleteWhileInactive": True}
    set_policy(http, deleted, "inactiveTopicPolicies", policy)

    def listed() -> list[str]:
        return http.get("/admin/v2/persistent/public/default").json()

    wait_until(lambda: f"persistent://public/default/{deleted}" not in listed(), "the inactive topic is deleted")
    assert f"persistent://public/default/{kept}" in listed()
