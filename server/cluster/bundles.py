"""Namespace bundles: the unit of ownership in a cluster.

A namespace's hash space [0, 2^32) is cut into a fixed number of equal ranges; a topic belongs
to the range holding the CRC32 of its full name. Pulsar's NamespaceService builds its
NamespaceBundleFactory with Guava's Hashing.crc32(), so zlib.crc32 of the same UTF-8 string
puts every topic in the bundle a Pulsar broker would put it in. Ranges are written as Pulsar
writes them (``0x00000000_0x40000000``); the last one ends at 0xffffffff, inclusive.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from server.errors import NotAllowed
from server.topics.topic_name import TopicName

FULL_UPPER_BOUND = 0x1_0000_0000
LAST_BOUNDARY = 0xFFFF_FFFF
OWNERSHIP_ROOT = "/namespace"


@dataclass(frozen=True)
class Bundle:
    namespace: str          # tenant/namespace
    lower: int
    upper: int

    @property
    def range(self) -> str:
        return f"0x{self.lower:08x}_0x{self.upper:08x}"

    @property
    def path(self) -> str:
        """Where its owner is recorded (ServiceUnitUtils.path)."""
        return f"{OWNERSHIP_ROOT}/{self.namespace}/{self.range}"

    def holds(self, name: TopicName) -> bool:
        return name.namespace == self.namespace and self.lower <= topic_hash(name) < self.upper + (
            self.upper == LAST_BOUNDARY)

    def __str__(self) -> str:
        return f"{self.namespace}/{self.range}"


def topic_hash(name: TopicName) -> int:
    return zlib.crc32(str(name).encode())


def boundaries(count: int) -> list[int]:
    """NamespaceBundles' equal split: count ranges, the last one closed at 0xffffffff."""
    step = FULL_UPPER_BOUND // count
    return [i * step for i in range(count)] + [LAST_BOUNDARY]


class NamespaceBundles:
    """Every namespace has ``defaultNumberOfNamespaceBundles`` bundles (no splitting here)."""

    def __init__(self, count: int) -> None:
        if count < 1:
            raise ValueError("defaultNumberOfNamespaceBundles must be at least 1")
        self._bounds = boundaries(count)

    def all_of(self, namespace: str) -> list[Bundle]:
        return [Bundle(namespace, lo, hi) for lo, hi in zip(self._bounds, self._bounds[1:])]

    def bundle_of(self, name: TopicName) -> Bundle:
        code = topic_hash(name)
        for lo, hi in zip(self._bounds, self._bounds[1:]):
            if code < hi or hi == LAST_BOUNDARY:
                return Bundle(name.namespace, lo, hi)
        raise AssertionError("unreachable: the last range is closed at 0xffffffff")

    def parse(self, namespace: str, bundle_range: str) -> Bundle:
        """A bundle named by its range (admin API); NotAllowed for one this namespace lacks."""
        for bundle in self.all_of(namespace):
            if bundle.range == bundle_range.lower():
                return bundle
        raise NotAllowed(f"Bundle {bundle_range} is not a bundle of namespace {namespace}")
