"""Commands this broker does not serve: each gets an answer the client understands, never silence.

A client left waiting fails only at its operation timeout (30 s by default), with a message
that says nothing. Transaction requests are refused in their own response forms (the ones a
client's transaction code reads), with NotAllowed and the words of a Pulsar broker whose
transaction coordinator is off, "Transactions are not enabled." (that broker sends them in an
ERROR); with transactionCoordinatorEnabled=true, transactions.py serves the coordinator's
requests and txn_buffer.py END_TXN_ON_PARTITION instead (both refuse through here while it is
false). Everything else (topic-list watchers, and commands only a broker sends) gets ERROR
NotAllowed carrying the command's request id, or -1 when it has none. The connection stays
open; each kind is logged once per interval, however often a client repeats it.
"""

from __future__ import annotations

import logging
from typing import Callable

from log_limits.repeats import RepeatLimitedLog
from protocol import commands
from protocol import pulsar_api_pb2 as pb

Cmd = pb.BaseCommand
log = logging.getLogger(__name__)
_repeats = RepeatLimitedLog(log)

TRANSACTIONS_DISABLED = "Transactions are not enabled."


def _transactions_disabled(command: Cmd) -> Cmd:
    return commands.txn_error(command, pb.NotAllowedError, TRANSACTIONS_DISABLED)


def _not_allowed(command: Cmd) -> Cmd:
    return commands.error(commands.request_id_of(command), pb.NotAllowedError,
                          f"{Cmd.Type.Name(command.type)} is not supported by this broker")


#: How each unserved kind is answered when it is not answered with _not_allowed.
_REFUSALS: dict[int, Callable[[Cmd], Cmd]] = {kind: _transactions_disabled for kind in commands.TXN_REQUESTS}


def refusal(command: Cmd, remote: str) -> Cmd:
    """The answer to a command no handler serves (logged once per kind per interval)."""
    kind = Cmd.Type.Name(command.type)
    _repeats.warning(kind, "%s from %s is not supported: answered NotAllowed", kind, remote)
    return _REFUSALS.get(command.type, _not_allowed)(command)
