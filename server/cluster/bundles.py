"""Namespace bundles: the unit of ownership in a cluster.

A namespace's hash space [0, 2^32) is cut into equal ranges (then split further); a topic belongs
to the range holding the CRC32 of its full name. Pulsar's NamespaceService builds its
NamespaceBundleFactory with Guava's Hashing.crc32(), so zlib.crc32 of the same UTF-8 string
puts every topic in the bundle a Pulsar broker would put it in. Ranges are written as Pulsar
writes them (``0x00000000_0x40000000``); the last one ends at 0xffffffff, inclusive.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from typing import Any

from server.errors import NotAllowed
from server.topics.topic_name import TopicName

FULL_UPPER_BOUND = 0x1_0000_0000
LAST_BOUNDARY = 0xFFFF_FFFF
OWNERSHIP_ROOT = "/namespace"
LOCAL_POLICIES_ROOT = "/admin/local-policies"


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
    """Every namespace starts with ``defaultNumberOfNamespaceBundles`` bundles; a split one has
    its boundaries in its LocalPolicies (``/admin/local-policies/<tenant>/<ns>``, field
    "bundles"), where Pulsar keeps them. They are cached here: a broker whose cache is stale
    finds the parent bundle unowned and reads them again (ClusterLookup) before placing it."""

    def __init__(self, count: int, store: Any = None) -> None:
        if count < 1:
            raise ValueError("defaultNumberOfNamespaceBundles must be at least 1")
        self._default = boundaries(count)
        self._store = store
        self._bounds: dict[str, tuple[int, list[int]]] = {}   # namespace -> (version, boundaries)

    def all_of(self, namespace: str) -> list[Bundle]:
        bounds = self._bounds.get(namespace, (-1, self._default))[1]
        return [Bundle(namespace, lo, hi) for lo, hi in zip(bounds, bounds[1:])]

    async def load(self, namespace: str) -> list[Bundle]:
        """The namespace's bundles as stored now."""
        if self._store is not None:
            stored, version = await self._stored(namespace)
            self._remember(namespace, version, _bounds_of(stored) or self._default)
        return self.all_of(namespace)

    def _remember(self, namespace: str, version: int, bounds: list[int]) -> None:
        """Never older boundaries over newer ones (a read may end after our own split)."""
        if version >= self._bounds.get(namespace, (-1, []))[0]:
            self._bounds[namespace] = (version, bounds)

    def bundle_of(self, name: TopicName) -> Bundle:
        code = topic_hash(name)
        for bundle in self.all_of(name.namespace):
            if code < bundle.upper or bundle.upper == LAST_BOUNDARY:
                return bundle
        raise AssertionError("unreachable: the last range is closed at 0xffffffff")

    def parse(self, namespace: str, bundle_range: str) -> Bundle:
        """A bundle named by its range (admin API); NotAllowed for one this namespace lacks."""
        for bundle in self.all_of(namespace):
            if bundle.range == bundle_range.lower():
                return bundle
        raise NotAllowed(f"Bundle {bundle_range} is not a bundle of namespace {namespace}")

    async def split(self, bundle: Bundle, point: int) -> tuple[Bundle, Bundle]:
        """Store the namespace's boundaries with the bundle cut at point (a versioned write:
        MetadataBadVersionError if another split got there first)."""
        stored, version = await self._stored(bundle.namespace)
        bounds = _bounds_of(stored) or self._default
        if bundle.lower not in bounds or bounds[bounds.index(bundle.lower) + 1] != bundle.upper:
            raise NotAllowed(f"Bundle {bundle.range} is no longer a bundle of namespace {bundle.namespace}")
        bounds = sorted([*bounds, point])
        policies = {**(stored or {}), "bundles": {"boundaries": [f"0x{b:08x}" for b in bounds],
                                                  "numBundles": len(bounds) - 1}}
        version = await self._store.put(local_policies_path(bundle.namespace), json.dumps(policies).encode(), version)
        self._remember(bundle.namespace, version, bounds)
        return Bundle(bundle.namespace, bundle.lower, point), Bundle(bundle.namespace, point, bundle.upper)

    async def _stored(self, namespace: str) -> tuple[dict[str, Any] | None, int]:
        """The LocalPolicies and their version (-1: none yet)."""
        found = await self._store.get(local_policies_path(namespace))
        return (json.loads(found[0]), found[1]) if found is not None else (None, -1)


def local_policies_path(namespace: str) -> str:
    return f"{LOCAL_POLICIES_ROOT}/{namespace}"


def _bounds_of(local_policies: dict[str, Any] | None) -> list[int] | None:
    found = ((local_policies or {}).get("bundles") or {}).get("boundaries")
    return [int(b, 16) for b in found] if found else None
