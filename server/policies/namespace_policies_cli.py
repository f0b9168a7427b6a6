"""`pulsard namespace-policies get|set tenant/ns [FIELD=JSON ...]`: a namespace's Policies read or
written straight in the metadata store, beside a running broker or a stopped one.

Every field given is checked as the admin API checks it (policy_values.py) before anything is
written: a misspelled name or a value of the wrong type is refused, naming the field, and the
document is left as it was.
"""

from __future__ import annotations

import json
from typing import Any

from managed_ledger.factory import open_configuration_store
from server.config import BrokerConfig
from server.errors import NamespaceNotFound

from .namespace_policies import NamespacePolicies
from .catalog import check_fields


async def namespace_policies_command(config: BrokerConfig, action: str, namespace: str, fields: list[str]) -> str:
    """The policies as JSON (after the update, for set). Works on a namespace made through the
    admin API (`pulsard admin namespaces create`); a topic reads its namespace's policies when
    it loads."""
    updates = dict(_parse_field(f) for f in fields)
    if action == "get" and updates:
        raise ValueError("get takes no FIELD=JSON arguments")
    updates = check_fields(updates)
    store = await open_configuration_store(config.storage)
    try:
        policies = NamespacePolicies(store)
        if action == "set":
            result = await policies.update(namespace, **updates)
        elif (result := await policies.get_if_exists(namespace)) is None:
            raise NamespaceNotFound(f"Namespace {namespace} does not exist")
    finally:
        await store.close()
    return json.dumps(result, indent=2, sort_keys=True)


def _parse_field(text: str) -> tuple[str, Any]:
    name, sep, raw = text.partition("=")
    if not sep or not name:
        raise ValueError(f"expected FIELD=JSON, got {text!r}")
    try:
        return name, json.loads(raw)
    except json.JSONDecodeError:
        raise ValueError(f"{name}: {raw!r} is not a JSON value (strings need quotes)") from None
