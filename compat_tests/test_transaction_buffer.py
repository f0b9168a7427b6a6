"""The transaction buffer (transactionCoordinatorEnabled=true) over bare requests: transactional
SENDs carrying their id on CommandSend only (as the Go client sends them), ended by
END_TXN_ON_PARTITION (what a coordinator sends), read by the official Python client's consumers
and readers: committed messages delivered once and in order, aborted ones never, markers never;
the max-read position holding later messages behind an open transaction; restarts and kill -9
at each step. The Java and Go clients' own transactions are in test_transactions_e2e.py.
"""

from __future__ import annotations

import pulsar
import pytest

from compat_tests.admin_http import AdminHttp
from compat_tests.helpers import QUIET_MS, expect_nothing, read_all, receive_n, unique_topic
from compat_tests.txn_requests import ABORT, COMMIT, TxnProducer, last_message_id
from protocol import pulsar_api_pb2 as pb

TXN_CONFIG = {"transactionCoordinatorEnabled": "true"}
TXN_A, TXN_B, TXN_C = (0, 101), (0, 102), (1, 103)


@pytest.fixture(scope="module")
def txn_broker(tmp_path_factory):
    from compat_tests.conftest import _broker_fixture
    yield from _broker_fixture(tmp_path_factory, "txn-buffer", TXN_CONFIG)


@pytest.fixture
def producer(txn_broker):
    made = TxnProducer(txn_broker, f"persistent://public/default/{unique_topic('txn')}")
    yield made
    made.close()


def subscribe(client: pulsar.Client, topic: str, sub: str = "sub") -> pulsar.Consumer:
    return client.subscribe(topic, sub, initial_position=pulsar.InitialPosition.Earliest,
                            consumer_type=pulsar.ConsumerType.Shared)


def received(consumer: pulsar.Consumer, n: int) -> list[bytes]:
    return [m.data() for m in receive_n(consumer, n, ack=True)]


def test_committed_are_delivered_in_order_aborted_never(txn_broker, producer, connect):
    consumer = subscribe(connect(txn_broker), producer.topic)
    producer.sent(b"a1", TXN_A)
    producer.sent(b"b1", TXN_B)
    producer.sent(b"a2", TXN_A)
    producer.sent(b"c1", TXN_C)
    assert producer.end(TXN_B, ABORT).error == 0
    assert producer.end(TXN_A, COMMIT).error == 0
    assert producer.end(TXN_C, COMMIT).error == 0
    assert received(consumer, 3) == [b"a1", b"a2", b"c1"]
    expect_nothing(consumer)
    assert read_all(connect(txn_broker), producer.topic) == [b"a1", b"a2", b"c1"]
