"""A subscription's side of transactions on a client connection: ACKs carrying a transaction
(answered once the pending-ack log holds them, with the transaction's id in ACK_RESPONSE) and
END_TXN_ON_SUBSCRIPTION, which a coordinator sends to the broker serving the subscription.
With transactionCoordinatorEnabled=false the latter gets unserved.py's refusal, the former
NotAllowed, as from Pulsar.
"""

from __future__ import annotations

import logging
from log_limits.repeats import RepeatLimitedLog
from protocol import commands
from protocol import pulsar_api_pb2 as pb
from protocol.codec import Frame
from server.errors import BrokerError
from server.transactions.interfaces import TxnID
from server.transactions.participants import LocalParticipants

from .command_context import CommandContext
from .unserved import refusal

Cmd = pb.BaseCommand
log = logging.getLogger(__name__)
_repeats = RepeatLimitedLog(log)   # a client retrying a conflicting ack: one line per interval


def has_txn(ack: pb.CommandAck) -> bool:
    return ack.HasField("txnid_most_bits") or ack.HasField("txnid_least_bits")


def on_txn_ack(connection: CommandContext, ack: pb.CommandAck) -> None:
    """Held by the subscription's pending acks; the answer waits until they are durable."""
    txn = (ack.txnid_most_bits, ack.txnid_least_bits)

    def reply(code: int | None = None, message: str | None = None) -> Cmd | None:
        if not ack.HasField("request_id"):
            return None
        return commands.ack_response(ack.consumer_id, ack.request_id, code, message, txn)

    async def work() -> Cmd | None:
        try:
            consumer = connection.consumer(ack.consumer_id)
            await consumer.subscription.acknowledge_in_txn(consumer, ack)
        except BrokerError as exc:
            _repeats.log(logging.INFO, (type(exc), connection.remote),
                         "transactional acknowledgement from %s refused: %s", connection.remote, exc)
            return reply(exc.code, str(exc))
        return reply()

    connection.respond(ack.request_id, work(), lambda _request_id, code, message: commands.ack_response(
        ack.consumer_id, ack.request_id, code, message, txn))


def on_end_txn_on_subscription(connection: CommandContext, command: Cmd, frame: Frame) -> None:
    """Commit or abort a transaction's acks on one subscription (loading its topic, whose
    pending acks replay first); a topic or subscription that does not exist has nothing to end."""
    if not connection.broker.config.transaction_coordinator_enabled:
        connection.write(refusal(command, connection.remote))
        return
    request = command.endTxnOnSubscription
    txn = TxnID(request.txnid_most_bits, request.txnid_least_bits)

    async def work() -> Cmd:
        participants = LocalParticipants(connection.broker)
        await participants.end_on_subscription(request.subscription.topic, request.subscription.subscription,
                                               txn, request.txn_action)
        return commands.txn_response(command)

    connection.respond(request.request_id, work(),
                        lambda _request_id, code, message: commands.txn_error(command, code, message))


HANDLERS = {Cmd.END_TXN_ON_SUBSCRIPTION: on_end_txn_on_subscription}
