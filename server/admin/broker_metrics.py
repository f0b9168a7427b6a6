"""Broker-wide and process metrics for /metrics, beside the per-topic ones of metrics.py:
Pulsar's names where Pulsar has them (pulsar_topics_count, pulsar_broker_*, connection counts),
BookKeeper's journal sync histogram, and the Prometheus client's standard process_* set, so
existing dashboards and alerts find them."""

from __future__ import annotations

import os
import resource
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable

from bookkeeper.sync_latency import SYNC_BOUNDS_S

from .metrics import FAMILY_TYPES

if TYPE_CHECKING:
    from .metrics import TopicMetrics

_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class StorageRates:
    """Entries written and read per second between two scrapes (the first: since start)."""

    started: float = field(default_factory=time.monotonic)
    last: tuple[float, int, int] | None = None

    def rates(self, written: int, read: int) -> tuple[float, float]:
        now = time.monotonic()
        then, written_then, read_then = self.last or (self.started, 0, 0)
        self.last = (now, written, read)
        elapsed = max(now - then, 1e-3)
        return max(0, written - written_then) / elapsed, max(0, read - read_then) / elapsed


def _sample(lines: list[str], name: str, kind: str, help_text: str, samples: Iterable[tuple[str, float]]) -> None:
    lines.append(f"# HELP {name} {help_text}")
    lines.append(f"# TYPE {name} {kind}")
    lines.extend(f"{name}{{{labels}}} {value:g}" if labels else f"{name} {value:g}" for labels, value in samples)


#: The topic families summed as pulsar_broker_* (pulsar_rate_in: pulsar_broker_rate_in, of the
#: same type), with the broker-wide help.
_SUMS = {
    "pulsar_producers_count": "Connected producers",
    "pulsar_subscriptions_count": "Subscriptions",
    "pulsar_consumers_count": "Connected consumers",
    "pulsar_msg_backlog": "Entries not yet acknowledged",
    "pulsar_storage_size": "Bytes stored",
    "pulsar_rate_in": "Messages published per second",
    "pulsar_rate_out": "Messages dispatched per second",
    "pulsar_throughput_in": "Bytes published per second",
    "pulsar_throughput_out": "Bytes dispatched per second",
    "pulsar_in_messages_total": "Messages published (topics loaded now)",
    "pulsar_out_messages_total": "Messages dispatched (topics loaded now)",
    "pulsar_in_bytes_total": "Bytes published (topics loaded now)",
    "pulsar_out_bytes_total": "Bytes dispatched (topics loaded now)",
}


def broker_lines(broker: Any, topics: TopicMetrics, persistent: list[Any], rates: StorageRates) -> list[str]:
    """pulsar_topics_count per namespace, pulsar_broker_* sums over the loaded topics, connection
    counts, storage rates and the journal's fsync latency."""
    cluster = f'cluster="{broker.config.cluster_name}"'
    lines: list[str] = []
    _sample(lines, "pulsar_topics_count", "gauge", "Topics loaded, per namespace",
            [(f'{cluster},namespace="{ns}"', n) for ns, n in sorted(topics.namespaces.items())])
    sums = [
        ("topics_count", "gauge", "Topics loaded", sum(topics.namespaces.values())),
        *((family.removeprefix("pulsar_"), FAMILY_TYPES[family], help_text, topics.total(family))
          for family, help_text in _SUMS.items()),
    ]
    write_rate, read_rate = rates.rates(topics.total("pulsar_storage_write_latency_count"),
                                        sum(t.ledger.entries_read for t in persistent))
    sums += [("storage_write_rate", "gauge", "Entries written to storage per second (since the last scrape)",
              write_rate),
             ("storage_read_rate", "gauge", "Entries read from storage per second (since the last scrape)", read_rate)]
    for name, kind, help_text, value in sums:
        _sample(lines, f"pulsar_broker_{name}", kind, help_text, [(cluster, value)])
    active = len(broker.connections)
    _sample(lines, "pulsar_active_connections", "gauge", "Open client connections", [(cluster, active)])
    _sample(lines, "pulsar_connection_created_total_count", "counter", "Client connections accepted",
            [(cluster, broker.connections_created)])
    _sample(lines, "pulsar_connection_closed_total_count", "counter", "Client connections closed",
            [(cluster, broker.connections_created - active)])
    lines += bookie_lines(broker.storage)
    return lines


def bookie_lines(storage: Any) -> list[str]:
    """BookKeeper's journal sync histogram and write throttling, when the storage is the
    embedded bookie."""
    bookie = getattr(getattr(storage, "bookkeeper", None), "bookie", None)
    if bookie is None:
        return []
    journal = bookie.journal
    latency = journal.sync_latency
    name = "bookie_journal_JOURNAL_SYNC"
    lines = [f"# HELP {name} Journal fsync latency (seconds)", f"# TYPE {name} histogram"]
    lines += [f'{name}_bucket{{le="{bound:g}"}} {count}' for bound, count in zip(SYNC_BOUNDS_S, latency.buckets)]
    lines += [f'{name}_bucket{{le="+Inf"}} {latency.count}', f"{name}_sum {latency.total_s:.6f}",
              f"{name}_count {latency.count}"]
    _sample(lines, "bookie_journal_JOURNAL_SYNC_total", "counter", "Journal fsyncs", [("", journal.syncs)])
    _sample(lines, "bookie_journal_JOURNAL_GROUPS_total", "counter", "Journal group commits", [("", journal.groups)])
    _sample(lines, "bookie_throttled_write_requests_total", "counter",
            "Adds whose acknowledgement waited for a full write cache to be flushed", [("", bookie.throttled_adds)])
    return lines


def process_lines() -> list[str]:
    """The Prometheus client's process_* metrics, read from /proc (Linux)."""
    lines: list[str] = []
    usage = resource.getrusage(resource.RUSAGE_SELF)
    _sample(lines, "process_cpu_seconds_total", "counter", "User and system CPU time spent (seconds)",
            [("", usage.ru_utime + usage.ru_stime)])
    try:
        with open("/proc/self/statm") as statm:
            virtual_pages, resident_pages = (int(v) for v in statm.read().split()[:2])
        _sample(lines, "process_resident_memory_bytes", "gauge", "Resident memory size (bytes)",
                [("", resident_pages * _PAGE_SIZE)])
        _sample(lines, "process_virtual_memory_bytes", "gauge", "Virtual memory size (bytes)",
                [("", virtual_pages * _PAGE_SIZE)])
        _sample(lines, "process_open_fds", "gauge", "Open file descriptors", [("", len(os.listdir("/proc/self/fd")))])
        with open("/proc/self/stat") as stat:
            start_ticks = int(stat.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/stat") as system:
            boot = next(int(line.split()[1]) for line in system if line.startswith("btime"))
        _sample(lines, "process_start_time_seconds", "gauge", "Start time since the epoch (seconds)",
                [("", boot + start_ticks / _CLOCK_TICKS)])
    except (OSError, ValueError, StopIteration):
        pass   # not Linux: the CPU time above is all there is
    _sample(lines, "process_max_fds", "gauge", "Maximum open file descriptors",
            [("", resource.getrlimit(resource.RLIMIT_NOFILE)[0])])
    return lines
