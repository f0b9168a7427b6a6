"""pulsar-admin's flags for `namespaces|topics|topicPolicies set-<policy>` (`set-retention --size 100M
--time 1h`, `set-dispatch-rate -md 100 -dt 1`, `set-delayed-delivery --enable --time 1s` ...),
turned into the REST body with pulsar-admin's units and defaults, so commands copied from Pulsar's
documentation work unchanged. The flags are pulsar-admin 3.3.6's (its --help; the newest 3.x on
Maven Central), keyed by the policy's catalog field; the namespace and topic levels differ for a
few policies (`--max-producers-per-topic` / `--max-producers`, `-ttl` / `-t` ...).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any, Callable

from server.policies import catalog
from server.policies.auto_topic_creation import AUTO_TOPIC_CREATION
from server.policies.fields import (COMPACTION_THRESHOLD, DELETE_MODES, DELETE_WHEN_NO_SUBSCRIPTIONS,
                                    INACTIVE_TOPIC_POLICIES, MESSAGE_TTL)
from server.policies.namespace_policies import (ALLOW_AUTO_UPDATE_SCHEMA, AUTO_SUBSCRIPTION_CREATION,
                                                DEDUPLICATION_ENABLED, SCHEMA_COMPATIBILITY_STRATEGY)
from server.policies.policy_values import SUBSCRIPTION_TYPE_NAMES
from server.policies.retention import RETENTION_POLICIES

from .units import parse_relative_time, parse_size, size_in_mb, time_in_minutes

Flags = list[tuple[tuple[str, ...], dict]]
Body = Callable[[argparse.Namespace], Any]


@dataclass(frozen=True)
class FlagSet:
    """A policy's flags and the REST body they give (None: no flag was given)."""

    flags: Flags
    body: Body


def _either(a: argparse.Namespace, on: str, off: str, what: str, required: bool = True) -> bool | None:
    """pulsar-admin's pair of switches: exactly one of them (or, when not required, neither)."""
    if getattr(a, on) and getattr(a, off):
        raise ValueError(f"give only one of {what}")
    if not getattr(a, on) and not getattr(a, off):
        if required:
            raise ValueError(f"Need to specify either {what}")
        return None
    return bool(getattr(a, on))


def _millis(text: str) -> int:
    """pulsar-admin's TimeUnitToMillisConverter: a relative time (seconds by default) in ms."""
    seconds = parse_relative_time(text)
    return seconds if seconds < 0 else seconds * 1000


def _scalar(*names: str, convert: Callable[[str], Any] = int) -> FlagSet:
    """One value flag (`-p 5`), the policy's whole value."""
    dest = names[-1].lstrip("-").replace("-", "_")
    return FlagSet([(names, {"dest": dest, "type": convert})], lambda a: getattr(a, dest))


def _retention(a: argparse.Namespace) -> Any:
    if a.size is None and a.time is None:
        return None
    if a.size is None or a.time is None:
        raise ValueError("give both --size and --time")
    return {"retentionTimeInMinutes": time_in_minutes(a.time), "retentionSizeInMB": size_in_mb(a.size)}


def _auto_topic_creation(a: argparse.Namespace) -> Any:
    enabled = _either(a, "enable", "disable", "--enable or --disable", required=False)
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
    delete = _either(a, "enable_delete_while_inactive", "disable_delete_while_inactive",
                     "enable-delete-while-inactive or disable-delete-while-inactive")
    return {"deleteWhileInactive": delete, "maxInactiveDurationSeconds": parse_relative_time(a.max_inactive_duration),
            "inactiveTopicDeleteMode": a.delete_mode}


def _delayed_delivery(a: argparse.Namespace) -> Any:
    active = _either(a, "enable", "disable", "--enable or --disable")
    return {"active": active, "tickTime": _millis(a.time), "maxDeliveryDelayInMillis": _millis(a.max_delay)}


def _subscription_types(a: argparse.Namespace) -> Any:
    if a.types is None:
        return None
    types = [name for name in a.types.split(",") if name]
    for name in types:
        if name not in SUBSCRIPTION_TYPE_NAMES:
            raise ValueError(f"Illegal subscription type {name}. Possible values: [{', '.join(SUBSCRIPTION_TYPE_NAMES)}].")
    return types


_SWITCHES = FlagSet([(("-e", "--enable"), {"action": "store_true"}), (("-d", "--disable"), {"action": "store_true"})],
                    lambda a: _either(a, "enable", "disable", "--enable or --disable", required=False))
RETENTION = FlagSet([(("-s", "--size"), {}), (("-t", "--time"), {})], _retention)
PERSISTENCE = FlagSet([
    (("-e", "--bookkeeper-ensemble"), {"type": int, "default": 2}),
    (("-w", "--bookkeeper-write-quorum"), {"type": int, "default": 2}),
    (("-a", "--bookkeeper-ack-quorum"), {"type": int, "default": 2}),
    (("-r", "--ml-mark-delete-max-rate"), {"type": float, "default": 0.0})],
    lambda a: {"bookkeeperEnsemble": a.bookkeeper_ensemble, "bookkeeperWriteQuorum": a.bookkeeper_write_quorum,
               "bookkeeperAckQuorum": a.bookkeeper_ack_quorum,
               "managedLedgerMaxMarkDeleteRate": a.ml_mark_delete_max_rate})
PUBLISH_RATE = FlagSet([
    (("-m", "--msg-publish-rate"), {"type": int, "default": -1}),
    (("-b", "--byte-publish-rate"), {"type": int, "default": -1})],
    lambda a: {"publishThrottlingRateInMsg": a.msg_publish_rate, "publishThrottlingRateInByte": a.byte_publish_rate})
DISPATCH_RATE = FlagSet([
    (("-md", "--msg-dispatch-rate"), {"type": int, "default": -1}),
    (("-bd", "--byte-dispatch-rate"), {"type": int, "default": -1}),
    (("-dt", "--dispatch-rate-period"), {"type": int, "default": 1}),
    (("-rp", "--relative-to-publish-rate"), {"action": "store_true"})],
    lambda a: {"dispatchThrottlingRateInMsg": a.msg_dispatch_rate, "dispatchThrottlingRateInByte": a.byte_dispatch_rate,
               "ratePeriodInSecond": a.dispatch_rate_period, "relativeToPublishRate": a.relative_to_publish_rate})
SUBSCRIBE_RATE = FlagSet([
    (("-sr", "--subscribe-rate"), {"type": int, "default": -1}),
    (("-st", "--subscribe-rate-period"), {"type": int, "default": 30})],
    lambda a: {"subscribeThrottlingRatePerConsumer": a.subscribe_rate, "ratePeriodInSecond": a.subscribe_rate_period})
DELAYED_DELIVERY = FlagSet([
    (("-e", "--enable"), {"action": "store_true"}), (("-d", "--disable"), {"action": "store_true"}),
    (("-t", "--time"), {"default": "1", "help": "tick time (1s, 10s ...; seconds by default)"}),
    (("-md", "--maxDelay"), {"default": "0", "dest": "max_delay", "help": "the longest delay allowed (0: any)"})],
    _delayed_delivery)
INACTIVE_TOPICS = FlagSet([
    (("-e", "--enable-delete-while-inactive"), {"action": "store_true"}),
    (("-d", "--disable-delete-while-inactive"), {"action": "store_true"}),
    (("-t", "--max-inactive-duration"), {}),
    (("-m", "--delete-mode"), {"default": DELETE_WHEN_NO_SUBSCRIPTIONS, "choices": DELETE_MODES})],
    _inactive_topic_policies)
SUBSCRIPTION_TYPES = FlagSet([(("-t", "--types"), {"help": "comma separated: " + ",".join(SUBSCRIPTION_TYPE_NAMES)})],
                             _subscription_types)
SHARED: dict[str, FlagSet] = {
    RETENTION_POLICIES: RETENTION,
    DEDUPLICATION_ENABLED: _SWITCHES,
    catalog.DEDUPLICATION_SNAPSHOT_INTERVAL: _scalar("-i", "--interval"),
    catalog.PERSISTENCE: PERSISTENCE,
    catalog.PUBLISH_RATE: PUBLISH_RATE,
    catalog.DISPATCH_RATE: DISPATCH_RATE,
    catalog.SUBSCRIPTION_DISPATCH_RATE: DISPATCH_RATE,
    catalog.SUBSCRIBE_RATE: SUBSCRIBE_RATE,
    catalog.MAX_CONSUMERS_PER_SUBSCRIPTION: _scalar("-c", "--max-consumers-per-subscription"),
    catalog.SUBSCRIPTION_TYPES: SUBSCRIPTION_TYPES,
    catalog.DELAYED_DELIVERY: DELAYED_DELIVERY,
    INACTIVE_TOPIC_POLICIES: INACTIVE_TOPICS,
    COMPACTION_THRESHOLD: _scalar("-t", "--threshold", convert=parse_size),
    AUTO_SUBSCRIPTION_CREATION: FlagSet(_SWITCHES.flags, lambda a: None if _SWITCHES.body(a) is None
                                        else {"allowAutoSubscriptionCreation": _SWITCHES.body(a)}),
}

#: catalog field -> `namespaces set-...` flags
NAMESPACE_FLAGS: dict[str, FlagSet] = {
    **SHARED,
    MESSAGE_TTL: _scalar("-ttl", "--ttl", "--messageTTL", convert=parse_relative_time),
    AUTO_TOPIC_CREATION: FlagSet(_SWITCHES.flags + [
        (("-t", "--type"), {"default": "non-partitioned", "choices": ("partitioned", "non-partitioned")}),
        (("-n", "--num-partitions"), {"type": int, "default": 1})], _auto_topic_creation),
    catalog.MAX_PRODUCERS: _scalar("-p", "--max-producers-per-topic"),
    catalog.MAX_CONSUMERS: _scalar("-c", "--max-consumers-per-topic"),
    catalog.MAX_UNACKED_PER_CONSUMER: _scalar("-c", "--max-unacked-messages-per-topic"),
    catalog.MAX_UNACKED_PER_SUBSCRIPTION: _scalar("-c", "--max-unacked-messages-per-subscription"),
    catalog.MAX_SUBSCRIPTIONS: _scalar("-m", "--max-subscriptions-per-topic"),
    catalog.SUBSCRIPTION_EXPIRATION: _scalar("-t", "--time"),
    SCHEMA_COMPATIBILITY_STRATEGY: _scalar("-c", "--compatibility", convert=str),
    ALLOW_AUTO_UPDATE_SCHEMA: _SWITCHES,
}

#: catalog field -> `topics|topicPolicies set-...` flags (`topics set-max-subscriptions` takes -m,
#: `topicPolicies set-max-subscriptions-per-topic` -s: both are taken)
TOPIC_FLAGS: dict[str, FlagSet] = {
    **SHARED,
    MESSAGE_TTL: _scalar("-t", "--ttl", convert=parse_relative_time),
    catalog.MAX_PRODUCERS: _scalar("-p", "--max-producers"),
    catalog.MAX_CONSUMERS: _scalar("-c", "--max-consumers"),
    catalog.MAX_UNACKED_PER_CONSUMER: _scalar("-m", "--maxNum"),
    catalog.MAX_UNACKED_PER_SUBSCRIPTION: _scalar("-m", "--maxNum"),
    catalog.MAX_SUBSCRIPTIONS: _scalar("-m", "-s", "--max-subscriptions-per-topic"),
    catalog.MAX_MESSAGE_SIZE: _scalar("-m", "--max-message-size"),
    SCHEMA_COMPATIBILITY_STRATEGY: _scalar("-s", "--strategy", convert=str),
}
