"""Topic lookup in a cluster (LOOKUP, HTTP lookup, admin redirects), as Pulsar's
NamespaceService answers it:

- the bundle has an owner (this broker, or another): Connect to the owner;
- no owner and the request is authoritative (an earlier broker chose this one): take it;
- no owner otherwise: the least loaded broker; this one takes the bundle now, another one gets
  an authoritative Redirect, so it takes the bundle instead of redirecting again.

Never proxy_through_service_url: Pulsar sets it for standalone only, and here the broker URLs
are real addresses the client should connect to.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from server.connection.lookup import KnownTopics, LookupAnswer, check_topic_may_exist
from server.errors import ServiceNotReady
from server.topics.topic_name import TopicName

from .broker_registry import BrokerAddress, BrokerRegistry
from .load_spread import LoadSpread
from .ownership import Ownership


@dataclass(frozen=True)
class Placement:
    """Where a topic is served: ``owner``, or (redirect) the broker chosen to take it."""

    owner: BrokerAddress
    redirect: bool
    is_me: bool


class ClusterLookup:
    def __init__(self, broker: KnownTopics, ownership: Ownership, registry: BrokerRegistry) -> None:
        self._broker = broker
        self._ownership = ownership
        self._spread = LoadSpread(registry)
        self._deciding = asyncio.Lock()

    async def check_namespace(self, name: TopicName) -> None:
        """NamespaceNotFound unless the topic's namespace exists (no bundle of a namespace that
        does not exist is ever taken)."""
        await self._broker.auto_topic_creation(name)

    async def place(self, name: TopicName, authoritative: bool = False) -> Placement:
        bundle = self._ownership.bundles.bundle_of(name)
        owner = await self._ownership.owner_of(bundle)
        if owner is None:
            async with self._deciding:   # each choice sees the bundles the previous one took
                owner = await self._ownership.owner_of(bundle)
                if owner is None and not authoritative:
                    chosen = await self._spread.choose(bundle)
                    if chosen.broker_id != self._ownership.me.broker_id:
                        return Placement(chosen, redirect=True, is_me=False)
                if owner is None:
                    owner = await self._ownership.acquire(bundle)
        return Placement(owner, redirect=False, is_me=owner is self._ownership.me)

    async def answer(self, name: TopicName, listener_name: str = "",
                     authoritative: bool = False) -> LookupAnswer:
        await check_topic_may_exist(self._broker, name)
        placement = await self.place(name, authoritative)
        urls = placement.owner.listener_urls(listener_name)
        if urls is None:
            raise ServiceNotReady(f"the broker {placement.owner.broker_id} does not have the "
                                  f"{listener_name} listener")
        return LookupAnswer(urls[0], urls[1], proxy_through_service_url=False,
                            redirect=placement.redirect, http_url=placement.owner.http_url)
