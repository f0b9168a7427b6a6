"""Admin REST errors as Pulsar answers them: a status code and a JSON body {"reason": ...}.

Handlers raise RestError (or a broker error, mapped here); `rest_handler` turns every failure
into that shape, so a bad request never escapes as an HTML page or a dropped connection.
"""

from __future__ import annotations

import functools
import json
import logging
from typing import Any, Awaitable, Callable

from managed_ledger.errors import MetadataBadVersionError, MetadataSessionLostError
from server import web
from server.errors import (BrokerError, ConsumerBusy, IncompatibleSchema, InvalidTopicName, NotAllowed,
                           SubscriptionNotFound, TopicNotFound)
from server.policies.policy_values import InvalidPolicy, PolicyOutOfRange

log = logging.getLogger(__name__)

BAD_REQUEST, NOT_FOUND, METHOD_NOT_ALLOWED, NOT_ACCEPTABLE = 400, 404, 405, 406
CONFLICT, PRECONDITION_FAILED, SERVICE_UNAVAILABLE = 409, 412, 503

_BROKER_STATUS: list[tuple[type[BaseException], int]] = [
    (InvalidTopicName, PRECONDITION_FAILED),
    (TopicNotFound, NOT_FOUND),
    (SubscriptionNotFound, NOT_FOUND),
    (ConsumerBusy, PRECONDITION_FAILED),
    (IncompatibleSchema, CONFLICT),
    (NotAllowed, PRECONDITION_FAILED),
    (MetadataBadVersionError, CONFLICT),
    (MetadataSessionLostError, SERVICE_UNAVAILABLE),   # between ZooKeeper sessions: retry
    (PolicyOutOfRange, PRECONDITION_FAILED),
    (InvalidPolicy, BAD_REQUEST),
]

Handler = Callable[[web.Request], Awaitable[web.Response]]


class RestError(Exception):
    """A refused admin request: `status` and the reason Pulsar gives."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def error_response(status: int, reason: str) -> web.Response:
    return web.json_response({"reason": reason}, status=status)


def status_of(exc: BaseException) -> int:
    return next((code for kind, code in _BROKER_STATUS if isinstance(exc, kind)), 500)


def rest_handler(handler: Handler) -> Handler:
    """Every failure of a handler becomes {"reason": ...} with Pulsar's status code."""

    @functools.wraps(handler)
    async def wrapped(request: web.Request) -> web.Response:
        try:
            return await handler(request)
        except RestError as exc:
            return error_response(exc.status, exc.reason)
        except web.HTTPException:
            raise
        except Exception as exc:  # noqa: BLE001 - every failure becomes a JSON reason
            status = status_of(exc)
            if status == 500 and not isinstance(exc, BrokerError):
                log.exception("admin request %s %s failed", request.method, request.path)
            return error_response(status, str(exc) or type(exc).__name__)

    return wrapped


async def read_json(request: web.Request, default: Any = None) -> Any:
    """The request body as JSON; an empty body is `default`, a malformed one a 400."""
    raw = await request.read()
    if not raw.strip():
        return default
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as exc:   # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise RestError(BAD_REQUEST, f"Malformed JSON body: {str(exc)[:200]}") from None


def require(condition: bool, status: int, reason: str) -> None:
    if not condition:
        raise RestError(status, reason)


def no_content() -> web.Response:
    return web.Response(status=204)


def json_or_no_content(value: Any) -> web.Response:
    """JAX-RS answers a null result with 204 and no body; the admin clients read that as null."""
    return no_content() if value is None else web.json_response(value)


def json_or_empty(value: Any) -> web.Response:
    """Pulsar's asynchronous getters resume a null result as 200 with an empty body."""
    return web.Response(status=200) if value is None else web.json_response(value)


def query_flag(request: web.Request, name: str) -> bool:
    return request.query.get(name, "false").lower() == "true"


async def json_errors(request: web.Request, handler: Handler) -> web.Response:
    """Unknown paths (404) and wrong methods (405) answer in the same {"reason"} shape."""
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        response = error_response(exc.status, exc.reason)
        if exc.status == METHOD_NOT_ALLOWED and "Allow" in exc.headers:
            response.headers["Allow"] = exc.headers["Allow"]
        return response
