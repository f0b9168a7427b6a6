"""Pulsar topic names: parsing, validation, short forms and partitions."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field

from server.errors import InvalidTopicName

PARTITION_SUFFIX = "-partition-"
DOMAINS = ("persistent", "non-persistent")
#: Tenants and namespaces, as Pulsar's NamedEntity (Java's \w is ASCII).
_NAMED_ENTITY = re.compile(r"^[-=:.\w]+$", re.ASCII)
#: Longest name part: one part is one metadata path component, and a file name in tools
#: that export them (255 is the usual file-name limit).
MAX_NAME_PART = 255
#: Never in a topic's local name: they break URLs, shells, paths and Prometheus labels.
_FORBIDDEN_IN_TOPIC = frozenset('<>;"\'\\`|{}^')
_PARTITION = re.compile(r"^(.*)-partition-(\d+)$")


@dataclass(frozen=True, slots=True)
class TopicName:
    domain: str
    tenant: str
    namespace_local: str
    local_name: str
    #: str(self), made once: the broker, the topic and its ledger share one string
    _full: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_full", f"{self.domain}://{self.tenant}/{self.namespace_local}/{self.local_name}")

    @staticmethod
    def is_named_entity(name: str) -> bool:
        """Tenant and namespace names follow Pulsar's NamedEntity rule; "." and ".." (relative
        path parts, refused by ZooKeeper in Pulsar) and over-long names are refused too."""
        return bool(_NAMED_ENTITY.match(name)) and name not in (".", "..") and len(name) <= MAX_NAME_PART

    @staticmethod
    def is_valid_namespace(namespace: str) -> bool:
        """`tenant/namespace`, both named entities."""
        tenant, sep, local = namespace.partition("/")
        return bool(sep) and TopicName.is_named_entity(tenant) and TopicName.is_named_entity(local)

    @classmethod
    def parse(cls, name: str) -> "TopicName":
        """Accept `x`, `tenant/ns/x` and `domain://tenant/ns/x`; anything else is invalid."""
        if not name or not isinstance(name, str):
            raise InvalidTopicName(f"Invalid topic name: {name!r}")
        domain, sep, rest = name.partition("://")
        if not sep:
            domain, rest = "persistent", (name if "/" in name else f"public/default/{name}")
        if domain not in DOMAINS:
            raise InvalidTopicName(f"Invalid topic domain {domain!r} in {name!r}")
        parts = rest.split("/")
        if len(parts) != 3 or not all(parts):
            raise InvalidTopicName(f"Invalid topic name {name!r}: expected domain://tenant/namespace/topic")
        tenant, namespace, local = parts
        if not cls.is_named_entity(tenant) or not cls.is_named_entity(namespace):
            raise InvalidTopicName(f"Invalid tenant or namespace in topic name {name!r}")
        if not _valid_local_name(local):
            raise InvalidTopicName(f"Invalid characters in topic name {name!r}")
        # interned: thousands of topics share a few domains, tenants and namespaces
        return cls(sys.intern(domain), sys.intern(tenant), sys.intern(namespace), local)

    @property
    def persistent(self) -> bool:
        return self.domain == "persistent"

    @property
    def namespace(self) -> str:
        return f"{self.tenant}/{self.namespace_local}"

    @property
    def partition_index(self) -> int:
        match = _PARTITION.match(self.local_name)
        return int(match.group(2)) if match else -1

    @property
    def partitioned_parent(self) -> "TopicName":
        """The partitioned topic this partition belongs to (itself when not a partition)."""
        match = _PARTITION.match(self.local_name)
        if not match:
            return self
        return TopicName(self.domain, self.tenant, self.namespace_local, match.group(1))

    def partition(self, index: int) -> "TopicName":
        return TopicName(self.domain, self.tenant, self.namespace_local, f"{self.local_name}{PARTITION_SUFFIX}{index}")

    def __str__(self) -> str:
        return self._full


def _valid_local_name(local: str) -> bool:
    """Printable, well-formed (no lone surrogates from undecodable bytes), none of the
    forbidden characters, not a relative path part, not over-long."""
    return (local.isprintable() and local not in (".", "..") and len(local) <= MAX_NAME_PART
            and not _FORBIDDEN_IN_TOPIC.intersection(local)
            and not any("\ud800" <= ch <= "\udfff" for ch in local))
