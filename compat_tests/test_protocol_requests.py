"""Requests the official Python client cannot send, answered as Pulsar answers them: consumer
stats (CONSUMER_STATS), and every command this broker does not serve, which must get an answer
the client understands (never silence) while the connection and other clients carry on."""

from __future__ import annotations

import pytest

from compat_tests.helpers import data_of, full_name, receive_n, subscribe_earliest, unique_topic
from compat_tests.raw_requests import RawConnection
from protocol import commands
from protocol import pulsar_api_pb2 as pb
from protocol.codec import PAYLOAD_COMMANDS
from protocol.entry import make_entry

Cmd = pb.BaseCommand
CONSUMER_ID = 1


def handshake(raw: RawConnection) -> None:
    connected = raw.connect(pb.CommandConnect(client_version="compat", protocol_version=21))
    assert connected is not None and connected.type == Cmd.CONNECTED


def call(raw: RawConnection, command: Cmd) -> Cmd:
    raw.send(command, make_entry(pb.MessageMetadata(producer_name="p", sequence_id=0, publish_time=1), b"x")
             if command.type in PAYLOAD_COMMANDS else None)
    answer = raw.receive()
    assert answer is not None, "the broker closed the connection"
    return answer


def consumer_stats(raw: RawConnection, request_id: int, consumer_id: int = CONSUMER_ID) -> pb.CommandConsumerStatsResponse:
    answer = call(raw, Cmd(type=Cmd.CONSUMER_STATS,
                           consumerStats=pb.CommandConsumerStats(request_id=request_id, consumer_id=consumer_id)))
    assert answer.type == Cmd.CONSUMER_STATS_RESPONSE
    assert answer.consumerStatsResponse.request_id == request_id
    return answer.consumerStatsResponse


def test_consumer_stats_answer_with_the_consumers_counters(broker, client):
    topic = full_name(unique_topic("stats"))
    producer = client.create_producer(topic, batching_enabled=False)
    client.subscribe(topic, "sub").close()   # the subscription exists before the messages
    for i in range(3):
        producer.send(f"m{i}".encode())
    with RawConnection(broker.broker_port) as raw:
        handshake(raw)
        subscribed = call(raw, Cmd(type=Cmd.SUBSCRIBE, subscribe=pb.CommandSubscribe(
            topic=topic, subscription="sub", subType=pb.CommandSubscribe.Shared, consumer_id=CONSUMER_ID,
            request_id=1, consumer_name="stats-consumer")))
        assert subscribed.type == Cmd.SUCCESS

        stats = consumer_stats(raw, 2)
        assert not stats.HasField("error_code")
        assert (stats.consumerName, stats.type, stats.msgBacklog) == ("stats-consumer", "Shared", 3)
        assert (stats.availablePermits, stats.unackedMessages, stats.blockedConsumerOnUnackedMsgs) == (0, 0, False)
        assert stats.address and stats.connectedSince
        assert stats.HasField("msgRateOut") and stats.HasField("messageAckRate")

        raw.send(Cmd(type=Cmd.FLOW, flow=pb.CommandFlow(consumer_id=CONSUMER_ID, messagePermits=10)))
        for _ in range(3):
            assert raw.receive().type == Cmd.MESSAGE
        stats = consumer_stats(raw, 3)
        assert (stats.availablePermits, stats.unackedMessages, stats.msgBacklog) == (7, 3, 3)


def test_consumer_stats_of_an_unknown_consumer_is_consumer_not_found(broker):
    with RawConnection(broker.broker_port) as raw:
        handshake(raw)
        stats = consumer_stats(raw, 5, consumer_id=42)
        assert (stats.error_code, stats.error_message) == (pb.ConsumerNotFound, "Consumer 42 not found")
        assert call(raw, Cmd(type=Cmd.PING, ping=pb.CommandPing())).type == Cmd.PONG


def _request(kind: int, request_id: int) -> Cmd:
    """A command of this kind with every required field set (request_id where it has one)."""
    command = Cmd(type=kind)
    _fill(commands.body_of(command), request_id)
    assert command.IsInitialized(), command.FindInitializationErrors()
    return command


def _fill(message, request_id: int) -> None:
    message.SetInParent()
    for field in message.DESCRIPTOR.fields:
        if field.name == "request_id":
            message.request_id = request_id
        elif not field.is_required:
            continue
        elif field.message_type is not None:
            _fill(getattr(message, field.name), request_id)
        elif field.enum_type is not None:
            setattr(message, field.name, field.enum_type.values[0].number)
        else:
            setattr(message, field.name, {field.TYPE_STRING: "x", field.TYPE_BYTES: b"x", field.TYPE_BOOL: True}
                    .get(field.type, 1))


#: What a client sends that pulsard does not serve: transactions, topic-list watchers, and the
#: commands only a broker sends.
UNSERVED = sorted(set(Cmd.Type.values()) - {
    Cmd.CONNECT, Cmd.PING, Cmd.PONG, Cmd.AUTH_RESPONSE, Cmd.LOOKUP, Cmd.PARTITIONED_METADATA, Cmd.PRODUCER,
    Cmd.SEND, Cmd.CLOSE_PRODUCER, Cmd.SUBSCRIBE, Cmd.FLOW, Cmd.ACK, Cmd.REDELIVER_UNACKNOWLEDGED_MESSAGES,
    Cmd.CLOSE_CONSUMER, Cmd.UNSUBSCRIBE, Cmd.SEEK, Cmd.GET_LAST_MESSAGE_ID, Cmd.GET_TOPICS_OF_NAMESPACE,
    Cmd.GET_SCHEMA, Cmd.GET_OR_CREATE_SCHEMA, Cmd.CONSUMER_STATS,
})


def test_every_unserved_command_is_answered_and_the_connection_stays(broker, client):
    topic = unique_topic("live")
    consumer = subscribe_earliest(client, topic)
    producer = client.create_producer(topic)
    with RawConnection(broker.broker_port) as raw:
        handshake(raw)
        for request_id, kind in enumerate(UNSERVED, start=100):
            name = Cmd.Type.Name(kind)
            answer = call(raw, _request(kind, request_id))
            has_request_id = "request_id" in commands.body_of(Cmd(type=kind)).DESCRIPTOR.fields_by_name
            if kind in commands.TXN_REQUESTS:
                assert answer.type == kind + 1, name
                body = commands.body_of(answer)
                assert (body.request_id, body.error, body.message) == \
                    (request_id, pb.NotAllowedError, "Transactions are not enabled."), name
            else:
                assert answer.type == Cmd.ERROR, name
                assert answer.error.error == pb.NotAllowedError, name
                assert answer.error.request_id == (request_id if has_request_id else 2**64 - 1), name
                assert name in answer.error.message
        assert call(raw, Cmd(type=Cmd.PING, ping=pb.CommandPing())).type == Cmd.PONG
    producer.send(b"after")
    assert data_of(receive_n(consumer, 1, ack=True)) == [b"after"]


def test_unserved_commands_are_logged_once_per_kind(broker):
    repeats = 20
    with RawConnection(broker.broker_port) as raw:
        handshake(raw)
        for request_id in range(repeats):
            call(raw, _request(Cmd.WATCH_TOPIC_LIST_CLOSE, request_id))
            call(raw, _request(Cmd.NEW_TXN, request_id))
    log = broker.log_path.read_text(errors="replace")
    for kind in ("WATCH_TOPIC_LIST_CLOSE", "NEW_TXN"):
        lines = [line for line in log.splitlines() if f"{kind} from" in line]
        # one line per kind per interval (10 s): a second only if the test ran that long
        assert 1 <= len(lines) <= 2, lines
        assert "Traceback" not in log


@pytest.mark.parametrize("kind", sorted(commands.TXN_REQUESTS), ids=Cmd.Type.Name)
def test_transaction_requests_echo_the_transaction_id(broker, kind):
    request = _request(kind, 7)
    body = commands.body_of(request)
    if "txnid_most_bits" in body.DESCRIPTOR.fields_by_name:
        body.txnid_most_bits, body.txnid_least_bits = 5, 6
    with RawConnection(broker.broker_port) as raw:
        handshake(raw)
        answer = commands.body_of(call(raw, request))
    if "txnid_most_bits" in body.DESCRIPTOR.fields_by_name:
        assert (answer.txnid_most_bits, answer.txnid_least_bits) == (5, 6)
    assert answer.error == pb.NotAllowedError
