"""Which persistence policy a topic's managed ledger follows: the policy in force (Pulsar's
PersistencePolicies, topic > namespace), else the broker's managedLedgerDefault* keys.

It is handed to the managed ledger when the topic loads and whenever it changes: new ledgers
are replicated as it says (a change applies from the next ledger, as in Pulsar), and its
cursors persist their mark-delete position at its rate.
"""

from __future__ import annotations

from typing import Any

from managed_ledger.config import PersistencePolicy
from managed_ledger.interned import interned
from server.config import BrokerConfig

PERSISTENCE = "persistence"


def persistence_of(policies: dict[str, Any], config: BrokerConfig) -> PersistencePolicy:
    """The policy in force (stored through policy_values.persistence, so complete), else the
    broker's; a field missing from a document written some other way is the broker's."""
    default = config.storage.default_persistence
    stored = policies.get(PERSISTENCE)
    if not isinstance(stored, dict):
        return default
    return interned(PersistencePolicy(stored.get("bookkeeperEnsemble", default.ensemble_size),
                                      stored.get("bookkeeperWriteQuorum", default.write_quorum),
                                      stored.get("bookkeeperAckQuorum", default.ack_quorum),
                                      float(stored.get("managedLedgerMaxMarkDeleteRate", default.mark_delete_rate))))
