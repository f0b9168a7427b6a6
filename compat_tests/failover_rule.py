"""Which Failover consumer Pulsar makes active on a non-partitioned topic, written here
independently of the broker, for tests that must know it in advance.

Among consumers of the best priority level, each name puts 100 points on a ring (Murmur3 x86_32,
seed 0, sign bit cleared, of the name followed by 0..99); the topic's full name hashes to a
point, and the first consumer point at or after it (else the lowest one) wins. Checked against
Pulsar 3.0.7 by test_failover.py run on the reference (compat_tests/reference)."""

from __future__ import annotations

from typing import Callable

import mmh3

from compat_tests.helpers import full_name, unique_topic

TRIES = 1000


def _murmur(text: str) -> int:
    return mmh3.hash(text.encode(), 0, signed=False) & 0x7FFFFFFF


def failover_pick(names: list[str], topic: str) -> str:
    target = _murmur(full_name(topic))
    points = [(_murmur(f"{name}{i}"), name) for name in names for i in range(100)]
    return min([p for p in points if p[0] >= target] or points)[1]


def topic_where(condition: Callable[[Callable[[list[str]], str]], bool], prefix: str = "fo") -> str:
    """A fresh full topic name on which `condition(pick)` holds, pick(names) being the active one
    among those names there."""
    for _ in range(TRIES):
        topic = full_name(unique_topic(prefix))
        if condition(lambda names: failover_pick(names, topic)):
            return topic
    raise AssertionError(f"no topic name found in {TRIES} tries")
