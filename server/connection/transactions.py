"""The transaction coordinator's commands on a client connection: TC_CLIENT_CONNECT, NEW_TXN,
ADD_PARTITION_TO_TXN, ADD_SUBSCRIPTION_TO_TXN and END_TXN, each answered in its own response
form (errors too). With transactionCoordinatorEnabled=false they get unserved.py's refusal.

As Pulsar, where authorization is on, only the role that began a transaction (or a super
user) may add to it or end it; another one is told TransactionNotFound.
"""

from __future__ import annotations

from protocol import commands
from protocol import pulsar_api_pb2 as pb
from protocol.codec import Frame
from server.errors import BrokerError
from server.transactions.coordinator.service import TransactionCoordinators
from server.transactions.interfaces import TxnID

from .command_context import CommandContext
from .unserved import refusal

Cmd = pb.BaseCommand


class TxnOwnerMismatch(BrokerError):
    code = pb.TransactionNotFound

    def __init__(self, role: str | None, txn: TxnID) -> None:
        super().__init__(f"Client ({role}) is neither the owner of the transaction {txn} nor a super user")


def _serve(connection: CommandContext, command: Cmd, work) -> None:
    """Answer in the request's own response form, or refuse when transactions are off."""
    coordinators = connection.broker.transactions
    if coordinators is None:
        connection.write(refusal(command, connection.remote))
        return
    connection.respond(commands.request_id_of(command), work(coordinators),
                        lambda _request_id, code, message: commands.txn_error(command, code, message))


def _txn_of(body) -> TxnID:
    return TxnID(body.txnid_most_bits, body.txnid_least_bits)


def _check_owner(connection: CommandContext, coordinators: TransactionCoordinators, txn: TxnID) -> None:
    authorization = connection.broker.authorization
    if not authorization.enabled:
        return
    owner = coordinators.get(txn).owner
    role = connection.auth.role
    if owner is not None and role != owner and not authorization.is_super_user(role):
        raise TxnOwnerMismatch(role, txn)


def on_tc_client_connect(connection: CommandContext, command: Cmd, frame: Frame) -> None:
    async def work(coordinators: TransactionCoordinators) -> Cmd:
        await coordinators.connect(command.tcClientConnectRequest.tc_id)
        return commands.txn_response(command)
    _serve(connection, command, work)


def on_new_txn(connection: CommandContext, command: Cmd, frame: Frame) -> None:
    request = command.newTxn

    async def work(coordinators: TransactionCoordinators) -> Cmd:
        # txn_ttl_seconds carries milliseconds: the Java and Go clients send them so, and Pulsar reads them so
        txn = await coordinators.new_txn(request.tc_id, request.txn_ttl_seconds, connection.auth.role)
        reply = commands.txn_response(command)
        reply.newTxnResponse.txnid_most_bits = txn.most_bits
        reply.newTxnResponse.txnid_least_bits = txn.least_bits
        return reply
    _serve(connection, command, work)


def on_add_partition_to_txn(connection: CommandContext, command: Cmd, frame: Frame) -> None:
    request = command.addPartitionToTxn

    async def work(coordinators: TransactionCoordinators) -> Cmd:
        txn = _txn_of(request)
        _check_owner(connection, coordinators, txn)
        await coordinators.add_partitions(txn, list(request.partitions))
        return commands.txn_response(command)
    _serve(connection, command, work)


def on_add_subscription_to_txn(connection: CommandContext, command: Cmd, frame: Frame) -> None:
    request = command.addSubscriptionToTxn

    async def work(coordinators: TransactionCoordinators) -> Cmd:
        txn = _txn_of(request)
        _check_owner(connection, coordinators, txn)
        await coordinators.add_subscriptions(txn, [(s.topic, s.subscription) for s in request.subscription])
        return commands.txn_response(command)
    _serve(connection, command, work)


def on_end_txn(connection: CommandContext, command: Cmd, frame: Frame) -> None:
    request = command.endTxn

    async def work(coordinators: TransactionCoordinators) -> Cmd:
        txn = _txn_of(request)
        _check_owner(connection, coordinators, txn)
        await coordinators.end_txn(txn, request.txn_action)
        return commands.txn_response(command)
    _serve(connection, command, work)


HANDLERS = {
    Cmd.TC_CLIENT_CONNECT_REQUEST: on_tc_client_connect,
    Cmd.NEW_TXN: on_new_txn,
    Cmd.ADD_PARTITION_TO_TXN: on_add_partition_to_txn,
    Cmd.ADD_SUBSCRIPTION_TO_TXN: on_add_subscription_to_txn,
    Cmd.END_TXN: on_end_txn,
}
