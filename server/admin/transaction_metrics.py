"""The transaction coordinators' lines of /metrics, under Pulsar's pulsar_txn_* names, one
sample per coordinator this broker serves (label coordinator_id)."""

from __future__ import annotations

from server.transactions.coordinator.metadata_store import LATENCY_BUCKETS_MS, TransactionMetadataStore
from server.transactions.coordinator.service import TransactionCoordinators

_COUNTERS = [
    ("pulsar_txn_active_count", "gauge", "Transactions open or ending", lambda s: len(s.txns)),
    ("pulsar_txn_created_total", "counter", "Transactions begun", lambda s: s.counters.created),
    ("pulsar_txn_committed_total", "counter", "Transactions committed", lambda s: s.counters.committed),
    ("pulsar_txn_aborted_total", "counter", "Transactions aborted", lambda s: s.counters.aborted),
    ("pulsar_txn_timeout_total", "counter", "Transactions aborted by their timeout", lambda s: s.counters.timed_out),
    ("pulsar_txn_append_log_total", "counter", "Records appended to the transaction log", lambda s: s.log.appended),
]


def _bucket(index: int):
    return lambda s: s.counters.latency_buckets[index]


_LATENCY = [(f"pulsar_txn_execution_latency_le_{bound}", "gauge",
             f"Transactions that ended within {bound} ms of their start (after the previous bucket)", _bucket(i))
            for i, bound in enumerate(LATENCY_BUCKETS_MS)] + [
    ("pulsar_txn_execution_latency_le_overflow", "gauge", "Transactions that took longer",
     _bucket(len(LATENCY_BUCKETS_MS)))]


def transaction_lines(coordinators: TransactionCoordinators | None, cluster: str) -> list[str]:
    if coordinators is None:
        return []
    stores: list[tuple[int, TransactionMetadataStore]] = sorted(coordinators.stores.items())
    lines: list[str] = []
    for name, kind, help_text, value in _COUNTERS + _LATENCY:
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} {kind}")
        lines.extend(f'{name}{{cluster="{cluster}",coordinator_id="{tc}"}} {value(store)}' for tc, store in stores)
    return lines
