"""Topic lookup (LOOKUP, and GET /lookup/v2/topic/...): where a client should go for a topic.

A standalone broker serves every topic itself, so the answer is always Connect to one of its own
advertised listeners: the one the client names, else the internal one. As Pulsar standalone
does, the answer also sets proxy_through_service_url when that listener's host is a loopback
address: an address like 127.0.0.1 means nothing to a client on another machine (or behind a
port mapping), so the client keeps its connection on the service URL it came through and names
the broker in CONNECT.proxy_to_broker_url instead, which a broker ignores. (Brokers of a cluster answer through cluster/cluster_lookup.py.)
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

from server.errors import TopicNotFound
from server.policies.auto_topic_creation import AutoTopicCreation
from server.topics.topic_name import TopicName

from .advertised_listeners import AdvertisedListeners, Listener

class KnownTopics(Protocol):
    """What a lookup asks the broker: may the topic be created here, and does it exist."""

    async def auto_topic_creation(self, name: TopicName) -> AutoTopicCreation: ...

    async def topic_exists(self, name: TopicName) -> bool: ...


@dataclass(frozen=True)
class LookupAnswer:
    broker_url: str | None
    broker_url_tls: str | None
    proxy_through_service_url: bool
    #: cluster mode: ask broker_url again instead of connecting there
    redirect: bool = False
    #: cluster mode: the web service of that broker (None: this one)
    http_url: str | None = None
    #: cluster mode: the redirect tells that broker to take the topic's bundle
    authoritative: bool = False


async def check_topic_may_exist(broker: KnownTopics, name: TopicName) -> None:
    """TopicNotFound (NamespaceNotFound) for a topic that cannot be there: its namespace does
    not exist, or it does not exist and may not be auto-created."""
    rule = await broker.auto_topic_creation(name)
    if not rule.allowed and not await broker.topic_exists(name):
        raise TopicNotFound(f"Topic {name} does not exist")


class Lookup(Protocol):
    """Where a client should go for a topic: TopicLookup (standalone) or ClusterLookup."""

    async def answer(self, name: TopicName, listener_name: str = "",
                     authoritative: bool = False) -> "LookupAnswer": ...


class TopicLookup:
    def __init__(self, broker: KnownTopics, listeners: AdvertisedListeners) -> None:
        self._broker = broker
        self._listeners = listeners
        #: Answers by listener, made once: whether a host is loopback may take a name lookup.
        self._answers = {listener: _answer(listener)
                         for listener in (listeners.internal, *listeners.named.values())}

    async def answer(self, name: TopicName, listener_name: str = "",
                     authoritative: bool = False) -> LookupAnswer:
        """TopicNotFound as check_topic_may_exist; ServiceNotReady for a listener name the
        broker does not have. (authoritative matters in a cluster only.)"""
        await check_topic_may_exist(self._broker, name)
        return self._answers[self._listeners.listener(listener_name)]


def _answer(listener: Listener) -> LookupAnswer:
    """Pulsar decides on the plain URL's host, or the TLS one's when there is no plain URL."""
    url = listener.broker_url or listener.broker_url_tls or ""
    return LookupAnswer(listener.broker_url, listener.broker_url_tls, _is_loopback(urlsplit(url).hostname))


def _is_loopback(host: str | None) -> bool:
    if not host:
        return False
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        return ipaddress.ip_address(socket.getaddrinfo(host, None)[0][4][0]).is_loopback
    except (OSError, ValueError):
        return False
