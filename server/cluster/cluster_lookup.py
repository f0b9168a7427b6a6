"""Topic lookup in a cluster (LOOKUP, HTTP lookup, admin redirects), as Pulsar's
NamespaceService answers it with its centralized load manager:

- the bundle has an owner (this broker, or another): Connect to the owner;
- no owner and the request is authoritative (the leader chose this broker): take it;
- no owner otherwise, on the leader (or on any broker while the leader is not registered): the
  load manager chooses; this broker takes the bundle now, another one gets an authoritative
  Redirect, so it takes the bundle instead of redirecting again;
- no owner otherwise, on another broker: a Redirect (not authoritative) to the leader, which
  decides as above. Every client follows such chains of redirects.

A bundle found unowned may be the parent of a split made elsewhere: the namespace's boundaries
are read again before it is placed.

Never proxy_through_service_url: Pulsar sets it for standalone only, and here the broker URLs
are real addresses the client should connect to.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Protocol

from server.connection.lookup import KnownTopics, LookupAnswer, check_topic_may_exist
from server.errors import ServiceNotReady
from server.topics.topic_name import TopicName

from .broker_registry import BrokerAddress, BrokerRegistry
from .bundles import Bundle
from .ownership import Ownership


@dataclass(frozen=True)
class Placement:
    """Where a topic is served: ``owner``, or (redirect) the broker to ask next, told to take
    the bundle when ``authoritative``."""

    owner: BrokerAddress
    redirect: bool
    is_me: bool
    authoritative: bool = False


class Leader(Protocol):
    is_leader: bool

    @property
    def leader_id(self) -> str | None: ...


class Chooser(Protocol):
    async def choose(self, bundle: str) -> str | None: ...


class ClusterLookup:
    def __init__(self, broker: KnownTopics, ownership: Ownership, registry: BrokerRegistry,
                 leader: Leader, chooser: Chooser) -> None:
        self._broker = broker
        self._ownership = ownership
        self._registry = registry
        self._leader = leader
        self._chooser = chooser
        self._deciding = asyncio.Lock()

    async def check_namespace(self, name: TopicName) -> None:
        """NamespaceNotFound unless the topic's namespace exists (no bundle of a namespace that
        does not exist is ever taken)."""
        await self._broker.auto_topic_creation(name)

    async def place(self, name: TopicName, authoritative: bool = False) -> Placement:
        bundles = self._ownership.bundles
        owner = await self._ownership.owner_of(bundles.bundle_of(name), confirm=authoritative)
        if owner is not None:
            return Placement(owner, redirect=False, is_me=owner is self._ownership.me)
        await bundles.load(name.namespace)
        return await self.place_bundle(bundles.bundle_of(name), authoritative)

    async def place_bundle(self, bundle: Bundle, authoritative: bool = False) -> Placement:
        me = self._ownership.me
        owner = await self._ownership.owner_of(bundle)
        if owner is None:
            async with self._deciding:   # each choice sees the bundles the previous one took
                owner = await self._ownership.owner_of(bundle)
                if owner is None and not authoritative:
                    chosen, decided = await self._choose(bundle)
                    if chosen.broker_id != me.broker_id:
                        return Placement(chosen, redirect=True, is_me=False, authoritative=decided)
                if owner is None:
                    owner = await self._ownership.acquire(bundle)
        return Placement(owner, redirect=False, is_me=owner is me)

    async def _choose(self, bundle: Bundle) -> tuple[BrokerAddress, bool]:
        """(the broker to send the lookup to, whether it was chosen to take the bundle)."""
        me = self._ownership.me
        brokers = {b.address.broker_id: b.address for b in await self._registry.brokers()}
        leader = self._leader.leader_id
        if not self._leader.is_leader and leader in brokers and leader != me.broker_id:
            return brokers[leader], False
        chosen = await self._chooser.choose(str(bundle))
        return brokers.get(chosen or "", me), True

    async def answer(self, name: TopicName, listener_name: str = "",
                     authoritative: bool = False) -> LookupAnswer:
        await check_topic_may_exist(self._broker, name)
        placement = await self.place(name, authoritative)
        urls = placement.owner.listener_urls(listener_name)
        if urls is None:
            raise ServiceNotReady(f"the broker {placement.owner.broker_id} does not have the "
                                  f"{listener_name} listener")
        return LookupAnswer(urls[0], urls[1], proxy_through_service_url=False, redirect=placement.redirect,
                            http_url=placement.owner.http_url, authoritative=placement.authoritative)
