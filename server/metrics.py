"""GET /metrics: Prometheus text with Pulsar's metric names and labels."""

from __future__ import annotations

from typing import Callable, Iterable

from .topic import Topic

#: (name, type, help, value of a topic)
_TOPIC_METRICS: list[tuple[str, str, str, Callable[[Topic], int]]] = [
    ("pulsar_in_messages_total", "counter", "Messages published to the topic", lambda t: t.stats.messages_in),
    ("pulsar_in_bytes_total", "counter", "Bytes published to the topic", lambda t: t.stats.bytes_in),
    ("pulsar_out_messages_total", "counter", "Messages dispatched from the topic", lambda t: t.stats.messages_out),
    ("pulsar_out_bytes_total", "counter", "Bytes dispatched from the topic", lambda t: t.stats.bytes_out),
    ("pulsar_producers_count", "gauge", "Connected producers", lambda t: len(t.producers)),
    ("pulsar_subscriptions_count", "gauge", "Subscriptions", lambda t: len(t.subscriptions)),
    ("pulsar_consumers_count", "gauge", "Connected consumers",
     lambda t: sum(len(s.consumers) for s in t.subscriptions.values())),
    ("pulsar_msg_backlog", "gauge", "Entries not yet acknowledged, summed over subscriptions",
     lambda t: sum(s.backlog() for s in t.subscriptions.values())),
    ("pulsar_storage_size", "gauge", "Bytes stored for the topic", lambda t: t.ledger.total_size),
]


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def render(cluster: str, topics: Iterable[Topic]) -> str:
    topics = sorted(topics, key=lambda t: str(t.name))
    lines: list[str] = []
    for name, kind, help_text, value in _TOPIC_METRICS:
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} {kind}")
        for topic in topics:
            labels = f'cluster="{_label(cluster)}",namespace="{_label(topic.name.namespace)}",topic="{_label(str(topic.name))}"'
            lines.append(f"{name}{{{labels}}} {value(topic)}")
    lines.append("# HELP pulsar_subscription_back_log Entries not yet acknowledged by the subscription")
    lines.append("# TYPE pulsar_subscription_back_log gauge")
    for topic in topics:
        for sub in topic.subscriptions.values():
            labels = (f'cluster="{_label(cluster)}",namespace="{_label(topic.name.namespace)}",'
                      f'topic="{_label(str(topic.name))}",subscription="{_label(sub.name)}"')
            lines.append(f"pulsar_subscription_back_log{{{labels}}} {sub.backlog()}")
    return "\n".join(lines) + "\n"
