"""Namespace policies: Pulsar's Policies JSON, kept in the metadata store where Pulsar keeps it.

The document lives at /admin/policies/{tenant}/{namespace} with the field names of Pulsar's
Policies class ("deduplicationEnabled", "retention_policies", ...), so the admin REST API
and any tool reading the store see the same thing. A field that is absent means "use the
broker's default". Fields this broker does not know are kept untouched (a document written by
Pulsar's tools carries them); what may be written is checked in policy_values.py.
"""

from __future__ import annotations

import json
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
    """Read and update the Policies document of a namespace."""

    def __init__(self, store: MetadataStore) -> None:
        self._store = store
        self._listeners: list[Callable[[str], None]] = []
        #: namespace -> (stored document, decoded): see shared()
        self._decoded: dict[str, tuple[bytes, dict[str, Any]]] = {}

    def add_listener(self, listener: Callable[[str], None]) -> None:
        """listener(namespace) after each change made through this broker."""
        self._listeners.append(listener)

    async def get(self, namespace: str) -> dict[str, Any]:
        return await self.get_if_exists(namespace) or {}

    async def stamp(self, namespace: str) -> bytes | None:
        """The stored document as it is now, to tell whether it changed."""
        stored = await self._store.get(policies_path(namespace))
        return stored[0] if stored is not None else None

    async def get_if_exists(self, namespace: str) -> dict[str, Any] | None:
        """None when the namespace does not exist: a namespace is there while its Policies
        document is (the tenant's document is its parent)."""
        stored = await self._store.get(policies_path(namespace))
        return json.loads(stored[0]) if stored is not None else None

    async def shared(self, namespace: str) -> dict[str, Any] | None:
        """As get_if_exists, decoded once per stored document and shared: the loaded topics of
        a namespace (thousands) hold it in their policies, so callers must not change it."""
        stored = await self._store.get(policies_path(namespace))
        if stored is None:
            self._decoded.pop(namespace, None)
            return None
        decoded = self._decoded.get(namespace)
        if decoded is None or decoded[0] != stored[0]:
            decoded = self._decoded[namespace] = (stored[0], json.loads(stored[0]))
        return decoded[1]

    async def update(self, namespace: str, **fields: Any) -> dict[str, Any]:
        """Set (or, with None, clear) fields of an existing namespace (one is made through the
        admin API, with its tenant)."""
        try:
            updated = await update_policies(self._store, policies_path(namespace), fields, create=False)
        except MetadataNotFoundError:
            raise NamespaceNotFound(f"Namespace {namespace} does not exist") from None
        for listener in self._listeners:
            listener(namespace)
        return updated



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
