"""Builders for every command the broker sends (SEND_RECEIPT, one per message: receipts.py).

Each returns a complete ``pb.BaseCommand``: every proto2 ``required`` field is set,
because C++ and Go clients drop the connection on a frame that fails to parse.

Ids are plain Python ints. Message ids, request ids and sequence ids are uint64 on the
wire while the broker thinks of sentinels as signed (earliest = (-1, -1), "no request"
= -1), so builders accept signed values and convert them with ``_u64``; decode the
other way with ``to_signed``.
"""

from __future__ import annotations

from collections.abc import Iterable

from google.protobuf.message import Message

from native import crc32c
from protocol import pulsar_api_pb2 as pb

BaseCommand = pb.BaseCommand

MAX_PROTOCOL_VERSION = pb.v21
"""Newest protocol version this codec understands."""
MIN_ANSWERED_PROTOCOL_VERSION = pb.v12
"""C++ clients gate GET_LAST_MESSAGE_ID, multi-id ACK and checksummed SEND on >= 12."""

_U64_MASK = (1 << 64) - 1
_I64_SIGN = 1 << 63


def _u64(value: int) -> int:
    """Signed or unsigned 64-bit value as the uint64 the wire carries (-1 -> 2**64-1)."""
    return value & _U64_MASK


def to_signed(value: int) -> int:
    """A uint64 from the wire read back as int64 (2**64-1 -> -1, the 'earliest' id)."""
    return value - (1 << 64) if value & _I64_SIGN else value


def negotiate_protocol_version(client_version: int) -> int:
    """The version to answer in CONNECTED: the client's, capped at ours, floored at v12."""
    return max(min(client_version, MAX_PROTOCOL_VERSION), MIN_ANSWERED_PROTOCOL_VERSION)


def compute_topics_hash(topics: Iterable[str]) -> str:
    """Hash of a topic list as Java clients compare it (Pulsar's TopicList.calculateHash).

    CRC32C over the names sorted as Java sorts strings (UTF-16 code units) and joined
    by ",", rendered like Guava's HashCode: the 4 bytes little-endian, in hex.
    """
    ordered = sorted(topics, key=lambda name: name.encode("utf-16-be"))
    digest = crc32c(",".join(ordered).encode())
    return digest.to_bytes(4, "little").hex()


# --- connection --------------------------------------------------------------------


def connected(
    server_version: str,
    protocol_version: int,
    max_message_size: int,
    feature_flags: pb.FeatureFlags | None = None,
) -> BaseCommand:
    """CONNECTED: must be the first frame a client gets back after CONNECT."""
    cmd = BaseCommand(type=BaseCommand.CONNECTED)
    body = cmd.connected
    body.server_version = server_version
    body.protocol_version = protocol_version
    body.max_message_size = max_message_size
    if feature_flags is not None:
        body.feature_flags.CopyFrom(feature_flags)
    return cmd


def auth_challenge(server_version: str, method: str, data: bytes, protocol_version: int) -> BaseCommand:
    """AUTH_CHALLENGE: the broker asks for fresh credentials (e.g. an expired token)."""
    cmd = BaseCommand(type=BaseCommand.AUTH_CHALLENGE)
    body = cmd.authChallenge
    body.server_version = server_version
    body.protocol_version = protocol_version
    body.challenge.auth_method_name = method
    body.challenge.auth_data = data
    return cmd


def ping() -> BaseCommand:
    cmd = BaseCommand(type=BaseCommand.PING)
    cmd.ping.SetInParent()
    return cmd


def pong() -> BaseCommand:
    cmd = BaseCommand(type=BaseCommand.PONG)
    cmd.pong.SetInParent()
    return cmd


def success(request_id: int, schema: pb.Schema | None = None) -> BaseCommand:
    cmd = BaseCommand(type=BaseCommand.SUCCESS)
    cmd.success.request_id = _u64(request_id)
    if schema is not None:
        cmd.success.schema.CopyFrom(schema)
    return cmd


def error(request_id: int, code: int, message: str) -> BaseCommand:
    """ERROR for a request; ``request_id=-1`` when none applies (e.g. failed auth)."""
    cmd = BaseCommand(type=BaseCommand.ERROR)
    body = cmd.error
    body.request_id = _u64(request_id)
    body.error = code
    body.message = message
    return cmd


# --- lookup ------------------------------------------------------------------------


def lookup_connect(
    request_id: int,
    broker_url: str | None,
    broker_url_tls: str | None = None,
    authoritative: bool = True,
    proxy_through_service_url: bool = False,
) -> BaseCommand:
    """LOOKUP_RESPONSE telling the client to use ``broker_url`` for the topic."""
    return _lookup(
        request_id, pb.CommandLookupTopicResponse.Connect,
        broker_url, broker_url_tls, authoritative, proxy_through_service_url,
    )


def lookup_redirect(
    request_id: int,
    broker_url: str,
    broker_url_tls: str | None = None,
    authoritative: bool = False,
    proxy_through_service_url: bool = False,
) -> BaseCommand:
    """LOOKUP_RESPONSE sending the client to ask ``broker_url`` again (multi-broker)."""
    return _lookup(
        request_id, pb.CommandLookupTopicResponse.Redirect,
        broker_url, broker_url_tls, authoritative, proxy_through_service_url,
    )


def _lookup(
    request_id: int,
    response: int,
    broker_url: str | None,
    broker_url_tls: str | None,
    authoritative: bool,
    proxy_through_service_url: bool,
) -> BaseCommand:
    cmd = BaseCommand(type=BaseCommand.LOOKUP_RESPONSE)
    body = cmd.lookupTopicResponse
    body.request_id = _u64(request_id)
    body.response = response
    if broker_url is not None:
        body.brokerServiceUrl = broker_url
    if broker_url_tls is not None:
        body.brokerServiceUrlTls = broker_url_tls
    body.authoritative = authoritative
    body.proxy_through_service_url = proxy_through_service_url
    return cmd


def lookup_failed(request_id: int, code: int, message: str) -> BaseCommand:
    cmd = BaseCommand(type=BaseCommand.LOOKUP_RESPONSE)
    body = cmd.lookupTopicResponse
    body.request_id = _u64(request_id)
    body.response = pb.CommandLookupTopicResponse.Failed
    body.error = code
    body.message = message
    return cmd


def partitioned_metadata(request_id: int, partitions: int) -> BaseCommand:
    """PARTITIONED_METADATA_RESPONSE; ``partitions=0`` means not partitioned."""
    cmd = BaseCommand(type=BaseCommand.PARTITIONED_METADATA_RESPONSE)
    body = cmd.partitionMetadataResponse
    body.request_id = _u64(request_id)
    body.partitions = partitions
    body.response = pb.CommandPartitionedTopicMetadataResponse.Success
    return cmd


def partitioned_metadata_failed(request_id: int, code: int, message: str) -> BaseCommand:
    cmd = BaseCommand(type=BaseCommand.PARTITIONED_METADATA_RESPONSE)
    body = cmd.partitionMetadataResponse
    body.request_id = _u64(request_id)
    body.response = pb.CommandPartitionedTopicMetadataResponse.Failed
    body.error = code
    body.message = message
    return cmd


def topics_of_namespace(
    request_id: int,
    topics: Iterable[str],
    topics_hash: str | None = None,
    filtered: bool = False,
    changed: bool = True,
) -> BaseCommand:
    """GET_TOPICS_OF_NAMESPACE_RESPONSE; the hash is computed from ``topics`` if not given.

    With ``changed=False`` the list is omitted and ``topics_hash`` must be passed.
    """
    names = list(topics)
    if topics_hash is None:
        if not changed:
            raise ValueError("an unchanged topic list needs the caller's topics_hash")
        topics_hash = compute_topics_hash(names)
    cmd = BaseCommand(type=BaseCommand.GET_TOPICS_OF_NAMESPACE_RESPONSE)
    body = cmd.getTopicsOfNamespaceResponse
    body.request_id = _u64(request_id)
    if changed:
        body.topics.extend(names)
    body.filtered = filtered
    body.topics_hash = topics_hash
    body.changed = changed
    return cmd


# --- producers ---------------------------------------------------------------------


def producer_success(
    request_id: int,
    producer_name: str,
    last_sequence_id: int = -1,
    schema_version: bytes | None = None,
    topic_epoch: int | None = None,
    producer_ready: bool = True,
) -> BaseCommand:
    """PRODUCER_SUCCESS; ``producer_ready=False`` parks a WaitForExclusive producer.
    schema_version is always set, empty without a schema (Pulsar's SchemaVersion.Empty): the Java
    client 3.0.x reads it unconditionally and drops the connection when it is absent."""
    cmd = BaseCommand(type=BaseCommand.PRODUCER_SUCCESS)
    body = cmd.producer_success
    body.request_id = _u64(request_id)
    body.producer_name = producer_name
    body.last_sequence_id = last_sequence_id
    body.schema_version = b"" if schema_version is None else schema_version
    if topic_epoch is not None:
        body.topic_epoch = _u64(topic_epoch)
    body.producer_ready = producer_ready
    return cmd


def send_error(producer_id: int, sequence_id: int, code: int, message: str) -> BaseCommand:
    """SEND_ERROR; C++ fails only that message on ChecksumError, reconnects otherwise."""
    cmd = BaseCommand(type=BaseCommand.SEND_ERROR)
    body = cmd.send_error
    body.producer_id = _u64(producer_id)
    body.sequence_id = _u64(sequence_id)
    body.error = code
    body.message = message
    return cmd


def close_producer(producer_id: int, request_id: int) -> BaseCommand:
    """Broker-initiated CLOSE_PRODUCER: the client looks the topic up and reconnects."""
    cmd = BaseCommand(type=BaseCommand.CLOSE_PRODUCER)
    cmd.close_producer.producer_id = _u64(producer_id)
    cmd.close_producer.request_id = _u64(request_id)
    return cmd


def get_or_create_schema_response(request_id: int, schema_version: bytes) -> BaseCommand:
    cmd = BaseCommand(type=BaseCommand.GET_OR_CREATE_SCHEMA_RESPONSE)
    body = cmd.getOrCreateSchemaResponse
    body.request_id = _u64(request_id)
    body.schema_version = schema_version
    return cmd


def get_or_create_schema_error(request_id: int, code: int, message: str) -> BaseCommand:
    cmd = BaseCommand(type=BaseCommand.GET_OR_CREATE_SCHEMA_RESPONSE)
    body = cmd.getOrCreateSchemaResponse
    body.request_id = _u64(request_id)
    body.error_code = code
    body.error_message = message
    return cmd


# --- consumers ---------------------------------------------------------------------


def message(
    consumer_id: int,
    ledger_id: int,
    entry_id: int,
    partition: int = -1,
    redelivery_count: int = 0,
    ack_set: Iterable[int] | None = None,
    consumer_epoch: int | None = None,
) -> BaseCommand:
    """The MESSAGE command that precedes a stored entry (see ``encode_payload_frame``).

    ``ack_set``: int64 words whose SET bits are batch indexes still unacknowledged.
    Fields at their wire default are left out to keep the per-entry header small.
    """
    cmd = BaseCommand(type=BaseCommand.MESSAGE)
    body = cmd.message
    body.consumer_id = _u64(consumer_id)
    message_id = body.message_id
    message_id.ledgerId = _u64(ledger_id)
    message_id.entryId = _u64(entry_id)
    if partition != -1:
        message_id.partition = partition
    if redelivery_count:
        body.redelivery_count = redelivery_count
    if ack_set is not None:
        body.ack_set.extend(ack_set)
    if consumer_epoch is not None:
        body.consumer_epoch = _u64(consumer_epoch)
    return cmd


def ack_response(
    consumer_id: int,
    request_id: int,
    code: int | None = None,
    message: str | None = None,
    txn: tuple[int, int] | None = None,
) -> BaseCommand:
    """ACK_RESPONSE; error and message only on failure (Go reads any message as one); an
    acknowledgement in a transaction is answered with its txn (most, least bits)."""
    cmd = BaseCommand(type=BaseCommand.ACK_RESPONSE)
    body = cmd.ackResponse
    body.consumer_id = _u64(consumer_id)
    body.request_id = _u64(request_id)
    if txn is not None:
        body.txnid_most_bits, body.txnid_least_bits = txn
    if code is not None:
        body.error = code
        body.message = message if message is not None else pb.ServerError.Name(code)
    return cmd


def close_consumer(consumer_id: int, request_id: int) -> BaseCommand:
    """Broker-initiated CLOSE_CONSUMER: the client resubscribes (e.g. after a seek)."""
    cmd = BaseCommand(type=BaseCommand.CLOSE_CONSUMER)
    cmd.close_consumer.consumer_id = _u64(consumer_id)
    cmd.close_consumer.request_id = _u64(request_id)
    return cmd


def reached_end_of_topic(consumer_id: int) -> BaseCommand:
    """The topic was terminated and this consumer has acknowledged everything in it."""
    cmd = BaseCommand(type=BaseCommand.REACHED_END_OF_TOPIC)
    cmd.reachedEndOfTopic.consumer_id = _u64(consumer_id)
    return cmd


def active_consumer_change(consumer_id: int, is_active: bool) -> BaseCommand:
    cmd = BaseCommand(type=BaseCommand.ACTIVE_CONSUMER_CHANGE)
    cmd.active_consumer_change.consumer_id = _u64(consumer_id)
    cmd.active_consumer_change.is_active = is_active
    return cmd


def last_message_id(
    request_id: int,
    ledger_id: int,
    entry_id: int,
    partition: int = -1,
    batch_index: int = -1,
    mark_delete: tuple[int, int] | None = None,
) -> BaseCommand:
    """GET_LAST_MESSAGE_ID_RESPONSE; an empty topic has ``entry_id=-1``.

    ``mark_delete`` is the subscription's (ledger, entry) mark-delete position.
    """
    cmd = BaseCommand(type=BaseCommand.GET_LAST_MESSAGE_ID_RESPONSE)
    body = cmd.getLastMessageIdResponse
    body.request_id = _u64(request_id)
    last = body.last_message_id
    last.ledgerId = _u64(ledger_id)
    last.entryId = _u64(entry_id)
    if partition != -1:
        last.partition = partition
    if batch_index != -1:
        last.batch_index = batch_index
    if mark_delete is not None:
        body.consumer_mark_delete_position.ledgerId = _u64(mark_delete[0])
        body.consumer_mark_delete_position.entryId = _u64(mark_delete[1])
    return cmd


def consumer_stats_response(request_id: int, **stats: str | int | float | bool) -> BaseCommand:
    """CONSUMER_STATS_RESPONSE; `stats` by the body's field names (msgRateOut, consumerName,
    availablePermits, msgBacklog, type...), as Pulsar's ServerCnx fills them."""
    cmd = BaseCommand(type=BaseCommand.CONSUMER_STATS_RESPONSE)
    body = cmd.consumerStatsResponse
    body.request_id = _u64(request_id)
    for name, value in stats.items():
        setattr(body, name, value)
    return cmd


def consumer_stats_error(request_id: int, code: int, message: str) -> BaseCommand:
    cmd = BaseCommand(type=BaseCommand.CONSUMER_STATS_RESPONSE)
    body = cmd.consumerStatsResponse
    body.request_id = _u64(request_id)
    body.error_code = code
    body.error_message = message
    return cmd


# --- requests the broker does not serve ------------------------------------------------

#: Transaction requests: each is answered by the command one type number up, whose body
#: (the BaseCommand field of that number) carries the request id, the transaction id and an error.
TXN_REQUESTS = frozenset({
    BaseCommand.TC_CLIENT_CONNECT_REQUEST, BaseCommand.NEW_TXN, BaseCommand.ADD_PARTITION_TO_TXN,
    BaseCommand.ADD_SUBSCRIPTION_TO_TXN, BaseCommand.END_TXN, BaseCommand.END_TXN_ON_PARTITION,
    BaseCommand.END_TXN_ON_SUBSCRIPTION,
})
_TXN_ID = frozenset({"txnid_least_bits", "txnid_most_bits"})


def body_of(command: BaseCommand) -> Message:
    """A command's body: the BaseCommand field numbered as its type (empty if it was not sent)."""
    return getattr(command, BaseCommand.DESCRIPTOR.fields_by_number[command.type].name)


def request_id_of(command: BaseCommand) -> int:
    """The command's request id, -1 for a command without one (as ERROR then says)."""
    body = body_of(command)
    return to_signed(body.request_id) if "request_id" in body.DESCRIPTOR.fields_by_name else -1


def txn_response(request: BaseCommand) -> BaseCommand:
    """A transaction request's own response (see TXN_REQUESTS), carrying its request id and
    transaction id."""
    cmd = BaseCommand(type=request.type + 1)
    body, asked = body_of(cmd), body_of(request)
    body.request_id = asked.request_id
    for name in _TXN_ID.intersection(body.DESCRIPTOR.fields_by_name, asked.DESCRIPTOR.fields_by_name):
        setattr(body, name, getattr(asked, name))
    return cmd


def txn_error(request: BaseCommand, code: int, message: str) -> BaseCommand:
    """txn_response failed with `code`."""
    cmd = txn_response(request)
    body = body_of(cmd)
    body.error = code
    body.message = message
    return cmd


# --- schemas -----------------------------------------------------------------------


def schema_response(request_id: int, schema: pb.Schema, schema_version: bytes) -> BaseCommand:
    cmd = BaseCommand(type=BaseCommand.GET_SCHEMA_RESPONSE)
    body = cmd.getSchemaResponse
    body.request_id = _u64(request_id)
    body.schema.CopyFrom(schema)
    body.schema_version = schema_version
    return cmd


def schema_error(request_id: int, code: int, message: str) -> BaseCommand:
    """GET_SCHEMA_RESPONSE failure; TopicNotFound is how "no schema" is said."""
    cmd = BaseCommand(type=BaseCommand.GET_SCHEMA_RESPONSE)
    body = cmd.getSchemaResponse
    body.request_id = _u64(request_id)
    body.error_code = code
    body.error_message = message
    return cmd
