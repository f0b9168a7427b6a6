"""Every broker-side builder yields a complete command that survives the wire."""

from __future__ import annotations

import inspect
from collections.abc import Callable

import crc32c
import pytest

from protocol import commands
from protocol import pulsar_api_pb2 as pb
from protocol.codec import encode_command, encode_payload_frame
from protocol.entry import make_entry
from protocol.tests.framing import decode_all, metadata

T = pb.BaseCommand
U64_MAX = 2**64 - 1
SCHEMA = pb.Schema(name="s", schema_data=b"{}", type=pb.Schema.Json)

BUILDERS: dict[str, tuple[Callable[[], pb.BaseCommand], int]] = {
    "connected": (lambda: commands.connected("pulsard", 21, 5242880), T.CONNECTED),
    "ping": (commands.ping, T.PING),
    "pong": (commands.pong, T.PONG),
    "success": (lambda: commands.success(1, schema=SCHEMA), T.SUCCESS),
    "error": (lambda: commands.error(-1, pb.AuthenticationError, "who are you"), T.ERROR),
    "lookup_connect": (lambda: commands.lookup_connect(2, "pulsar://h:6650", "pulsar+ssl://h:6651"), T.LOOKUP_RESPONSE),
    "lookup_redirect": (lambda: commands.lookup_redirect(3, "pulsar://other:6650"), T.LOOKUP_RESPONSE),
    "lookup_failed": (lambda: commands.lookup_failed(4, pb.TopicNotFound, "none"), T.LOOKUP_RESPONSE),
    "partitioned_metadata": (lambda: commands.partitioned_metadata(5, 0), T.PARTITIONED_METADATA_RESPONSE),
    "partitioned_metadata_failed": (
        lambda: commands.partitioned_metadata_failed(6, pb.ServiceNotReady, "later"), T.PARTITIONED_METADATA_RESPONSE,
    ),
    "topics_of_namespace": (lambda: commands.topics_of_namespace(7, ["b", "a"]), T.GET_TOPICS_OF_NAMESPACE_RESPONSE),
    "producer_success": (
        lambda: commands.producer_success(8, "prod", 41, b"\x00" * 8, topic_epoch=2, producer_ready=False),
        T.PRODUCER_SUCCESS,
    ),
    "send_error": (lambda: commands.send_error(9, 10, pb.ChecksumError, "bad crc"), T.SEND_ERROR),
    "close_producer": (lambda: commands.close_producer(9, -1), T.CLOSE_PRODUCER),
    "get_or_create_schema_response": (
        lambda: commands.get_or_create_schema_response(14, b"\x00" * 7 + b"\x01"), T.GET_OR_CREATE_SCHEMA_RESPONSE,
    ),
    "get_or_create_schema_error": (
        lambda: commands.get_or_create_schema_error(15, pb.IncompatibleSchema, "no"), T.GET_OR_CREATE_SCHEMA_RESPONSE,
    ),
    "message": (lambda: commands.message(16, 17, 18, 2, 1, [5], consumer_epoch=3), T.MESSAGE),
    "ack_response": (lambda: commands.ack_response(19, 20), T.ACK_RESPONSE),
    "close_consumer": (lambda: commands.close_consumer(21, 22), T.CLOSE_CONSUMER),
    "active_consumer_change": (lambda: commands.active_consumer_change(23, True), T.ACTIVE_CONSUMER_CHANGE),
    "reached_end_of_topic": (lambda: commands.reached_end_of_topic(24), T.REACHED_END_OF_TOPIC),
    "last_message_id": (lambda: commands.last_message_id(24, 25, -1, mark_delete=(25, -1)), T.GET_LAST_MESSAGE_ID_RESPONSE),
    "consumer_stats_response": (
        lambda: commands.consumer_stats_response(26, consumerName="c", availablePermits=10, msgBacklog=5,
                                                 type="Shared", msgRateOut=1.5, blockedConsumerOnUnackedMsgs=True),
        T.CONSUMER_STATS_RESPONSE,
    ),
    "consumer_stats_error": (
        lambda: commands.consumer_stats_error(27, pb.ConsumerNotFound, "gone"), T.CONSUMER_STATS_RESPONSE,
    ),
    "txn_response": (
        lambda: commands.txn_response(T(type=T.NEW_TXN, newTxn=pb.CommandNewTxn(request_id=31, tc_id=0))),
        T.NEW_TXN_RESPONSE,
    ),
    "txn_error": (
        lambda: commands.txn_error(T(type=T.END_TXN, endTxn=pb.CommandEndTxn(request_id=30, txnid_most_bits=1)),
                                   pb.NotAllowedError, "no"), T.END_TXN_RESPONSE,
    ),
    "schema_response": (lambda: commands.schema_response(28, SCHEMA, b"\x00" * 8), T.GET_SCHEMA_RESPONSE),
    "schema_error": (lambda: commands.schema_error(29, pb.TopicNotFound, "no schema"), T.GET_SCHEMA_RESPONSE),
    "auth_challenge": (lambda: commands.auth_challenge("pulsard", "token", b"PulsarAuthRefresh", 21), T.AUTH_CHALLENGE),
}


def test_every_builder_is_exercised() -> None:
    public_builders = {
        name for name, function in inspect.getmembers(commands, inspect.isfunction)
        if function.__module__ == commands.__name__ and not name.startswith("_")
        and inspect.signature(function).return_annotation == "BaseCommand"
    }
    assert public_builders == set(BUILDERS)


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_builder_round_trips(name: str) -> None:
    build, expected_type = BUILDERS[name]
    cmd = build()
    assert cmd.type == expected_type
    assert cmd.IsInitialized(), cmd.FindInitializationErrors()
    if expected_type == T.MESSAGE:
        entry = make_entry(metadata(), b"m")
        header, _ = encode_payload_frame(cmd, entry)
        (frame,) = decode_all(header + entry)
        assert frame.entry == entry
    else:
        (frame,) = decode_all(encode_command(cmd))
    assert frame.command == cmd


def test_signed_ids_become_uint64() -> None:
    assert commands.error(-1, pb.AuthenticationError, "x").error.request_id == U64_MAX
    last = commands.last_message_id(1, 5, -1, mark_delete=(-1, -1)).getLastMessageIdResponse
    assert last.last_message_id.entryId == U64_MAX
    assert last.consumer_mark_delete_position.ledgerId == U64_MAX
    assert commands.to_signed(last.last_message_id.entryId) == -1
    assert commands.to_signed(2**63 - 1) == 2**63 - 1 and commands.to_signed(0) == 0


def test_message_leaves_defaults_off_the_wire() -> None:
    body = commands.message(1, 2, 3).message
    assert not body.message_id.HasField("partition") and body.message_id.partition == -1
    assert not body.HasField("redelivery_count") and not body.ack_set and not body.HasField("consumer_epoch")
    full = commands.message(1, 2, 3, partition=4, redelivery_count=2, ack_set=[-1, 7]).message
    assert (full.message_id.partition, full.redelivery_count, list(full.ack_set)) == (4, 2, [-1, 7])


def test_lookup_responses() -> None:
    connect = commands.lookup_connect(1, "pulsar://a:1").lookupTopicResponse
    assert connect.response == pb.CommandLookupTopicResponse.Connect and connect.authoritative
    assert not connect.HasField("brokerServiceUrlTls") and not connect.proxy_through_service_url
    redirect = commands.lookup_redirect(1, "pulsar://b:1", proxy_through_service_url=True).lookupTopicResponse
    assert redirect.response == pb.CommandLookupTopicResponse.Redirect and redirect.proxy_through_service_url
    failed = commands.lookup_failed(1, pb.TopicNotFound, "x").lookupTopicResponse
    assert failed.response == pb.CommandLookupTopicResponse.Failed and failed.error == pb.TopicNotFound


def test_partitioned_metadata_always_sets_response() -> None:
    ok = commands.partitioned_metadata(1, 0).partitionMetadataResponse
    assert ok.HasField("response") and ok.response == pb.CommandPartitionedTopicMetadataResponse.Success
    assert ok.HasField("partitions") and ok.partitions == 0


def test_ack_response_reports_errors_only_on_failure() -> None:
    ok = commands.ack_response(1, 2).ackResponse
    assert not ok.HasField("error") and not ok.HasField("message")
    failed = commands.ack_response(1, 2, pb.NotAllowedError).ackResponse
    assert failed.error == pb.NotAllowedError and failed.message == "NotAllowedError"
    in_txn = commands.ack_response(1, 2, txn=(3, 4)).ackResponse
    assert (in_txn.txnid_most_bits, in_txn.txnid_least_bits) == (3, 4) and not ok.HasField("txnid_most_bits")


def test_producer_success_defaults() -> None:
    body = commands.producer_success(1, "p").producer_success
    assert body.last_sequence_id == -1 and body.producer_ready
    assert body.HasField("schema_version") and body.schema_version == b""   # Java 3.0.x reads it always
    assert not body.HasField("topic_epoch")


def test_connected_feature_flags_only_when_given() -> None:
    assert not commands.connected("s", 21, 1).connected.HasField("feature_flags")
    flags = pb.FeatureFlags(supports_auth_refresh=True)
    assert commands.connected("s", 21, 1, flags).connected.feature_flags == flags


def test_negotiate_protocol_version() -> None:
    assert commands.negotiate_protocol_version(20) == 20
    assert commands.negotiate_protocol_version(99) == 21
    assert commands.negotiate_protocol_version(6) == 12


def test_topics_hash_matches_java_format() -> None:
    # CRC32C of the sorted names joined by ",", bytes little-endian (Guava HashCode.toString).
    expected = crc32c.crc32c(b"persistent://t/n/a,persistent://t/n/b").to_bytes(4, "little").hex()
    assert commands.compute_topics_hash(["persistent://t/n/b", "persistent://t/n/a"]) == expected
    assert commands.compute_topics_hash([]) == "00000000"
    body = commands.topics_of_namespace(1, ["persistent://t/n/b", "persistent://t/n/a"]).getTopicsOfNamespaceResponse
    assert body.topics_hash == expected and body.changed and not body.filtered
    assert list(body.topics) == ["persistent://t/n/b", "persistent://t/n/a"]


def test_unchanged_topic_list() -> None:
    body = commands.topics_of_namespace(1, [], topics_hash="abcd1234", changed=False).getTopicsOfNamespaceResponse
    assert not body.changed and not body.topics and body.topics_hash == "abcd1234"
    with pytest.raises(ValueError):
        commands.topics_of_namespace(1, [], changed=False)


def test_receipts_encode_each_receipt_as_a_fresh_command_would():
    from protocol.receipts import SendReceipts

    receipts = SendReceipts(9)
    for sequence_id, highest, ledger_id, entry_id in [(10, 13, 11, 12), (11, 14, 11, 13), (0, 0, -1, -1)]:
        fresh = pb.BaseCommand(type=T.SEND_RECEIPT)
        fresh.send_receipt.producer_id = 9
        fresh.send_receipt.sequence_id = sequence_id
        fresh.send_receipt.highest_sequence_id = highest
        fresh.send_receipt.message_id.ledgerId = ledger_id & (2**64 - 1)   # (-1, -1) names a duplicate
        fresh.send_receipt.message_id.entryId = entry_id & (2**64 - 1)
        (frame,) = decode_all(receipts.encode(sequence_id, highest, ledger_id, entry_id))
        assert frame.command.type == T.SEND_RECEIPT
        assert frame.command.IsInitialized(), frame.command.FindInitializationErrors()
        assert frame.command == fresh
        assert receipts.encode(sequence_id, highest, ledger_id, entry_id) == encode_command(fresh)


@pytest.mark.parametrize("kind", sorted(commands.TXN_REQUESTS))
def test_txn_error_answers_in_the_requests_own_response_form(kind: int) -> None:
    request = T(type=kind)
    body = commands.body_of(request)
    body.request_id = 7
    if "txnid_most_bits" in body.DESCRIPTOR.fields_by_name:
        body.txnid_most_bits, body.txnid_least_bits = 3, 4
    reply = commands.txn_error(request, pb.NotAllowedError, "Transactions are not enabled.")
    [decoded] = decode_all(encode_command(reply))
    answer = commands.body_of(decoded.command)
    assert decoded.command.type == kind + 1 and T.Type.Name(kind + 1).endswith("_RESPONSE")
    assert (answer.request_id, answer.error, answer.message) == (7, pb.NotAllowedError, "Transactions are not enabled.")
    if "txnid_most_bits" in body.DESCRIPTOR.fields_by_name:
        assert (answer.txnid_most_bits, answer.txnid_least_bits) == (3, 4)


def test_request_id_of_commands_with_and_without_one() -> None:
    assert commands.request_id_of(T(type=T.WATCH_TOPIC_LIST, watchTopicList=pb.CommandWatchTopicList(
        request_id=9, watcher_id=1, namespace="public/default"))) == 9
    assert commands.request_id_of(T(type=T.SUCCESS, success=pb.CommandSuccess(request_id=U64_MAX))) == -1
    assert commands.request_id_of(T(type=T.REACHED_END_OF_TOPIC)) == -1
