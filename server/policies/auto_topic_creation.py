"""Whether a topic that does not exist yet is created on first use, and how.

The broker's keys (allowAutoTopicCreation, allowAutoTopicCreationType, defaultNumPartitions)
decide, unless the namespace has a valid autoTopicCreationOverride policy
({"allowAutoTopicCreation", "topicType", "defaultNumPartitions"}), as in Pulsar's BrokerService.
An invalid override (written around the admin API's checks) is ignored, as Pulsar ignores it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from server.config import BrokerConfig

AUTO_TOPIC_CREATION = "autoTopicCreationOverride"
PARTITIONED, NON_PARTITIONED = "partitioned", "non-partitioned"


@dataclass(frozen=True)
class AutoTopicCreation:
    allowed: bool
    #: Partitions of an auto-created topic; 0 creates a plain (non-partitioned) topic.
    partitions: int


def override_error(override: Any) -> str | None:
    """Why an autoTopicCreationOverride is not valid (Pulsar's rules), or None when it is."""
    if not isinstance(override, dict) or not isinstance(override.get("allowAutoTopicCreation"), bool):
        return "[allowAutoTopicCreation] must be true or false"
    if not override["allowAutoTopicCreation"]:
        return None
    kind, partitions = override.get("topicType"), override.get("defaultNumPartitions")
    if kind == PARTITIONED:
        if partitions is None:
            return "[defaultNumPartitions] cannot be null when the type is partitioned."
        if isinstance(partitions, bool) or not isinstance(partitions, int) or partitions <= 0:
            return "[defaultNumPartitions] cannot be less than 1 for partition type."
        return None
    if kind == NON_PARTITIONED:
        return None if partitions is None else \
            "[defaultNumPartitions] is not allowed to be set when the type is non-partition."
    return f"Unknown topic type [{kind}]"


def auto_topic_creation(config: BrokerConfig, policies: dict[str, Any]) -> AutoTopicCreation:
    """The rule for a namespace with these Policies."""
    override = policies.get(AUTO_TOPIC_CREATION)
    if override is not None and override_error(override) is None:
        if not override["allowAutoTopicCreation"]:
            return AutoTopicCreation(False, 0)
        return AutoTopicCreation(True, override.get("defaultNumPartitions") or 0)
    partitioned = config.allow_auto_topic_creation_type == PARTITIONED
    return AutoTopicCreation(config.allow_auto_topic_creation,
                             max(config.default_num_partitions, 0) if partitioned else 0)
