"""Namespace policies: Pulsar's Policies JSON, kept in the metadata store where Pulsar keeps it.

The document lives at /admin/policies/{tenant}/{namespace} with the field names of Pulsar's
Policies class ("deduplicationEnabled", "retention_policies", ...), so the admin REST API
and any tool reading the store see the same thing. A field that is absent means "use the
broker's default". Fields this broker does not know are kept untouched (a document written by
Pulsar's tools carries them); what may be written is checked in policy_values.py.
"""

from __future__ import annotations

import asyncio
import json
from functools import partial
from typing import Any, Callable

from managed_ledger.errors import MetadataNotFoundError
from managed_ledger.interfaces import MetadataStore
from server.errors import NamespaceNotFound, NotAllowed
from server.topics.topic_name import TopicName

POLICIES_ROOT = "/admin/policies"
DEDUPLICATION_ENABLED = "deduplicationEnabled"
AUTO_SUBSCRIPTION_CREATION = "autoSubscriptionCreationOverride"
SCHEMA_COMPATIBILITY_STRATEGY = "schema_compatibility_strategy"
ALLOW_AUTO_UPDATE_SCHEMA = "is_allow_auto_update_schema"


def policies_path(namespace: str) -> str:
    """Where a namespace's Policies are: tenant/namespace, or a V1 tenant/cluster/namespace
    (this broker's heartbeat namespace, which has none) where Pulsar keeps those."""
    parts = namespace.split("/")
    if len(parts) not in (2, 3) or not all(map(TopicName.is_named_entity, parts)):
        raise NotAllowed(f"Invalid namespace name {namespace!r}: expected tenant/namespace")
    return f"{POLICIES_ROOT}/{namespace}"


class NamespacePolicies:
    """Read and update the Policies document of a namespace.

    Loading a topic reads its namespace's Policies several times (existence, auto-creation,
    authorization, the policies in force), so the decoded documents of existing namespaces are
    kept, as Pulsar keeps them in its metadata cache. A change made through this object drops
    its namespace's document at once; one made elsewhere (another broker of a cluster, the
    `pulsard namespace-policies` tool beside a running broker) is found by `reload`, which
    the namespace policies watch calls every second.
    """

    def __init__(self, store: MetadataStore) -> None:
        self._store = store
        self._listeners: list[Callable[[str], None]] = []
        #: namespace -> (stored document, decoded): shared by every reader, see shared()
        self._cache: dict[str, tuple[bytes, dict[str, Any]]] = {}
        self._writes = 0   # a read that raced a write must not keep what it read
        #: namespace -> (writes when it began, the read of shared() in flight): loads arriving
        #: together share one read, unless a write came between
        self._reading: dict[str, tuple[int, asyncio.Future[dict[str, Any] | None]]] = {}

    def add_listener(self, listener: Callable[[str], None]) -> None:
        """listener(namespace) after each change made through this broker."""
        self._listeners.append(listener)

    async def get(self, namespace: str) -> dict[str, Any]:
        return await self.get_if_exists(namespace) or {}

    async def get_if_exists(self, namespace: str) -> dict[str, Any] | None:
        """A copy the caller may change; None when the namespace does not exist: a namespace is
        there while its Policies document is (the tenant's document is its parent)."""
        stored = await self._store.get(policies_path(namespace))
        return json.loads(stored[0]) if stored is not None else None

    async def shared(self, namespace: str) -> dict[str, Any] | None:
        """As get_if_exists, but the document every reader shares: the loaded topics of a
        namespace (thousands) hold it in their policies, so callers must not change it."""
        cached = self._cache.get(namespace)
        if cached is not None:
            return cached[1]
        reading = self._reading.get(namespace)
        if reading is None or reading[0] != self._writes:
            read = asyncio.ensure_future(self._read_shared(namespace))
            read.add_done_callback(partial(self._read_ended, namespace))
            reading = self._reading[namespace] = (self._writes, read)
        return await asyncio.shield(reading[1])   # a caller giving up leaves the read to the others

    def _read_ended(self, namespace: str, read: asyncio.Future[dict[str, Any] | None]) -> None:
        if self._reading.get(namespace, (0, None))[1] is read:
            del self._reading[namespace]
        if not read.cancelled():
            read.exception()   # retrieved: every caller has it, or none is left to

    async def _read_shared(self, namespace: str) -> dict[str, Any] | None:
        path, writes = policies_path(namespace), self._writes
        stored = await self._store.get(path)
        if stored is None:
            return None
        decoded = json.loads(stored[0])
        if writes == self._writes:
            self._cache[namespace] = (stored[0], decoded)
        return decoded

    def cached(self) -> set[str]:
        return set(self._cache)

    async def reload(self, namespace: str) -> bool:
        """Read the stored document again; True when it is not the one kept (or none was, and
        there is one now; a namespace without a document, as this broker's heartbeat one, stays
        unchanged)."""
        stored = await self._store.get(policies_path(namespace))
        if stored is None:
            return self._cache.pop(namespace, None) is not None
        cached = self._cache.get(namespace)
        if cached is not None and cached[0] == stored[0]:
            return False
        self._cache[namespace] = (stored[0], json.loads(stored[0]))
        return True

    async def update(self, namespace: str, **fields: Any) -> dict[str, Any]:
        """Set (or, with None, clear) fields of an existing namespace (one is made through the
        admin API, with its tenant)."""
        self._forget(namespace)
        try:
            updated = await update_policies(self._store, policies_path(namespace), fields, create=False)
        except MetadataNotFoundError:
            raise NamespaceNotFound(f"Namespace {namespace} does not exist") from None
        finally:
            self._forget(namespace)
        for listener in self._listeners:
            listener(namespace)
        return updated

    async def delete(self, namespace: str) -> None:
        self._forget(namespace)
        try:
            await self._store.delete(policies_path(namespace))
        finally:
            self._forget(namespace)

    def _forget(self, namespace: str) -> None:
        self._writes += 1
        self._cache.pop(namespace, None)


def auto_subscription_creation_allowed(view: dict[str, Any], broker_default: bool) -> bool:
    """The autoSubscriptionCreationOverride in force when there is one, else the broker's."""
    override = view.get(AUTO_SUBSCRIPTION_CREATION)
    if isinstance(override, dict) and isinstance(override.get("allowAutoSubscriptionCreation"), bool):
        return override["allowAutoSubscriptionCreation"]
    return broker_default


async def update_policies(store: MetadataStore, path: str, fields: dict[str, Any],
                          create: bool = True) -> dict[str, Any]:
    """Set (or, with None, clear) fields of a policies document, made here unless create is
    False (MetadataNotFoundError then); a concurrent writer makes this fail
    (MetadataBadVersionError) rather than lose its change."""
    stored = await store.get(path)
    if stored is None and not create:
        raise MetadataNotFoundError(path)
    policies = json.loads(stored[0]) if stored is not None else {}
    for name, value in fields.items():
        if value is None:
            policies.pop(name, None)
        else:
            policies[name] = value
    await store.put(path, json.dumps(policies, sort_keys=True).encode(), -1 if stored is None else stored[1])
    return policies
