"""What a configuration value may be, beyond its type, and what an unknown key probably meant.

A broker that starts on a typo'd key or a port of 70000 fails later and obscurely; refusing it
at start (naming the key) and warning about unknown keys (naming the nearest known one) is
what users of Pulsar's standalone.conf need when they reuse their files. Namespace policies name
the nearest known field the same way (server/policies/policy_values.py).
"""

from __future__ import annotations

import dataclasses
import difflib
from typing import Iterator

_PORT_KEYS = ("brokerServicePort", "webServicePort")
_CHOICES: dict[str, tuple[str, ...]] = {
    "allowAutoTopicCreationType": ("non-partitioned", "partitioned"),
    "backlogQuotaDefaultRetentionPolicy": (
        "producer_request_hold", "producer_exception", "consumer_backlog_eviction"),
    "defaultNamespaceBundleSplitAlgorithm": ("range_equally_divide", "topic_count_equally_divide"),
    "brokerDeleteInactiveTopicsMode": ("delete_when_no_subscriptions", "delete_when_subscriptions_caught_up"),
    "schemaCompatibilityStrategy": (
        "ALWAYS_INCOMPATIBLE", "ALWAYS_COMPATIBLE", "BACKWARD", "FORWARD", "FULL",
        "BACKWARD_TRANSITIVE", "FORWARD_TRANSITIVE", "FULL_TRANSITIVE"),
}
#: Keys whose value is a comma-separated set of these names (Pulsar drops unknown names silently,
#: which for subscriptionTypesEnabled disables the type meant: refused here instead).
_NAME_SETS: dict[str, tuple[str, ...]] = {
    "subscriptionTypesEnabled": ("Exclusive", "Shared", "Failover", "Key_Shared"),
}
_POSITIVE_KEYS = ("maxMessageSize", "defaultNumPartitions", "keepAliveIntervalSeconds", "dispatcherMaxReadBatchSize",
                  "dispatcherMaxReadSizeBytes", "dispatcherReadFailureBackoffInitialTimeInMs",
                  "dispatcherReadFailureBackoffMaxTimeInMs",
                  "statsUpdateFrequencyInSecs", "managedLedgerMaxEntriesPerLedger",
                  "managedLedgerCursorPositionFlushSeconds",
                  "subscribeRatePeriodPerConsumerInSecond",
                  "loadBalancerReportUpdateMinIntervalMillis", "loadBalancerResourceQuotaUpdateIntervalMinutes",
                  "loadBalancerSplitIntervalMinutes", "loadBalancerSheddingIntervalMinutes",
                  "loadBalancerNamespaceMaximumBundles", "transactionBufferClientOperationTimeoutInMills",
                  "transactionBufferSnapshotMaxTransactionCount", "transactionBufferSnapshotMinTimeInMillis")
_NON_NEGATIVE_KEYS = ("maxActiveTransactionsPerCoordinator",)


def check(key: str, value: object) -> None:
    """Raise ValueError("<key>: ...") when value is of the right type but not allowed."""
    problem = _problem(key, value)
    if problem:
        raise ValueError(f"{key}: {problem}")


def _problem(key: str, value: object) -> str:
    if key in _PORT_KEYS and not (isinstance(value, int) and 0 < value < 65536):
        return f"{value!r} is not a TCP port (1-65535)"
    if key in _CHOICES and value not in _CHOICES[key]:
        return f"{value!r} is not one of {', '.join(_CHOICES[key])}"
    if key in _POSITIVE_KEYS and isinstance(value, (int, float)) and value <= 0:
        return f"{value!r} must be greater than 0"
    if key in _NON_NEGATIVE_KEYS and isinstance(value, (int, float)) and value < 0:
        return f"{value!r} must be 0 (no limit) or more"
    if key in _NAME_SETS and isinstance(value, str):
        unknown = [name for name in split_names(value) if name not in _NAME_SETS[key]]
        if unknown:
            return f"{unknown[0]!r} is not one of {', '.join(_NAME_SETS[key])}"
    return ""


def split_names(value: str) -> tuple[str, ...]:
    """The names of a comma-separated setting, blanks dropped."""
    return tuple(name for name in (part.strip() for part in value.split(",")) if name)


def known_keys(config: object) -> Iterator[str]:
    """Every configuration key of a (nested) configuration dataclass."""
    for spec in dataclasses.fields(config):
        if "key" in spec.metadata:
            yield spec.metadata["key"]
        value = getattr(config, spec.name)
        if dataclasses.is_dataclass(value):
            yield from known_keys(value)


def key_values(config: object) -> Iterator[tuple[str, object]]:
    """(key, value as the configuration file gives it) for every key of a configuration."""
    for spec in dataclasses.fields(config):
        value = getattr(config, spec.name)
        if "key" in spec.metadata:
            scale = spec.metadata.get("scale", 1)
            yield spec.metadata["key"], value if scale == 1 else value / scale
        if dataclasses.is_dataclass(value):
            yield from key_values(value)


def did_you_mean(key: str, known: list[str]) -> str:
    """The hint ' (did you mean X?)' naming the nearest known key, or '' when none is close."""
    nearest = difflib.get_close_matches(key, known, n=1, cutoff=0.75)
    if not nearest:
        lowered = {k.lower(): k for k in known}
        nearest = [lowered[key.lower()]] if key.lower() in lowered else []
    return f" (did you mean {nearest[0]}?)" if nearest else ""


def unknown_key_warning(key: str, known: list[str]) -> str:
    """The warning for a key no field reads, with the nearest known key when one is close."""
    return f"unknown configuration key {key}, ignored{did_you_mean(key, known)}"

