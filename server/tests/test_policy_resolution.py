"""The policies kept as state on a topic, resolved from the applied view (topic fields already
merged over the namespace's) with the broker's keys where a field is absent."""

from __future__ import annotations

from managed_ledger.config import PersistencePolicy
from server.config import BrokerConfig
from server.policies.applied import delayed_delivery_of
from server.policies.catalog import applied_view
from server.policies.deduplication_snapshots import snapshot_interval_s
from server.policies.persistence import persistence_of
from server.policies.subscription_expiry import expiration_s
from server.topics.subscriptions.delayed_delivery import DelayedDeliveryPolicy

CONFIG = BrokerConfig().with_settings({
    "delayedDeliveryEnabled": "true", "delayedDeliveryTickTimeMillis": "700",
    "managedLedgerDefaultEnsembleSize": "3", "managedLedgerDefaultWriteQuorum": "2",
    "managedLedgerDefaultAckQuorum": "2", "managedLedgerDefaultMarkDeleteRateLimit": "0.5",
    "subscriptionExpirationTimeMinutes": "0.5", "brokerDeduplicationSnapshotIntervalSeconds": "30",
})


def view(namespace: dict | None = None, topic: dict | None = None) -> dict:
    return applied_view(namespace or {}, topic or {}, "standalone")


def test_delayed_delivery_field_by_field():
    assert delayed_delivery_of(view(), CONFIG) == DelayedDeliveryPolicy(True, 700)
    namespace = {"delayed_delivery_policies": {"active": False, "tickTime": 200}}
    assert delayed_delivery_of(view(namespace), CONFIG) == DelayedDeliveryPolicy(False, 200)
    topic = {"delayedDeliveryEnabled": True}
    assert delayed_delivery_of(view(namespace, topic), CONFIG) == DelayedDeliveryPolicy(True, 200)
    assert delayed_delivery_of(view({}, {"delayedDeliveryTickTimeMillis": 50}), CONFIG) == DelayedDeliveryPolicy(True, 50)


def test_persistence_is_the_whole_policy_in_force_else_the_brokers():
    assert persistence_of(view(), CONFIG) == PersistencePolicy(3, 2, 2, 0.5)
    stored = {"bookkeeperEnsemble": 2, "bookkeeperWriteQuorum": 2, "bookkeeperAckQuorum": 1,
              "managedLedgerMaxMarkDeleteRate": 0}
    assert persistence_of(view({"persistence": stored}), CONFIG) == PersistencePolicy(2, 2, 1, 0.0)
    own = {**stored, "bookkeeperEnsemble": 3}
    assert persistence_of(view({"persistence": stored}, {"persistence": own}), CONFIG) == PersistencePolicy(3, 2, 1, 0.0)


def test_subscription_expiration_is_the_namespaces_else_the_brokers():
    assert expiration_s(view(), CONFIG) == 30
    assert expiration_s(view({"subscription_expiration_time_minutes": 0}), CONFIG) == 0
    assert expiration_s(view({"subscription_expiration_time_minutes": 2}), CONFIG) == 120


def test_deduplication_snapshot_interval_by_level():
    assert snapshot_interval_s(view(), CONFIG) == 30
    namespace = {"deduplicationSnapshotIntervalSeconds": 10}
    assert snapshot_interval_s(view(namespace), CONFIG) == 10
    assert snapshot_interval_s(view(namespace, {"deduplicationSnapshotIntervalSeconds": 0}), CONFIG) == 0
