"""Whose a ledger is, in its BookKeeper custom metadata, so that an orphan can be told apart.

As Pulsar (LedgerMetadataUtils): ``application=pulsar``, ``component=managed-ledger`` and
``pulsar/managed-ledger=<name>``; a compacted view's ledger ``component=compacted-ledger`` and
``pulsar/compactedTopic=<name>``. Plus ``pulsard/storage-id``: a random id kept in the metadata
store, since one BookKeeper cluster may serve several clusters whose managed ledgers have the
same names; the orphan cleaner (orphan_ledgers.py) touches only ledgers of its own store.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from bookkeeper.errors import MetadataBadVersionError

from .interfaces import MetadataStore

STORAGE_ID_PATH = "/pulsard/storage-id"
MANAGED_LEDGER = "managed-ledger"
COMPACTED_LEDGER = "compacted-ledger"
_NAME_KEY = {MANAGED_LEDGER: "pulsar/managed-ledger", COMPACTED_LEDGER: "pulsar/compactedTopic"}


async def storage_id(store: MetadataStore) -> str:
    """This metadata store's id, made by the first broker that asks."""
    while True:
        found = await store.get(STORAGE_ID_PATH)
        if found is not None:
            return found[0].decode()
        try:
            await store.put(STORAGE_ID_PATH, uuid.uuid4().hex.encode(), -1)
        except MetadataBadVersionError:
            continue   # another broker made it first: read theirs


@dataclass(frozen=True, slots=True)
class LedgerOwner:
    component: str   # MANAGED_LEDGER or COMPACTED_LEDGER
    name: str        # the managed ledger's


@dataclass(frozen=True, slots=True)
class LedgerTags:
    storage_id: str

    def of(self, owner: LedgerOwner) -> dict[str, bytes]:
        return {"application": b"pulsar", "component": owner.component.encode(),
                _NAME_KEY[owner.component]: owner.name.encode(),
                "pulsard/storage-id": self.storage_id.encode()}

    def owner(self, custom: tuple[tuple[str, bytes], ...]) -> LedgerOwner | None:
        """The managed ledger a ledger was made for, if it was made by a broker of this store."""
        tags = dict(custom)
        component = tags.get("component", b"").decode(errors="replace")
        if (tags.get("application") != b"pulsar" or component not in _NAME_KEY
                or tags.get("pulsard/storage-id") != self.storage_id.encode()
                or _NAME_KEY[component] not in tags):
            return None
        return LedgerOwner(component, tags[_NAME_KEY[component]].decode())
