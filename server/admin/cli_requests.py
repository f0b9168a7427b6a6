"""What a `pulsard admin` command turns into: REST requests, and how an answer is shown.

A command table maps each group's commands (pulsar-admin's names) to a help text, argparse
arguments and a builder of the request(s); cli.py parses, sends and prints. Groups live in
modules of their own (cli.py: tenants, namespaces, topics, schemas; cli_brokers.py: brokers,
clusters) and share these types.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any, Callable


@dataclass
class Request:
    method: str
    path: str
    body: Any = None
    query: dict[str, str] | None = None
    raw: bool = False  # answer is a message payload, not JSON
    optional: bool = False  # a 404 ends a sequence of requests quietly (peeking past the backlog)
    notice: str | None = None  # said on stderr before the request (an option that is ignored)
    show: Callable[[Any], str] | None = None  # the JSON answer as pulsar-admin prints it, if not the default


class AdminCallError(Exception):
    pass


Build = Callable[[argparse.Namespace], "Request | list[Request]"]
Arguments = list[tuple[tuple[str, ...], dict]]
#: command -> (help, [(flags, kwargs)], request builder)
CommandTable = dict[str, tuple[str, Arguments, Build]]
