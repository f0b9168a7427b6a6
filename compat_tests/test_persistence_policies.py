"""Persistence policies on a standalone broker: the topic's, else its namespace's, else the
broker's managedLedgerDefault* keys. The embedded bookie keeps one copy of each entry, so the
ensemble and quorums are stored, checked and answered (?applied=true) but only a BookKeeper
cluster acts on them (test_cluster_persistence.py); the mark-delete rate limits how often a
subscription's acknowledgements are persisted, which a kill -9 shows."""

from __future__ import annotations

import time

import pulsar

from compat_tests.admin_http import AdminHttp
from compat_tests.helpers import payloads, receive_n, send_all, unique_topic
from compat_tests.test_durability import ACK_PERSIST_WAIT_S, crash_and_restart
from compat_tests.test_topic_policies import settles, topic_path


def persistence(ensemble: int, write: int, ack: int, rate: float) -> dict:
    return {"bookkeeperEnsemble": ensemble, "bookkeeperWriteQuorum": write, "bookkeeperAckQuorum": ack,
            "managedLedgerMaxMarkDeleteRate": rate}


def test_applied_persistence_is_the_topics_else_the_namespaces_else_the_brokers(broker, connect):
    """(Ensembles of one: a standalone Pulsar has one bookie, and refuses ledgers of more.)"""
    client, http = connect(broker), AdminHttp(broker.web_url)
    topic = unique_topic("persistence")
    client.create_producer(topic).close()
    path = topic_path(topic) + "/persistence"
    default = http.get(path, applied="true").json()   # managedLedgerDefault*
    assert default["managedLedgerMaxMarkDeleteRate"] == 1.0
    assert default["bookkeeperEnsemble"] >= default["bookkeeperWriteQuorum"] >= default["bookkeeperAckQuorum"] > 0

    namespace = f"public/{unique_topic('ns')}"
    assert http.put(f"/admin/v2/namespaces/{namespace}").status_code == 204
    assert http.post(f"/admin/v2/namespaces/{namespace}/persistence", json=persistence(1, 1, 1, 0.5)).status_code == 204
    in_namespace = f"/admin/v2/persistent/{namespace}/{unique_topic()}"
    assert http.put(in_namespace).status_code == 204
    assert settles(http, in_namespace + "/persistence", persistence(1, 1, 1, 0.5), applied="true")

    assert http.post(path, json=persistence(1, 1, 1, 0.0)).status_code == 204
    assert settles(http, path, persistence(1, 1, 1, 0.0), applied="true")
    client.create_producer(topic).send(b"stored")


RATE = 0.2   # mark-delete persists per second: 5 s between two


def limited_topic(client, http: AdminHttp) -> str:
    topic = unique_topic("limited")
    client.subscribe(topic, "sub").close()
    assert http.post(topic_path(topic) + "/persistence", json=persistence(1, 1, 1, RATE)).status_code == 204
    assert settles(http, topic_path(topic) + "/persistence", persistence(1, 1, 1, RATE))
    return topic


def ack_two(client, topics: list[str], pause_s: float) -> None:
    """On each topic (at once): m-0..m-2 published; m-0 acknowledged (persisted at once: nothing
    was for a while), then m-1 1.5 s later (more than a second, less than five); then pause_s
    before the caller's kill -9. m-2 stays unacknowledged."""
    received = {}
    for topic in topics:
        consumer = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
        send_all(client.create_producer(topic, batching_enabled=False), payloads(3))
        received[topic] = (consumer, receive_n(consumer, 3))
    for consumer, messages in received.values():
        consumer.acknowledge(messages[0])
    time.sleep(1.5)
    for consumer, messages in received.values():
        consumer.acknowledge(messages[1])
    time.sleep(pause_s)


def after_kill9(broker, client, connect, topics: list[str]) -> dict[str, list[bytes]]:
    """kill -9, restart: what each topic's subscription gets again."""
    crash_and_restart(broker, client)
    client = connect(broker)
    redelivered = {}
    for topic in topics:
        consumer = subscribe_after_restart(client, topic)
        got = []
        try:
            while True:
                got.append(consumer.receive(1000).data())
        except pulsar.Timeout:
            redelivered[topic] = sorted(got)
        consumer.close()
    return redelivered


def subscribe_after_restart(client, topic: str):
    """Pulsar may still be recovering the topic after its restart (subscribing times out)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            return client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
        except pulsar.Timeout:
            if time.monotonic() > deadline:
                raise


def test_the_mark_delete_rate_of_a_topic_holds_its_acks_back(fresh_broker, connect):
    """At 0.2 per second, m-1's acknowledgement waits 5 s after m-0's was persisted: a kill -9
    before then delivers it again (Pulsar's mark-delete rate limiter keeps it in memory too),
    while at the broker's 1 per second it is persisted at once."""
    client, http = connect(fresh_broker), AdminHttp(fresh_broker.web_url)
    limited, default = limited_topic(client, http), unique_topic("default")
    ack_two(client, [limited, default], ACK_PERSIST_WAIT_S)
    assert after_kill9(fresh_broker, client, connect, [limited, default]) == \
        {limited: [b"m-1", b"m-2"], default: [b"m-2"]}


def test_acks_held_back_by_the_rate_are_persisted_when_it_allows(fresh_broker, connect):
    """pulsard persists what the rate held back once the rate allows (here 5 s later); Pulsar
    waits for its next permitted mark-delete, or its 60 s cursor flush."""
    client, http = connect(fresh_broker), AdminHttp(fresh_broker.web_url)
    limited = limited_topic(client, http)
    ack_two(client, [limited], 1 / RATE + ACK_PERSIST_WAIT_S)
    assert after_kill9(fresh_broker, client, connect, [limited]) == {limited: [b"m-2"]}
