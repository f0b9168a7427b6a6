"""Topic-level policies: Pulsar's TopicPolicies JSON (its field names, e.g.
"schemaCompatibilityStrategy"), one document per topic in the metadata store.

A partitioned topic's partitions share their parent's document, as Pulsar applies topic
policies to the partitioned topic. An absent field means "use the namespace's, else the
broker's". Pulsar keeps these in a system topic; a metadata document gives the same reads
without one.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from managed_ledger.interfaces import MetadataStore

from .topic_name import TopicName

TOPIC_POLICIES_ROOT = "/admin/topic-policies"
TOPIC_SCHEMA_COMPATIBILITY_STRATEGY = "schemaCompatibilityStrategy"


def topic_policies_path(topic: TopicName) -> str:
    parent = topic.partitioned_parent
    return (f"{TOPIC_POLICIES_ROOT}/{parent.domain}/{parent.tenant}/{parent.namespace_local}/"
            f"{quote(parent.local_name, safe='')}")


class TopicPolicies:
    """Read and update the policies document of a topic."""

    def __init__(self, store: MetadataStore) -> None:
        self._store = store

    async def get(self, topic: TopicName) -> dict[str, Any]:
        stored = await self._store.get(topic_policies_path(topic))
        return json.loads(stored[0]) if stored is not None else {}

    async def update(self, topic: TopicName, **fields: Any) -> dict[str, Any]:
        """Set (or, with None, clear) fields; a concurrent writer makes this fail
        (MetadataBadVersionError) rather than lose its change."""
        path = topic_policies_path(topic)
        stored = await self._store.get(path)
        policies = json.loads(stored[0]) if stored is not None else {}
        for name, value in fields.items():
            if value is None:
                policies.pop(name, None)
            else:
                policies[name] = value
        await self._store.put(path, json.dumps(policies, sort_keys=True).encode(),
                              -1 if stored is None else stored[1])
        return policies
