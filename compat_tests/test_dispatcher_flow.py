"""How permits count against batches (preciseDispatcherFlowControl). By default, as in Pulsar,
a dispatcher read fetches as many entries as the consumer has permits and sends them all, so a
consumer is sent whole batches far past its permits; with precise flow control reads are sized
by the batches seen and the broker stops at the batch that uses the permits up. Either way the
first read of a subscription fetches one entry (no entry size is known yet)."""

from __future__ import annotations

import time

import pulsar
import pytest

from compat_tests.admin_http import AdminHttp
from compat_tests.conftest import _broker_fixture
from compat_tests.helpers import full_name, payloads, receive_n, send_all_async, unique_topic

BATCHES = 5
BATCH = 100
QUEUE = 150


@pytest.fixture(scope="module")
def precise_broker(tmp_path_factory):
    yield from _broker_fixture(tmp_path_factory, "precise-flow", {"preciseDispatcherFlowControl": "true"})


def backlog_of_batches(client: pulsar.Client, topic: str) -> None:
    producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=BATCH,
                                      batching_max_publish_delay_ms=5000)
    for batch in range(BATCHES):
        ids = send_all_async(producer, payloads(BATCH, f"b{batch}-"))
        assert len({(i.ledger_id(), i.entry_id()) for i in ids}) == 1, "expected one batch entry"
    producer.close()


def sent_and_permits_once_settled(broker, topic: str) -> tuple[int, int]:
    """(messages the subscription sent, the consumer's permits) once the broker has stopped
    sending (the application takes nothing, so the client asks for nothing more)."""
    http = AdminHttp(broker.web_url)
    path = f"/admin/v2/persistent/{full_name(topic).removeprefix('persistent://')}/stats"
    previous = None
    for _ in range(50):
        time.sleep(0.2)
        subscription = http.get(path).json()["subscriptions"]["sub"]
        (consumer,) = subscription["consumers"]
        current = subscription["msgOutCounter"], consumer["availablePermits"]
        if current[0] > 0 and current == previous:
            return current
        previous = current
    raise AssertionError(f"the subscription's stats did not settle: {previous}")


def subscribe_earliest_with_queue(client: pulsar.Client, topic: str):
    return client.subscribe(topic, "sub", receiver_queue_size=QUEUE,
                            initial_position=pulsar.InitialPosition.Earliest)


def test_by_default_permits_count_entries_and_batches_go_out_far_past_them(broker, client):
    topic = unique_topic("flow")
    backlog_of_batches(client, topic)
    consumer = subscribe_earliest_with_queue(client, topic)
    # one batch first; the 50 permits left then count as 50 entries: the other four went out
    assert sent_and_permits_once_settled(broker, topic) == (BATCHES * BATCH, QUEUE - BATCHES * BATCH)
    assert len(receive_n(consumer, BATCHES * BATCH, ack=True)) == BATCHES * BATCH


def test_precise_flow_control_stops_at_the_batch_that_uses_up_the_permits(precise_broker, connect):
    client = connect(precise_broker)
    topic = unique_topic("flow")
    backlog_of_batches(client, topic)
    consumer = subscribe_earliest_with_queue(client, topic)
    # one batch first; the 50 permits left then fetch one more batch of 100, and no further
    assert sent_and_permits_once_settled(precise_broker, topic) == (2 * BATCH, QUEUE - 2 * BATCH)
    assert len(receive_n(consumer, BATCHES * BATCH, ack=True)) == BATCHES * BATCH
