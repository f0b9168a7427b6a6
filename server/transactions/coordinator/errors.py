"""The coordinator's refusals, with the ServerError codes and words Pulsar's coordinator uses."""

from __future__ import annotations

from protocol import pulsar_api_pb2 as pb
from server.errors import BrokerError
from server.transactions.interfaces import TxnID


class CoordinatorNotFound(BrokerError):
    """This broker does not run that coordinator (now): the client looks it up again."""

    code = pb.TransactionCoordinatorNotFound

    def __init__(self, tc_id: int) -> None:
        super().__init__(f"Transaction coordinator with id {tc_id} not found!")


class TransactionNotFound(BrokerError):
    """Unknown, or already ended (an ended transaction is forgotten, as in Pulsar 3.0)."""

    code = pb.TransactionNotFound

    def __init__(self, txn: TxnID) -> None:
        super().__init__(f"The transaction with this txdID `{txn}`not found ")   # sic


class InvalidTxnStatus(BrokerError):
    code = pb.InvalidTxnStatus

    def __init__(self, txn: TxnID, expected: str, actual: str) -> None:
        super().__init__(f"Expect Txn `{txn}` to be in {expected} status but it is in {actual} status")


class ReachedMaxActiveTransactions(BrokerError):
    """maxActiveTransactionsPerCoordinator: Pulsar maps this exception to no particular code."""

    code = pb.UnknownError

    def __init__(self, tc_id: int) -> None:
        super().__init__(f"New txn op reach max active txn! tcId : {tc_id}")
