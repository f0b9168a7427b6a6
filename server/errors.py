"""The broker's exception family; each member knows the Pulsar ServerError code it travels as."""

from __future__ import annotations

from managed_ledger.errors import MetadataSessionLostError
from protocol import pulsar_api_pb2 as pb


class BrokerError(Exception):
    """A request the broker refuses; the client sees `code` and this message."""

    code: int = pb.UnknownError


class InvalidTopicName(BrokerError):
    code = pb.InvalidTopicName


class TopicNotFound(BrokerError):
    code = pb.TopicNotFound


class ProducerBusy(BrokerError):
    code = pb.ProducerBusy


class ProducerFenced(BrokerError):
    code = pb.ProducerFenced


class ConsumerBusy(BrokerError):
    code = pb.ConsumerBusy


class NamespaceNotFound(TopicNotFound):
    """The topic's tenant or namespace does not exist, so no topic can be there (clients see
    TopicNotFound, as from Pulsar)."""


class SubscriptionNotFound(BrokerError):
    code = pb.SubscriptionNotFound


class ConsumerAssignError(BrokerError):
    """Key_Shared: the consumer's hash ranges cannot be assigned (empty, invalid or taken)."""

    code = pb.ConsumerAssignError


class TopicTerminated(BrokerError):
    """The topic was terminated: no producer may publish on it again (clients treat it as final)."""

    code = pb.TopicTerminatedError


class NotAllowed(BrokerError):
    code = pb.NotAllowedError


class IncompatibleSchema(BrokerError):
    code = pb.IncompatibleSchema


class ServiceNotReady(BrokerError):
    code = pb.ServiceNotReady


class ProducerBlockedQuotaExceededError(BrokerError):
    """Backlog quota exceeded under producer_request_hold: the client retries (holds sends)."""

    code = pb.ProducerBlockedQuotaExceededError


class ProducerBlockedQuotaExceededException(BrokerError):
    """Backlog quota exceeded under producer_exception: the client fails its sends."""

    code = pb.ProducerBlockedQuotaExceededException


class AuthenticationError(BrokerError):
    """No valid credentials: the client gives up on this connection (final)."""

    code = pb.AuthenticationError


class AuthorizationError(BrokerError):
    """Authenticated, but the role may not do this (final)."""

    code = pb.AuthorizationError


class PersistenceError(BrokerError):
    code = pb.PersistenceError


class MetadataError(BrokerError):
    code = pb.MetadataError


def server_error_of(exc: BaseException) -> tuple[int, str]:
    """(ServerError code, message) for any exception that escapes a handler."""
    if isinstance(exc, BrokerError):
        return exc.code, str(exc) or type(exc).__name__
    if isinstance(exc, MetadataSessionLostError):   # between ZooKeeper sessions: the client retries
        return pb.ServiceNotReady, str(exc)
    return pb.UnknownError, f"{type(exc).__name__}: {exc}"
