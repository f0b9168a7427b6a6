"""Bundle ownership: who serves a namespace bundle, recorded as Pulsar records it.

A broker owns a bundle while its ephemeral ``/namespace/<tenant>/<ns>/<range>`` node (holding
NamespaceEphemeralData) exists. Taking a bundle is creating that node first: ZooKeeper lets one
broker win, the others read the winner. The node dies with its broker's session, which is how a
dead broker's bundles become free for the others; a broker whose session expired stops serving
its topics at once, since another broker may already be taking them over (fencing its ledgers).
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any, Awaitable, Callable, Protocol

from bookkeeper.zk_metadata_store import SessionEvent
from managed_ledger.errors import MetadataBadVersionError, MetadataNotFoundError

from server.errors import ServiceNotReady
from server.topics.topic_name import TopicName

from .broker_registry import BrokerAddress, BrokerRegistry
from .bundles import Bundle, NamespaceBundles

log = logging.getLogger(__name__)


class LoadedTopics(Protocol):
    """What releasing a bundle needs from the broker: its loaded topics, and unloading one."""

    def loaded_topic_names(self) -> list[TopicName]: ...

    async def unload_topic(self, name: TopicName) -> bool: ...


class Ownership:
    def __init__(self, store: Any, bundles: NamespaceBundles, registry: BrokerRegistry,
                 topics: LoadedTopics, publish: Callable[[], Awaitable[None]]) -> None:
        """publish: write this broker's load report (which lists the bundles it owns)."""
        self._store = store
        self.bundles = bundles
        self._registry = registry
        self._topics = topics
        self._publish = publish
        self.me = registry.me
        self._owned: dict[str, Bundle] = {}
        self._session_lost = False
        self._chores: set[asyncio.Task] = set()
        self._locks: dict[str, asyncio.Lock] = {}
        store.add_session_listener(self._on_session)

    def owned(self) -> list[Bundle]:
        return list(self._owned.values())

    def owns(self, bundle: Bundle) -> bool:
        return bundle.path in self._owned

    def check_serves(self, name: TopicName) -> None:
        """ServiceNotReady (the client looks the topic up again) unless this broker owns the
        topic's bundle; Pulsar's words."""
        if not self.owns(self.bundles.bundle_of(name)):
            raise ServiceNotReady(f"Namespace bundle for topic ({name}) not served by this instance "
                                  f"{self.me.broker_id}. Please redo the lookup.")

    async def owner_of(self, bundle: Bundle, confirm: bool = False) -> BrokerAddress | None:
        """Who serves the bundle. A bundle of ours answers from memory, unless `confirm` (an
        authoritative lookup, whose asker takes the answer as final): then its node is checked,
        as a broker resumed after a pause longer than its session (a zombie) may answer before
        it hears that the session expired and its bundles went to others."""
        if self.owns(bundle) and (not confirm or await self._still_ours(bundle)):
            return self.me
        async with self._changing(bundle):   # after any take of ours in flight
            return await self._owner(bundle)

    async def _still_ours(self, bundle: Bundle) -> bool:
        if await self._store.ephemeral_owner(bundle.path) == self._store.session_id:
            return True
        log.warning("bundle %s is not ours any more (its node is gone or another session's)", bundle)
        self._owned.pop(bundle.path, None)
        return False

    async def acquire(self, bundle: Bundle) -> BrokerAddress:
        """Take the bundle, or learn who took it first."""
        async with self._changing(bundle):
            while True:
                owner = await self._owner(bundle)
                if owner is not None:
                    return owner
                taken = await self._take(bundle)
                if taken is not None:
                    return taken

    def _changing(self, bundle: Bundle) -> asyncio.Lock:
        """One change (or reading during a change) of a bundle at a time, in this broker: a
        concurrent read must not see our node before we know we own it."""
        return self._locks.setdefault(bundle.path, asyncio.Lock())

    async def _owner(self, bundle: Bundle) -> BrokerAddress | None:
        if self.owns(bundle):
            return self.me
        stored = await self._store.get(bundle.path)
        if stored is None:
            return None
        owner = BrokerAddress.from_json(json.loads(stored[0]))
        if owner != self.me:
            return owner
        # left by an earlier session of ours (restarted within its timeout): as Pulsar's
        # resource locks do with a lock holding their own value, delete it and take it again
        log.info("reclaiming bundle %s from an earlier session of this broker", bundle)
        await self._delete(bundle.path)
        return await self._take(bundle)

    async def _take(self, bundle: Bundle) -> BrokerAddress | None:
        """Create the ownership node; None if another broker created it first."""
        try:
            await self._store.put_ephemeral(bundle.path, json.dumps(self.me.ephemeral_data()).encode())
        except MetadataBadVersionError:
            return None
        self._owned[bundle.path] = bundle
        log.info("took ownership of bundle %s", bundle)
        await self._publish()
        return self.me

    async def release(self, bundle: Bundle) -> bool:
        """Unload the bundle's topics (their clients look them up again), then give it up."""
        async with self._changing(bundle):
            if not self.owns(bundle):
                return False
            for name in self._topics.loaded_topic_names():
                if bundle.holds(name):
                    await self._topics.unload_topic(name)
            self._owned.pop(bundle.path, None)
            await self._delete(bundle.path)
        log.info("released bundle %s", bundle)
        await self._publish()
        return True

    async def split(self, bundle: Bundle, point: int) -> tuple[Bundle, Bundle]:
        """Cut an owned bundle in two at point, keeping both halves (Pulsar's splitAndOwnBundle).

        The halves' ownership nodes are made before the new boundaries are stored, and the
        parent's is deleted after: a broker reading either boundaries finds an owner, so no
        topic of the bundle is ever placed elsewhere while this broker serves it. The topics
        stay loaded, and served, throughout."""
        async with self._changing(bundle):
            if not self.owns(bundle):
                raise ServiceNotReady(f"Bundle {bundle} is not owned by this broker {self.me.broker_id}")
            lower, upper = Bundle(bundle.namespace, bundle.lower, point), Bundle(bundle.namespace, point, bundle.upper)
            made: list[Bundle] = []
            try:
                for half in (lower, upper):
                    await self._store.put_ephemeral(half.path, json.dumps(self.me.ephemeral_data()).encode())
                    made.append(half)
                await self.bundles.split(bundle, point)
            except BaseException:
                for half in made:
                    await self._delete(half.path)
                raise
            del self._owned[bundle.path]   # in the same step as the new boundaries: always served
            self._owned.update({lower.path: lower, upper.path: upper})
            await self._delete(bundle.path)
        log.info("split bundle %s into %s and %s", bundle, lower.range, upper.range)
        await self._publish()
        return lower, upper

    async def _delete(self, path: str) -> None:
        try:
            await self._store.delete(path)
        except MetadataNotFoundError:
            pass

    def _on_session(self, event: SessionEvent) -> None:
        if event is SessionEvent.EXPIRED:
            self._session_lost = True
            lost, self._owned = list(self._owned.values()), {}
            if lost:
                log.warning("ZooKeeper session expired: giving up %d bundles", len(lost))
            self._start(self._unload_all())
        elif event is SessionEvent.RECONNECTED and self._session_lost:
            self._session_lost = False
            self._start(self._rejoin())

    async def _rejoin(self) -> None:
        """Registered again, with the bundles owned now (none, until lookups give some)."""
        await self._registry.register()
        await self._publish()

    def _start(self, chore: Any) -> None:
        task = asyncio.get_running_loop().create_task(chore)
        self._chores.add(task)
        task.add_done_callback(self._chores.discard)

    async def _unload_all(self) -> None:
        """Each topic, whatever happens to the others (closing may fail to persist its last
        state while the session is gone: the new owner recovers from what was stored)."""
        for name in self._topics.loaded_topic_names():
            try:
                await self._topics.unload_topic(name)
            except Exception as exc:  # noqa: BLE001
                log.warning("unloading %s after the session expired: %s", name, exc)
