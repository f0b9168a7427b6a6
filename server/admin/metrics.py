"""GET /metrics: Prometheus text with Pulsar's metric names and labels (cluster, namespace,
topic; subscription for per-subscription backlog), for persistent and non-persistent topics
(these store nothing: their storage metrics are 0, as in Pulsar).

A broker may hold 100,000 topics, some 35 lines each: every topic's values are read in one pass,
then written family by family, both in pieces of at most PIECE topics or lines, so the caller can
let the event loop run between pieces (server/admin/web.py streams them)."""

from __future__ import annotations

from collections import Counter
from typing import Iterable, Iterator, Union

from managed_ledger.latency import WRITE_LATENCY_BOUNDS_MS
from server.config import BrokerConfig
from server.topics.non_persistent_topic import NonPersistentTopic
from server.topics.topic import Topic

AnyTopic = Union[Topic, NonPersistentTopic]

#: Lines (or topics read) per piece of the answer.
PIECE = 500


def _bucket(bound: float) -> tuple[str, str, str]:
    name = "pulsar_storage_write_latency_le_" + f"{bound:g}".replace(".", "_")
    return name, "gauge", f"Adds that took up to {bound:g} ms (after the previous bucket)"


#: (name, type, help) of the per-topic families, in the order topic_values gives their values.
FAMILIES: list[tuple[str, str, str]] = [
    ("pulsar_in_messages_total", "counter", "Messages published to the topic"),
    ("pulsar_in_bytes_total", "counter", "Bytes published to the topic"),
    ("pulsar_out_messages_total", "counter", "Messages dispatched from the topic"),
    ("pulsar_out_bytes_total", "counter", "Bytes dispatched from the topic"),
    ("pulsar_rate_in", "gauge", "Messages published per second"),
    ("pulsar_rate_out", "gauge", "Messages dispatched per second"),
    ("pulsar_throughput_in", "gauge", "Bytes published per second"),
    ("pulsar_throughput_out", "gauge", "Bytes dispatched per second"),
    ("pulsar_producers_count", "gauge", "Connected producers"),
    ("pulsar_subscriptions_count", "gauge", "Subscriptions"),
    ("pulsar_consumers_count", "gauge", "Connected consumers"),
    ("pulsar_msg_backlog", "gauge", "Entries not yet acknowledged, summed over subscriptions"),
    ("pulsard_unreadable_entries_skipped_total", "counter", "Stored entries whose metadata does not parse, skipped"),
    ("pulsard_lost_entries_found_total", "counter",
     "Entries a subscription or reader found with no copy left or their ledger gone, once each time it is held there"),
    ("pulsard_lost_entries_skipped_total", "counter", "Lost entries acknowledged unread (autoSkipNonRecoverableData)"),
    ("pulsar_storage_size", "gauge", "Bytes stored for the topic"),
    ("pulsar_storage_write_latency_count", "counter", "Entries added"),
    ("pulsar_storage_write_latency_sum", "counter", "Milliseconds spent adding entries"),
    *(_bucket(bound) for bound in WRITE_LATENCY_BOUNDS_MS),
    ("pulsar_storage_write_latency_overflow", "gauge", "Adds that took longer than 1 s"),
    ("pulsar_txn_tb_active_total", "gauge", "Open transactions with messages on the topic"),
    ("pulsar_txn_tb_committed_total", "counter", "Transactions committed on the topic since it loaded"),
    ("pulsar_txn_tb_aborted_total", "counter", "Transactions aborted on the topic since it loaded"),
]
#: The families whose values are measured, not counted: written with 6 significant digits.
_MEASURED = frozenset({"pulsar_rate_in", "pulsar_rate_out", "pulsar_throughput_in", "pulsar_throughput_out",
                       "pulsar_storage_write_latency_sum"})
_FAMILY_INDEX = {name: index for index, (name, _, _) in enumerate(FAMILIES)}
FAMILY_TYPES = {name: kind for name, kind, _ in FAMILIES}
_NOT_STORED = (0,) * (6 + len(WRITE_LATENCY_BOUNDS_MS))   # lost found, skipped, size, count, sum, buckets
_NO_TRANSACTIONS = (0, 0, 0)


def topic_values(topic: AnyTopic, window: float, backlog: int) -> tuple[float, ...]:
    """One topic's value of each family, in FAMILIES' order; rates over the given window, and
    its subscriptions' backlog (summed by the caller, which writes them too)."""
    stats = topic.stats
    rates = stats.rates(window)
    subscriptions = topic.subscriptions.values()
    values = (stats.messages_in, stats.bytes_in, stats.messages_out, stats.bytes_out,
              rates.msg_rate_in, rates.msg_rate_out, rates.msg_throughput_in, rates.msg_throughput_out,
              len(topic.producers), len(subscriptions), sum(len(s.consumers) for s in subscriptions),
              backlog, stats.unreadable_entries)
    if isinstance(topic, Topic):
        ledger = topic.ledger
        latency = ledger.write_latency
        values += (ledger.lost_entries.found, ledger.lost_entries.skipped, ledger.total_size,
                   latency.count, latency.total_ms, *latency.counts)
    else:
        values += _NOT_STORED
    buffer = topic.transaction_buffer
    return values + ((buffer.ongoing, buffer.committed, buffer.aborted) if buffer is not None else _NO_TRANSACTIONS)


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class TopicMetrics:
    """A snapshot of the loaded topics' values, per topic or (exposeTopicLevelMetricsInPrometheus
    =false) summed per namespace: read piece by piece, then written as text; its totals give
    the broker-wide sums (broker_metrics.py). Values are kept by family, a list each, not by
    topic: tuples by the hundred thousand would wake the cyclic collector, whose passes over
    the topics' own objects stall the event loop for 100s of ms."""

    def __init__(self, config: BrokerConfig) -> None:
        self._cluster = _label(config.cluster_name)
        self._window = config.stats_update_frequency_in_secs
        self._per_topic = config.expose_topic_level_metrics_in_prometheus
        self._labels: list[str] = []   # "{labels} " of each line
        self._columns: list[list[float]] = [[] for _ in FAMILIES]
        self._backlogs: list[str] = []
        #: Topics read, per namespace.
        self.namespaces: Counter[str] = Counter()

    def read(self, topics: Iterable[AnyTopic]) -> Iterator[None]:
        """Read every topic's values, in name order; yields after each PIECE topics."""
        sums: dict[str, list[float]] = {}   # summed per namespace: "{labels} " -> values
        for count, topic in enumerate(sorted(topics, key=lambda t: str(t.name)), start=1):
            namespace = topic.name.namespace
            self.namespaces[namespace] += 1
            labels = f'cluster="{self._cluster}",namespace="{_label(namespace)}"'
            subscriptions = topic.subscriptions.values()
            backlogs = [s.backlog() for s in subscriptions]
            values = topic_values(topic, self._window, sum(backlogs))
            if self._per_topic:
                labels += f',topic="{_label(str(topic.name))}"'
                self._labels.append(f"{{{labels}}} ")
                for column, value in zip(self._columns, values):
                    column.append(value)
                self._backlogs.extend(
                    f'pulsar_subscription_back_log{{{labels},subscription="{_label(s.name)}"}} {backlog}\n'
                    for s, backlog in zip(subscriptions, backlogs))
            elif (total := sums.get(key := f"{{{labels}}} ")) is None:
                sums[key] = list(values)
            else:
                for index, value in enumerate(values):
                    total[index] += value
            if count % PIECE == 0:
                yield
        if sums:
            self._labels = list(sums)
            self._columns = [list(column) for column in zip(*sums.values())]

    def total(self, family: str) -> float:
        """A family's sum over every topic read."""
        return sum(self._columns[_FAMILY_INDEX[family]])

    def text(self, extra: Iterable[str] = ()) -> Iterator[str]:
        """The families, then `extra` lines (the security counters of server/security/audit.py),
        in pieces of at most PIECE lines."""
        for (name, kind, help_text), column in zip(FAMILIES, self._columns):
            yield f"# HELP {name} {help_text}\n# TYPE {name} {kind}\n"
            for start in range(0, len(self._labels), PIECE):
                labels, values = self._labels[start:start + PIECE], column[start:start + PIECE]
                if name in _MEASURED:
                    yield "".join([f"{name}{label}{value:.6g}\n" for label, value in zip(labels, values)])
                else:
                    yield "".join([f"{name}{label}{value}\n" for label, value in zip(labels, values)])
        if self._per_topic:
            yield ("# HELP pulsar_subscription_back_log Entries not yet acknowledged by the subscription\n"
                   "# TYPE pulsar_subscription_back_log gauge\n")
            for start in range(0, len(self._backlogs), PIECE):
                yield "".join(self._backlogs[start:start + PIECE])
        yield "".join(f"{line}\n" for line in extra)
