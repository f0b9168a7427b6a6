"""pulsar-admin's flags for `namespaces set-<policy>` (`set-retention --size 100M --time 1h`,
`set-message-ttl --ttl 1h`, `set-deduplication --enable` ...), turned into the REST body, so
commands copied from Pulsar's documentation work unchanged. A JSON value given positionally
is still accepted for every policy."""

from __future__ import annotations

import argparse
from typing import Any, Callable

from .units import parse_relative_time, size_in_mb, time_in_minutes

Flags = list[tuple[tuple[str, ...], dict]]
_SWITCHES: Flags = [(("-e", "--enable"), {"action": "store_true"}), (("-d", "--disable"), {"action": "store_true"})]


def _enabled(a: argparse.Namespace) -> bool | None:
    if a.enable and a.disable:
        raise ValueError("give one of --enable and --disable")
    return True if a.enable else False if a.disable else None


def _retention(a: argparse.Namespace) -> Any:
    if a.size is None and a.time is None:
        return None
    if a.size is None or a.time is None:
        raise ValueError("give both --size and --time")
    return {"retentionTimeInMinutes": time_in_minutes(a.time), "retentionSizeInMB": size_in_mb(a.size)}


def _ttl(a: argparse.Namespace) -> Any:
    return None if a.ttl is None else parse_relative_time(a.ttl)


def _auto_topic_creation(a: argparse.Namespace) -> Any:
    enabled = _enabled(a)
    if enabled is None:
        return None
    body: dict[str, Any] = {"allowAutoTopicCreation": enabled}
    if enabled:
        body["topicType"] = a.type
        if a.type == "partitioned":
            body["defaultNumPartitions"] = a.num_partitions
    return body


def _inactive_topic_policies(a: argparse.Namespace) -> Any:
    if a.max_inactive_duration is None:
        return None
    return {"deleteWhileInactive": a.enable_delete_while_inactive,
            "maxInactiveDurationSeconds": parse_relative_time(a.max_inactive_duration),
            "inactiveTopicDeleteMode": a.delete_mode}


def _field(name: str) -> Callable[[argparse.Namespace], Any]:
    return lambda a: getattr(a, name)


def _switch(a: argparse.Namespace) -> Any:
    return _enabled(a)


#: policy path -> (pulsar-admin's flags, the REST body they give, None when none was given)
POLICY_FLAGS: dict[str, tuple[Flags, Callable[[argparse.Namespace], Any]]] = {
    "retention": ([(("-s", "--size"), {}), (("-t", "--time"), {})], _retention),
    "messageTTL": ([(("-ttl", "--ttl", "--messageTTL"), {"dest": "ttl"})], _ttl),
    "deduplication": (_SWITCHES, _switch),
    "autoSubscriptionCreation": (
        _SWITCHES, lambda a: None if _enabled(a) is None else {"allowAutoSubscriptionCreation": _enabled(a)}),
    "autoTopicCreation": (_SWITCHES + [
        (("-t", "--type"), {"default": "non-partitioned", "choices": ("partitioned", "non-partitioned")}),
        (("-n", "--num-partitions"), {"type": int, "default": 1})], _auto_topic_creation),
    "maxProducersPerTopic": ([(("-p", "--max-producers-per-topic"), {"type": int})], _field("max_producers_per_topic")),
    "maxConsumersPerTopic": ([(("-c", "--max-consumers-per-topic"), {"type": int})], _field("max_consumers_per_topic")),
    "schemaCompatibilityStrategy": ([(("-c", "--compatibility"), {})], _field("compatibility")),
    "isAllowAutoUpdateSchema": (_SWITCHES, _switch),
    "inactiveTopicPolicies": ([
        (("-e", "--enable-delete-while-inactive"), {"action": "store_true"}),
        (("-t", "--max-inactive-duration"), {}),
        (("-m", "--delete-mode"), {"default": "delete_when_no_subscriptions",
                                   "choices": ("delete_when_no_subscriptions", "delete_when_subscriptions_caught_up")})],
        _inactive_topic_policies),
}
