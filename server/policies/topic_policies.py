"""Topic-level policies: Pulsar's TopicPolicies JSON (its field names, e.g.
"schemaCompatibilityStrategy"), one document per topic in the metadata store.

A partitioned topic's partitions share their parent's document, as Pulsar applies topic
policies to the partitioned topic. An absent field means "use the namespace's, else the
broker's". Pulsar keeps these in a system topic; a metadata document gives the same reads
without one.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from managed_ledger.interfaces import MetadataStore
from server.topics.topic_name import TopicName

from .namespace_policies import read_policies, update_policies

TOPIC_POLICIES_ROOT = "/admin/topic-policies"
TOPIC_SCHEMA_COMPATIBILITY_STRATEGY = "schemaCompatibilityStrategy"


def topic_policies_path(topic: TopicName) -> str:
    parent = topic.partitioned_parent
    return (f"{TOPIC_POLICIES_ROOT}/{parent.domain}/{parent.tenant}/{parent.namespace_local}/"
            f"{quote(parent.local_name, safe='')}")


class TopicPolicies:
    """Read and update the policies document of a topic (fields as NamespacePolicies.update)."""

    def __init__(self, store: MetadataStore) -> None:
        self._store = store

    async def get(self, topic: TopicName) -> dict[str, Any]:
        return await read_policies(self._store, topic_policies_path(topic))

    async def update(self, topic: TopicName, **fields: Any) -> dict[str, Any]:
        return await update_policies(self._store, topic_policies_path(topic), fields)
