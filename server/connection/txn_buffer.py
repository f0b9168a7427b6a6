"""A topic's side of transactions on a client connection: transactional SENDs (CommandSend with
a transaction id; protocol/codec.py leaves them as frames, so plain SENDs never pay for this),
and END_TXN_ON_PARTITION, what a coordinator on another broker sends to end a transaction on a
partition served here (answered END_TXN_ON_PARTITION_RESPONSE, errors too).

A transactional SEND passes the refusal checks of a plain one, in arrival order with the SENDs
around it; its producer hands it to the topic's transaction buffer. With
transactionCoordinatorEnabled=false, END_TXN_ON_PARTITION gets unserved.py's refusal. Where
authorization is on, only a super user (another broker) may end a transaction on a partition.
"""

from __future__ import annotations

from protocol import commands
from protocol import pulsar_api_pb2 as pb
from protocol.codec import Frame, send_of
from server.errors import AuthorizationError, TopicNotFound
from server.topics.topic_name import TopicName
from server.transactions.interfaces import TxnID

from .command_context import CommandContext
from .unserved import refusal

Cmd = pb.BaseCommand


def on_transactional_send(connection: CommandContext, command: Cmd, frame: Frame) -> None:
    send = send_of(frame)
    producer = connection.admitted_producer(send)
    if producer is not None:
        producer.publish_txn(send, TxnID(command.send.txnid_most_bits, command.send.txnid_least_bits))


def on_end_txn_on_partition(connection: CommandContext, command: Cmd, frame: Frame) -> None:
    if connection.broker.transactions is None:
        connection.write(refusal(command, connection.remote))
        return
    request = command.endTxnOnPartition
    connection.respond(request.request_id, _end_on_partition(connection, command),
                        lambda _request_id, code, message: commands.txn_error(command, code, message))


async def _end_on_partition(connection: CommandContext, command: Cmd) -> Cmd:
    request = command.endTxnOnPartition
    authorization = connection.broker.authorization
    if authorization.enabled and not authorization.is_super_user(connection.auth.role):
        raise AuthorizationError(f"{connection.auth.role} may not end transactions on partitions")
    name = TopicName.parse(request.topic)
    try:
        topic = await connection.broker.get_topic(name, create=False)
    except TopicNotFound:   # nothing of the transaction can be there
        return commands.txn_response(command)
    buffer = topic.transaction_buffer
    if buffer is not None:
        await buffer.end_txn(TxnID(request.txnid_most_bits, request.txnid_least_bits), request.txn_action)
    return commands.txn_response(command)


HANDLERS = {
    Cmd.SEND: on_transactional_send,
    Cmd.END_TXN_ON_PARTITION: on_end_txn_on_partition,
}
