"""GET /metrics: Prometheus text with Pulsar's metric names and labels (cluster, namespace,
topic; subscription for per-subscription backlog), for persistent and non-persistent topics
(these store nothing: their storage metrics are 0, as in Pulsar)."""

from __future__ import annotations

from typing import Any, Callable, Iterable, Union

from managed_ledger.interfaces import ManagedLedger
from managed_ledger.latency import WRITE_LATENCY_BOUNDS_MS
from server.config import BrokerConfig
from server.topics.non_persistent_topic import NonPersistentTopic
from server.topics.topic import Topic

AnyTopic = Union[Topic, NonPersistentTopic]
TopicValue = Callable[[AnyTopic, float], float]


def _stored(value: Callable[[ManagedLedger], float]) -> TopicValue:
    """A storage metric: read from the topic's managed ledger; 0 for a non-persistent topic."""
    return lambda t, w: value(t.ledger) if isinstance(t, Topic) else 0

#: (name, type, help, value of a topic given the rate window)
_TOPIC_METRICS: list[tuple[str, str, str, TopicValue]] = [
    ("pulsar_in_messages_total", "counter", "Messages published to the topic", lambda t, w: t.stats.messages_in),
    ("pulsar_in_bytes_total", "counter", "Bytes published to the topic", lambda t, w: t.stats.bytes_in),
    ("pulsar_out_messages_total", "counter", "Messages dispatched from the topic", lambda t, w: t.stats.messages_out),
    ("pulsar_out_bytes_total", "counter", "Bytes dispatched from the topic", lambda t, w: t.stats.bytes_out),
    ("pulsar_rate_in", "gauge", "Messages published per second", lambda t, w: t.stats.rates(w).msg_rate_in),
    ("pulsar_rate_out", "gauge", "Messages dispatched per second", lambda t, w: t.stats.rates(w).msg_rate_out),
    ("pulsar_throughput_in", "gauge", "Bytes published per second", lambda t, w: t.stats.rates(w).msg_throughput_in),
    ("pulsar_throughput_out", "gauge", "Bytes dispatched per second",
     lambda t, w: t.stats.rates(w).msg_throughput_out),
    ("pulsar_producers_count", "gauge", "Connected producers", lambda t, w: len(t.producers)),
    ("pulsar_subscriptions_count", "gauge", "Subscriptions", lambda t, w: len(t.subscriptions)),
    ("pulsar_consumers_count", "gauge", "Connected consumers",
     lambda t, w: sum(len(s.consumers) for s in t.subscriptions.values())),
    ("pulsar_msg_backlog", "gauge", "Entries not yet acknowledged, summed over subscriptions",
     lambda t, w: sum(s.backlog() for s in t.subscriptions.values())),
    ("pulsard_unreadable_entries_skipped_total", "counter", "Stored entries whose metadata does not parse, skipped",
     lambda t, w: t.stats.unreadable_entries),
    ("pulsard_lost_entries_found_total", "counter",
     "Entries a subscription or reader found with no copy left or their ledger gone, once each time it is held there",
     _stored(lambda ledger: ledger.lost_entries.found)),
    ("pulsard_lost_entries_skipped_total", "counter", "Lost entries acknowledged unread (autoSkipNonRecoverableData)",
     _stored(lambda ledger: ledger.lost_entries.skipped)),
    ("pulsar_storage_size", "gauge", "Bytes stored for the topic", _stored(lambda ledger: ledger.total_size)),
    ("pulsar_storage_write_latency_count", "counter", "Entries added",
     _stored(lambda ledger: ledger.write_latency.count)),
    ("pulsar_storage_write_latency_sum", "counter", "Milliseconds spent adding entries",
     _stored(lambda ledger: ledger.write_latency.total_ms)),
]


def _buffered(value: Callable[[Any], float]) -> TopicValue:
    """A transaction buffer metric: 0 for a topic that has none."""
    return lambda t, w: value(t.transaction_buffer) if getattr(t, "transaction_buffer", None) is not None else 0


_TRANSACTION_METRICS: list[tuple[str, str, str, TopicValue]] = [
    ("pulsar_txn_tb_active_total", "gauge", "Open transactions with messages on the topic",
     _buffered(lambda buffer: buffer.ongoing)),
    ("pulsar_txn_tb_committed_total", "counter", "Transactions committed on the topic since it loaded",
     _buffered(lambda buffer: buffer.committed)),
    ("pulsar_txn_tb_aborted_total", "counter", "Transactions aborted on the topic since it loaded",
     _buffered(lambda buffer: buffer.aborted)),
]


def _bucket_name(bound: float) -> str:
    return "pulsar_storage_write_latency_le_" + f"{bound:g}".replace(".", "_")


def _latency_bucket(index: int) -> TopicValue:
    return _stored(lambda ledger: ledger.write_latency.counts[index])


_LATENCY_METRICS = [
    (_bucket_name(bound), "gauge", f"Adds that took up to {bound:g} ms (after the previous bucket)", _latency_bucket(i))
    for i, bound in enumerate(WRITE_LATENCY_BOUNDS_MS)
] + [("pulsar_storage_write_latency_overflow", "gauge", "Adds that took longer than 1 s",
      _latency_bucket(len(WRITE_LATENCY_BOUNDS_MS)))]


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    return str(value) if isinstance(value, int) else f"{value:.6g}"


def render(config: BrokerConfig, topics: Iterable[AnyTopic], extra: Iterable[str] = ()) -> str:
    """The topic metrics, per topic or (exposeTopicLevelMetricsInPrometheus=false) summed per
    namespace, then `extra` lines (the security counters of server/security/audit.py)."""
    cluster, window = _label(config.cluster_name), config.stats_update_frequency_in_secs
    per_topic = config.expose_topic_level_metrics_in_prometheus
    groups: dict[str, list[AnyTopic]] = {}
    for topic in sorted(topics, key=lambda t: str(t.name)):
        label = f'cluster="{cluster}",namespace="{_label(topic.name.namespace)}"'
        if per_topic:
            label += f',topic="{_label(str(topic.name))}"'
        groups.setdefault(label, []).append(topic)
    lines: list[str] = []
    for name, kind, help_text, value in _TOPIC_METRICS + _LATENCY_METRICS + _TRANSACTION_METRICS:
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} {kind}")
        lines.extend(f"{name}{{{label}}} {_number(sum(value(t, window) for t in members))}"
                     for label, members in groups.items())
    if per_topic:
        lines.append("# HELP pulsar_subscription_back_log Entries not yet acknowledged by the subscription")
        lines.append("# TYPE pulsar_subscription_back_log gauge")
        for label, (topic,) in groups.items():
            for sub in topic.subscriptions.values():
                lines.append(f'pulsar_subscription_back_log{{{label},subscription="{_label(sub.name)}"}} '
                             f"{sub.backlog()}")
    lines.extend(extra)
    return "\n".join(lines) + "\n"
