"""One bad client never hurts a topic, the broker or its memory (issue 13).

Raw frames from this repository's codec play the bad client; the official Python client plays
the legitimate one, which must keep being served.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import struct
import threading
import time
import urllib.request

import crc32c
import pulsar

from compat_tests.helpers import data_of, full_name, metric, receive_n, subscribe_earliest, unique_topic
from compat_tests.raw_consumer import PROTOCOL_VERSION, RawConsumer
from managed_ledger.config import StorageConfig
from managed_ledger.factory import open_factory
from protocol import pulsar_api_pb2 as pb
from protocol.codec import FrameDecoder, encode_command, encode_payload_frame
from protocol.entry import make_entry, payload_of

Cmd = pb.BaseCommand
#: A checksummed entry whose MessageMetadata (5 bytes of 0xff) does not parse.
UNREADABLE_BODY = struct.pack(">I", 5) + b"\xff" * 5 + b"payload"
UNREADABLE_ENTRY = struct.pack(">HI", 0x0E01, crc32c.crc32c(UNREADABLE_BODY)) + UNREADABLE_BODY


class RawClient:
    """One blocking socket after CONNECT; frames in and out through the sans-IO codec."""

    def __init__(self, broker) -> None:
        self.sock = socket.create_connection(("127.0.0.1", broker.broker_port), timeout=10)
        self.decoder = FrameDecoder(64 * 1024 * 1024)
        self.send(Cmd(type=Cmd.CONNECT, connect=pb.CommandConnect(
            client_version="pulsard-hostile", protocol_version=PROTOCOL_VERSION)))
        assert self.next().type == Cmd.CONNECTED

    def send(self, command: Cmd, entry: bytes | None = None) -> None:
        data = encode_command(command) if entry is None else b"".join(encode_payload_frame(command, entry))
        self.sock.sendall(data)

    def next(self) -> Cmd:
        while (frame := self.decoder.next_frame()) is None:
            data = self.sock.recv(65536)
            assert data, "the broker closed the connection"
            self.decoder.receive_data(data)
        return frame.command

    def create_producer(self, topic: str, producer_id: int = 1) -> None:
        self.send(Cmd(type=Cmd.PRODUCER, producer=pb.CommandProducer(
            topic=topic, producer_id=producer_id, request_id=producer_id)))
        assert self.next().type == Cmd.PRODUCER_SUCCESS

    def close(self) -> None:
        self.sock.close()


# -- 1. poisoned topics ---------------------------------------------------------------------------
def test_send_with_unparsable_metadata_is_refused_and_not_stored(broker, client):
    topic = full_name(unique_topic("poison"))
    consumer = subscribe_earliest(client, topic)
    raw = RawClient(broker)
    try:
        raw.create_producer(topic)
        raw.send(Cmd(type=Cmd.SEND, send=pb.CommandSend(producer_id=1, sequence_id=0)), UNREADABLE_ENTRY)
        answer = raw.next()
        assert answer.type == Cmd.SEND_ERROR and answer.send_error.error == pb.ChecksumError
        good = make_entry(pb.MessageMetadata(producer_name="raw", sequence_id=1, publish_time=1), b"good")
        raw.send(Cmd(type=Cmd.SEND, send=pb.CommandSend(producer_id=1, sequence_id=1)), good)
        assert raw.next().type == Cmd.SEND_RECEIPT   # the connection and producer carry on
    finally:
        raw.close()
    producer = client.create_producer(topic)
    producer.send(b"after")
    assert data_of(receive_n(consumer, 2, ack=True)) == [b"good", b"after"]


def test_sends_of_two_producers_in_one_write_with_a_bad_one_among_them(broker, client):
    """The broker takes a producer's consecutive SENDs of one read as one run: a refused SEND
    in the middle, and another producer's between, leave every other receipted in order at
    consecutive positions and stored once."""
    topics = [full_name(unique_topic("runs")) for _ in range(2)]
    consumers = [subscribe_earliest(client, topic) for topic in topics]
    raw = RawClient(broker)
    try:
        raw.create_producer(topics[0], producer_id=1)
        raw.create_producer(topics[1], producer_id=2)

        def frame(producer_id: int, sequence_id: int, entry: bytes | None = None) -> bytes:
            entry = entry or make_entry(pb.MessageMetadata(producer_name=f"raw-{producer_id}", sequence_id=sequence_id,
                                                           publish_time=1), b"%d-%d" % (producer_id, sequence_id))
            return b"".join(encode_payload_frame(
                Cmd(type=Cmd.SEND, send=pb.CommandSend(producer_id=producer_id, sequence_id=sequence_id)), entry))

        order = [(1, 0), (1, 1), (2, 0), (1, 2), (1, 3), (2, 1), (2, 2), (1, 4)]
        raw.sock.sendall(b"".join(frame(p, s, UNREADABLE_ENTRY if (p, s) == (1, 2) else None) for p, s in order))
        answers = [raw.next() for _ in order]
    finally:
        raw.close()
    errors = [(a.send_error.producer_id, a.send_error.sequence_id) for a in answers if a.type == Cmd.SEND_ERROR]
    assert errors == [(1, 2)]
    for producer_id, sequence_ids in ((1, [0, 1, 3, 4]), (2, [0, 1, 2])):
        receipts = [a.send_receipt for a in answers
                    if a.type == Cmd.SEND_RECEIPT and a.send_receipt.producer_id == producer_id]
        assert [r.sequence_id for r in receipts] == sequence_ids
        first = receipts[0].message_id.entryId
        assert [(r.message_id.ledgerId, r.message_id.entryId) for r in receipts] == \
            [(receipts[0].message_id.ledgerId, first + i) for i in range(len(receipts))]
        received = data_of(receive_n(consumers[producer_id - 1], len(sequence_ids), ack=True))
        assert received == [b"%d-%d" % (producer_id, s) for s in sequence_ids]


def test_unreadable_entry_already_stored_is_skipped_and_counted(fresh_broker, connect):
    """Older data may hold an entry no SEND check refused: written here straight into the
    managed ledger of the stopped broker, between two good ones."""
    topic = full_name(unique_topic("stored-poison"))
    client = connect(fresh_broker)
    consumer = subscribe_earliest(client, topic)
    client.create_producer(topic).send(b"before")
    assert data_of(receive_n(consumer, 1, ack=True)) == [b"before"]
    client.close()
    fresh_broker.stop()

    async def append_bad_then_good() -> None:
        storage = await open_factory(StorageConfig(fresh_broker.data_dir))
        try:
            ledger = await storage.open_ledger(topic)
            await ledger.add_entry(UNREADABLE_ENTRY)
            await ledger.add_entry(make_entry(pb.MessageMetadata(producer_name="old", sequence_id=0,
                                                                 publish_time=1), b"behind-the-bad-one"))
        finally:
            await storage.close()

    asyncio.run(append_bad_then_good())
    fresh_broker.restart()
    client = connect(fresh_broker)
    consumer = subscribe_earliest(client, topic)
    assert data_of(receive_n(consumer, 1, ack=True)) == [b"behind-the-bad-one"]
    client.create_producer(topic).send(b"new")
    assert data_of(receive_n(consumer, 1, ack=True)) == [b"new"]
    assert metric(fresh_broker, "pulsard_unreadable_entries_skipped_total", topic) == 1


# -- 2. a consumer that stops reading its socket -------------------------------------------------
STALLED_PUSH_MB = 200
STALLED_MESSAGE = 64 * 1024
STALLED_RSS_GROWTH_MB = 150


class RssSampler(threading.Thread):
    """The broker's highest resident set size while running."""

    def __init__(self, broker) -> None:
        super().__init__(daemon=True)
        self.broker = broker
        self.peak_kib = broker.rss_kib()
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(0.1):
            self.peak_kib = max(self.peak_kib, self.broker.rss_kib())


def test_consumer_not_reading_its_socket_does_not_grow_broker_memory(fresh_broker, connect):
    """A raw consumer hands out huge permits and never reads; 200 MB go through its Shared
    subscription. The broker stops dispatching to it once its socket is backed up (memory stays
    bounded), the official consumer beside it gets the rest, and nothing is lost."""
    topic = full_name(unique_topic("stalled"))
    count = STALLED_PUSH_MB * 1024 * 1024 // STALLED_MESSAGE
    stalled = RawConsumer(fresh_broker, topic, "shared", pb.CommandSubscribe.Shared, "stalled")
    stalled.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    stalled.flow(1 << 30)
    client = connect(fresh_broker)
    reader = client.subscribe(topic, "shared", consumer_type=pulsar.ConsumerType.Shared, receiver_queue_size=10)
    producer = client.create_producer(topic, batching_enabled=False, max_pending_messages=200,
                                      block_if_queue_full=True)
    baseline_kib = fresh_broker.rss_kib()
    sampler = RssSampler(fresh_broker)
    sampler.start()
    received: list[bytes] = []
    reading = threading.Thread(target=_receive_until_quiet, args=(reader, received), daemon=True)
    reading.start()
    body = os.urandom(STALLED_MESSAGE - 8)
    for i in range(count):
        producer.send_async(struct.pack(">Q", i) + body, None)
    producer.flush()
    reading.join(timeout=120)
    sampler.stopped.set()
    sampler.join()
    growth_mb = (sampler.peak_kib - baseline_kib) / 1024
    assert growth_mb < STALLED_RSS_GROWTH_MB, f"broker RSS grew {growth_mb:.0f} MB"
    assert len(received) > count // 2, f"the reading consumer got only {len(received)} of {count}"
    stalled.sock.settimeout(30)
    while (frame := stalled.next_frame(3.0)) is not None:   # it reads at last: it gets the rest
        if frame.command.type == Cmd.MESSAGE:
            received.append(bytes(payload_of(frame.entry)[:8]))
    stalled.close()
    indexes = sorted(struct.unpack(">Q", m)[0] for m in received)
    assert indexes == list(range(count))


def _receive_until_quiet(consumer, received: list[bytes], quiet_ms: int = 5000) -> None:
    while True:
        try:
            message = consumer.receive(timeout_millis=quiet_ms)
        except pulsar.Timeout:
            return
        received.append(message.data()[:8])
        consumer.acknowledge(message)


# -- 3. cursor persistence under churn ------------------------------------------------------------
def test_clients_vanishing_mid_request_leave_cursors_persistable(fresh_broker, connect):
    """Consumers that SEEK (a cursor write) or subscribe (a cursor creation) and drop their
    connection at once, over and over: a write cancelled with its request used to land in the
    metadata store unseen by the cursor, whose later writes then all failed on the version
    ("is at version 1, expected 0"), losing mark-delete updates until a restart."""
    topics = [full_name(unique_topic(f"churn{i}")) for i in range(4)]
    client = connect(fresh_broker)
    for topic in topics:
        client.create_producer(topic).send(b"first")
    for round_ in range(40):
        for topic in topics:
            raw = RawClient(fresh_broker)
            raw.send(Cmd(type=Cmd.SUBSCRIBE, subscribe=pb.CommandSubscribe(
                topic=topic, subscription=f"s{round_ % 3}", subType=pb.CommandSubscribe.Shared,
                consumer_id=1, request_id=1, initialPosition=pb.CommandSubscribe.Earliest)))
            if round_ % 2:   # drop the connection while its subscription's cursor is written
                answer = raw.next()
                assert answer.type == Cmd.SUCCESS, answer
                raw.send(Cmd(type=Cmd.SEEK, seek=pb.CommandSeek(consumer_id=1, request_id=2,
                                                                message_publish_time=1)))
            time.sleep((round_ % 7) / 1000)
            raw.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            raw.close()   # reset: the broker cancels what this connection had in flight
    for topic in topics:
        for sub in ("s0", "s1", "s2"):
            consumer = client.subscribe(topic, sub, consumer_type=pulsar.ConsumerType.Shared,
                                        initial_position=pulsar.InitialPosition.Earliest)
            assert data_of(receive_n(consumer, 1, ack=True)) == [b"first"]
            consumer.close()
    time.sleep(1.0)   # a few cursor flush intervals
    client.close()
    fresh_broker.stop()
    log = fresh_broker.log_path.read_text()
    assert "MetadataBadVersionError" not in log and "Traceback" not in log
    fresh_broker.restart()
    client = connect(fresh_broker)
    for topic in topics:
        for sub in ("s0", "s1", "s2"):   # acknowledged before the restart: not redelivered
            consumer = client.subscribe(topic, sub, consumer_type=pulsar.ConsumerType.Shared)
            try:
                message = consumer.receive(timeout_millis=500)
            except pulsar.Timeout:
                message = None
            assert message is None, f"{topic} {sub} redelivered {message.data()!r}"
            consumer.close()


# -- 4. requests that used to end in a traceback -------------------------------------------------
def test_producer_with_initial_subscription_on_non_persistent_topic(broker, client):
    """Pulsar accepts it (a non-persistent subscription holds nothing without a consumer)."""
    topic = f"non-persistent://public/default/{unique_topic('np-initial')}"
    raw = RawClient(broker)
    try:
        raw.send(Cmd(type=Cmd.PRODUCER, producer=pb.CommandProducer(
            topic=topic, producer_id=1, request_id=1, initial_subscription_name="init")))
        assert raw.next().type == Cmd.PRODUCER_SUCCESS
    finally:
        raw.close()
    assert "Traceback" not in broker.log_tail(400)


def test_topics_of_malformed_namespace_is_an_error(broker):
    raw = RawClient(broker)
    try:
        for request_id, namespace in enumerate(["public//default", "/", "", "public/default/x/y", "a/.."], 1):
            raw.send(Cmd(type=Cmd.GET_TOPICS_OF_NAMESPACE, getTopicsOfNamespace=pb.CommandGetTopicsOfNamespace(
                request_id=request_id, namespace=namespace)))
            answer = raw.next()
            assert answer.type == Cmd.ERROR and answer.error.error == pb.MetadataError, namespace
    finally:
        raw.close()
    assert "Traceback" not in broker.log_tail(400)


# -- 5. the admin API -------------------------------------------------------------------------------
def http_status(broker, method: str, path: str, body: bytes | None = None) -> int:
    request = urllib.request.Request(broker.web_url + path, data=body, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


DEEP_BODIES = [b"[" * 100_000 + b"]" * 100_000, b'{"a":' * 100_000 + b"1" + b"}" * 100_000]


def test_deeply_nested_or_malformed_json_is_a_client_error(broker):
    namespace = "/admin/v2/namespaces/public/default"
    topic = f"/admin/v2/persistent/public/default/{unique_topic('admin-json')}"
    routes = [("PUT", "/admin/v2/tenants/deep"), ("POST", namespace + "/retention"),
              ("POST", namespace + "/backlogQuota"), ("PUT", topic + "/partitions"),
              ("POST", "/admin/v2/schemas/public/default/deep/schema")]
    for method, path in routes:
        for body in [*DEEP_BODIES, b"\xff\xfe", b"{", b"1e999", b"[]", b'"x"']:
            status = http_status(broker, method, path, body)
            assert 400 <= status < 500, (method, path, body[:20], status)
    assert "Traceback" not in broker.log_tail(2000)


def test_names_beyond_pulsar_rules_are_refused(broker):
    tenant_body = b'{"allowedClusters": ["standalone"]}'
    for tenant in [".", "..", "a" * 300, "t%3Cx", "caf%C3%A9"]:
        assert http_status(broker, "PUT", f"/admin/v2/tenants/{tenant}", tenant_body) == 412, tenant
    for namespace in ["..", "n" * 300, "a;b"]:
        assert http_status(broker, "PUT", f"/admin/v2/namespaces/public/{namespace}") == 412, namespace
    for topic in ["a%3Cb", "a;b", "%FF%FE", "t" * 300, "..", "a%0Ab"]:
        assert http_status(broker, "PUT", f"/admin/v2/persistent/public/default/{topic}") == 412, topic
    assert http_status(broker, "PUT", f"/admin/v2/persistent/public/default/{unique_topic('fine')}") == 204


def test_unparsable_http_is_logged_once_without_a_traceback(broker):
    for garbage in [b"BLAH\r\n\r\n", b"GET / HTTP/1.1\r\nContent-Length: abc\r\n\r\n",
                    b"GET /" + b"a" * 20_000 + b" HTTP/1.1\r\n\r\n"]:
        with socket.create_connection(("127.0.0.1", broker.web_port), timeout=10) as sock:
            sock.sendall(garbage)
            assert sock.recv(100).startswith(b"HTTP/1.1 400")
    time.sleep(0.2)
    tail = broker.log_tail(100)
    assert " ERROR " not in tail and "Traceback" not in tail
    assert "INFO server.web.protocol: bad HTTP request" in tail and "Content-Length" in tail   # logged, at INFO


# -- 6. inactive topics ---------------------------------------------------------------------------
INACTIVE_CONFIG = {"brokerDeleteInactiveTopicsFrequencySeconds": 1}
INACTIVE_WAIT_S = 4.0   # the topic is seen inactive, then deleted a second or two later


def listed_topics(broker, namespace: str = "public/default") -> list[str]:
    with urllib.request.urlopen(f"{broker.web_url}/admin/v2/persistent/{namespace}", timeout=10) as response:
        return json.loads(response.read())


def loaded_topics(broker) -> str:
    with urllib.request.urlopen(f"{broker.web_url}/metrics", timeout=10) as response:
        return response.read().decode()


def test_inactive_topics_are_deleted_as_pulsar_does(make_broker, connect):
    broker = make_broker(INACTIVE_CONFIG)
    client = connect(broker)
    gone, subscribed, producing = (full_name(unique_topic(t)) for t in ("gone", "subscribed", "producing"))
    client.create_producer(gone).send(b"nobody reads this")
    client.subscribe(subscribed, "kept").close()
    client.close()
    client = connect(broker)
    live_producer = client.create_producer(producing)
    time.sleep(INACTIVE_WAIT_S)
    listed = listed_topics(broker)
    assert gone not in listed and f'topic="{gone}"' not in loaded_topics(broker)   # data and memory freed
    assert subscribed in listed and producing in listed   # a subscription or a producer keeps a topic
    live_producer.send(b"still here")
    assert "deleted inactive topic" in broker.log_tail(400)
    consumer = subscribe_earliest(client, gone)   # used again: a new, empty topic
    client.create_producer(gone).send(b"new")
    assert data_of(receive_n(consumer, 1)) == [b"new"]


def test_namespace_inactive_topic_policies_override_the_broker(make_broker, connect):
    broker = make_broker({**INACTIVE_CONFIG, "brokerDeleteInactiveTopicsMaxInactiveDurationSeconds": 3600})
    assert http_status(broker, "PUT", "/admin/v2/namespaces/public/gc") == 204
    policy = {"inactiveTopicDeleteMode": "delete_when_subscriptions_caught_up",
              "maxInactiveDurationSeconds": 1, "deleteWhileInactive": True}
    assert http_status(broker, "POST", "/admin/v2/namespaces/public/gc/inactiveTopicPolicies",
                       json.dumps(policy).encode()) == 204
    assert http_status(broker, "POST", "/admin/v2/namespaces/public/gc/inactiveTopicPolicies",
                       b'{"inactiveTopicDeleteMode": "sometimes"}') == 400
    client = connect(broker)
    caught_up, backlogged = (f"persistent://public/gc/{unique_topic(t)}" for t in ("caught-up", "backlogged"))
    elsewhere = full_name(unique_topic("default-ns"))
    for topic in (caught_up, backlogged, elsewhere):
        consumer = subscribe_earliest(client, topic)
        client.create_producer(topic).send(b"m")
        if topic != backlogged:
            receive_n(consumer, 1, ack=True)
        consumer.close()
    client.close()
    time.sleep(INACTIVE_WAIT_S)
    assert caught_up not in listed_topics(broker, "public/gc")
    assert backlogged in listed_topics(broker, "public/gc")
    assert elsewhere in listed_topics(broker)   # the broker's own settings: an hour, and subscribed
