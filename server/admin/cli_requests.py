"""What a `pulsard admin` command turns into: REST requests, and how an answer is shown.

A command table maps each group's commands (pulsar-admin's names) to a help text, argparse
arguments and a builder of the request(s); cli.py parses, sends and prints. Groups live in
modules of their own (cli.py: tenants, namespaces, topics, schemas; cli_brokers.py: brokers,
clusters; cli_policies.py: the policies of namespaces and topics) and share these types and paths.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any, Callable
from urllib.parse import quote

from server.topics.topic_name import TopicName


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


def topic_path(name: str) -> str:
    topic = TopicName.parse(name)
    return f"/admin/v2/{topic.domain}/{topic.tenant}/{topic.namespace_local}/{quote(topic.local_name, safe='')}"


def namespace_path(name: str) -> str:
    tenant, sep, local = name.partition("/")
    if not sep or not tenant or not local or "/" in local:
        raise AdminCallError(f"expected tenant/namespace, got {name!r}")
    return f"/admin/v2/namespaces/{tenant}/{local}"


Build = Callable[[argparse.Namespace], "Request | list[Request]"]
Arguments = list[tuple[tuple[str, ...], dict]]
#: command -> (help, [(flags, kwargs)], request builder)
CommandTable = dict[str, tuple[str, Arguments, Build]]
