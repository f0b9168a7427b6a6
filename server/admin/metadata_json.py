"""JSON documents in the metadata store, as Pulsar keeps its admin resources there."""

from __future__ import annotations

import json
from typing import Any

from managed_ledger.errors import MetadataBadVersionError, MetadataNotFoundError
from managed_ledger.interfaces import MetadataStore


async def read_doc(store: MetadataStore, path: str) -> Any | None:
    stored = await store.get(path)
    return json.loads(stored[0]) if stored is not None else None


async def create_doc(store: MetadataStore, path: str, doc: Any) -> bool:
    """Store a new document; False when one is already there."""
    try:
        await store.put(path, _encode(doc), -1)
    except MetadataBadVersionError:
        return False
    return True


async def write_doc(store: MetadataStore, path: str, doc: Any) -> None:
    await store.put(path, _encode(doc))


async def delete_doc(store: MetadataStore, path: str) -> bool:
    try:
        await store.delete(path)
    except MetadataNotFoundError:
        return False
    return True


def _encode(doc: Any) -> bytes:
    return json.dumps(doc, sort_keys=True).encode()
