"""Topic termination (admin POST .../terminate) with the official Python client: the last
message id answered, producers closed and refused with TopicTerminated, everything before the
end still delivered, readers at the end, and the state kept over unload and kill -9."""

from __future__ import annotations

import json
import threading
import uuid

import pulsar
import pytest

from compat_tests.admin_http import AdminHttp, admin, reason
from compat_tests.helpers import (AsyncSends, data_of, entry_of, expect_nothing, payloads, receive_exactly, receive_n,
                                  send_all, subscribe_earliest)

SEND_TIMEOUT_MS = 5000


def admin_path(topic: str) -> str:
    domain, rest = topic.split("://")
    return f"/admin/v2/{domain}/{rest}"


def new_topic(prefix: str = "term") -> str:
    return f"persistent://public/default/{prefix}-{uuid.uuid4().hex[:8]}"


def terminate(http: AdminHttp, topic: str) -> dict:
    response = http.post(f"{admin_path(topic)}/terminate")
    assert response.status_code == 200, response.text
    return response.json()


@pytest.fixture(scope="module")
def http(broker) -> AdminHttp:
    return AdminHttp(broker.web_url)


def test_terminate_answers_the_last_message_id_and_is_idempotent(http, client):
    topic = new_topic()
    ids = send_all(client.create_producer(topic, batching_enabled=False), payloads(5))
    ledger_id, entry_id = entry_of(ids[-1])
    expected = {"ledgerId": ledger_id, "entryId": entry_id, "partitionIndex": -1}
    assert terminate(http, topic) == expected
    assert terminate(http, topic) == expected
    assert http.get(f"{admin_path(topic)}/lastMessageId").json() == expected


def test_terminate_refusals(http, client):
    absent = new_topic("absent")
    missing = http.post(f"{admin_path(absent)}/terminate")
    assert missing.status_code == 404 and reason(missing) == f"Topic {absent} does not exist"
    non_persistent = f"non-persistent://public/default/np-{uuid.uuid4().hex[:8]}"
    client.create_producer(non_persistent).send(b"x")
    refused = http.post(f"{admin_path(non_persistent)}/terminate")
    assert refused.status_code == 405
    assert reason(refused) == "Termination of a non-persistent topic is not allowed"
    partitioned = new_topic("parts")
    assert http.put(f"{admin_path(partitioned)}/partitions", json=2).status_code == 204
    whole = http.post(f"{admin_path(partitioned)}/terminate")
    assert whole.status_code == 405 and reason(whole) == "Termination of a partitioned topic is not allowed"
    plain = new_topic("plain")
    assert http.put(admin_path(plain)).status_code == 204
    assert http.post(f"{admin_path(plain)}/terminate/partitions").status_code == 404


def test_producers_are_closed_and_refused_for_good(http, client):
    topic = new_topic()
    producer = client.create_producer(topic, batching_enabled=False, send_timeout_millis=SEND_TIMEOUT_MS)
    ids = send_all(producer, payloads(3))
    assert terminate(http, topic)["entryId"] == entry_of(ids[-1])[1]
    with pytest.raises(pulsar.TopicTerminated):
        producer.send(b"after the end")
    with pytest.raises(pulsar.TopicTerminated):
        client.create_producer(topic)
    consumer = subscribe_earliest(client, topic)
    receive_exactly(consumer, payloads(3), ids=ids)
    expect_nothing(consumer)


def test_consumers_drain_everything_before_the_end(http, client):
    topic = new_topic()
    consumer = client.subscribe(topic, "drain", consumer_type=pulsar.ConsumerType.Shared,
                                initial_position=pulsar.InitialPosition.Earliest)
    producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=10)
    contents = payloads(25)
    for body in contents:
        producer.send_async(body, None)
    producer.flush()
    end = terminate(http, topic)
    messages = receive_n(consumer, 25, ack=True)
    assert sorted(data_of(messages)) == sorted(contents)
    assert max(entry_of(m.message_id()) for m in messages) == (end["ledgerId"], end["entryId"])
    expect_nothing(consumer)
    stats = http.get(f"{admin_path(topic)}/stats").json()
    assert stats["subscriptions"]["drain"]["msgBacklog"] == 0 and stats["publishers"] == []


def test_readers_see_no_more_messages_at_the_end(http, client):
    topic = new_topic()
    ids = send_all(client.create_producer(topic, batching_enabled=False), payloads(4))
    terminate(http, topic)
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    assert reader.has_message_available()
    assert [m.message_id() for m in receive_n(reader, 4)] == ids
    assert not reader.has_message_available()
    at_end = client.create_reader(topic, pulsar.MessageId.latest)
    assert not at_end.has_message_available()


def test_termination_survives_unload(http, client):
    topic = new_topic()
    ids = send_all(client.create_producer(topic, batching_enabled=False), payloads(2))
    end = terminate(http, topic)
    assert http.put(f"{admin_path(topic)}/unload").status_code == 204
    with pytest.raises(pulsar.TopicTerminated):
        client.create_producer(topic)
    assert terminate(http, topic) == end
    receive_exactly(subscribe_earliest(client, topic), payloads(2), ids=ids)


def test_partitioned_terminate(http, client):
    topic = new_topic("parts")
    assert http.put(f"{admin_path(topic)}/partitions", json=2).status_code == 204
    producer = client.create_producer(topic, batching_enabled=False,
                                      message_routing_mode=pulsar.PartitionsRoutingMode.RoundRobinDistribution)
    ids = send_all(producer, payloads(4))
    response = http.post(f"{admin_path(topic)}/terminate/partitions")
    assert response.status_code == 200, response.text
    last = {}
    for msg_id in ids:
        last[msg_id.partition()] = max(last.get(msg_id.partition(), (-1, -1)), entry_of(msg_id))
    assert response.json() == {str(p): {"ledgerId": l, "entryId": e, "partitionIndex": -1}
                               for p, (l, e) in sorted(last.items())}
    with pytest.raises(pulsar.TopicTerminated):
        client.create_producer(topic)


def test_termination_survives_kill9(fresh_broker, connect):
    http = AdminHttp(fresh_broker.web_url)
    client = connect(fresh_broker)
    topic = new_topic()
    ids = send_all(client.create_producer(topic, batching_enabled=False), payloads(3))
    end = terminate(http, topic)
    fresh_broker.kill9()
    client.shutdown()
    fresh_broker.restart()
    client = connect(fresh_broker)
    with pytest.raises(pulsar.TopicTerminated):
        client.create_producer(topic)
    assert terminate(http, topic) == end
    consumer = subscribe_earliest(client, topic)
    receive_exactly(consumer, payloads(3), ids=ids)
    expect_nothing(consumer)


def test_cli_terminate_and_partitioned_terminate(broker, client):
    topic = new_topic("cli")
    ids = send_all(client.create_producer(topic, batching_enabled=False), payloads(2))
    done = admin(broker, "topics", "terminate", topic)
    assert done.returncode == 0, done.stderr
    ledger_id, entry_id = entry_of(ids[-1])
    assert json.loads(done.stdout) == {"ledgerId": ledger_id, "entryId": entry_id, "partitionIndex": -1}
    partitioned = new_topic("cli-parts")
    assert admin(broker, "topics", "create-partitioned-topic", partitioned, "-p", "2").returncode == 0
    refused = admin(broker, "topics", "terminate", partitioned)
    assert (refused.returncode, refused.stderr.strip()) == (
        1, "pulsard admin: 405: Termination of a partitioned topic is not allowed")
    client.create_producer(partitioned).send(b"x")
    ends = admin(broker, "topics", "partitioned-terminate", partitioned)
    assert ends.returncode == 0 and sorted(json.loads(ends.stdout)) == ["0", "1"]


def test_a_producer_waiting_for_exclusive_access_fails_at_termination(http, client):
    topic = new_topic("waiting")
    owner = client.create_producer(topic, access_mode=pulsar.ProducerAccessMode.Exclusive)
    outcome: list = []

    def wait_for_exclusive() -> None:
        try:
            outcome.append(client.create_producer(topic, access_mode=pulsar.ProducerAccessMode.WaitForExclusive))
        except pulsar.PulsarException as exc:
            outcome.append(exc)

    waiter = threading.Thread(target=wait_for_exclusive)
    waiter.start()
    waiter.join(1.5)
    assert waiter.is_alive(), "WaitForExclusive waits while the topic has a producer"
    terminate(http, topic)
    waiter.join(10)
    assert not waiter.is_alive() and len(outcome) == 1 and isinstance(outcome[0], pulsar.TopicTerminated)
    with pytest.raises(pulsar.TopicTerminated):
        owner.send(b"after the end")


def test_sends_racing_the_termination_end_stored_or_terminated(http, client):
    """Every send racing the termination is either receipted (and stored before the end) or
    failed as terminated; none is left to time out, and nothing is stored twice."""
    topic = new_topic("race")
    producer = client.create_producer(topic, batching_enabled=False, send_timeout_millis=SEND_TIMEOUT_MS,
                                      block_if_queue_full=True)
    sends = AsyncSends()
    bodies = payloads(400, "race")
    for i, body in enumerate(bodies):
        producer.send_async(body, sends.callback_for(i))
        if i == 200:
            terminate(http, topic)
    results = sorted(sends.wait(len(bodies), timeout_s=30), key=lambda r: r[0])
    outcomes = {r for _, r, _ in results}
    assert outcomes <= {pulsar.Result.Ok, pulsar.Result.TopicTerminated}, outcomes
    stored = [bodies[i] for i, r, _ in results if r == pulsar.Result.Ok]
    assert len(stored) >= 1 and stored == bodies[:len(stored)]
    consumer = subscribe_earliest(client, topic, "all")
    assert data_of(receive_n(consumer, len(stored))) == stored
    expect_nothing(consumer)
