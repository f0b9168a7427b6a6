"""The broker service: which topics exist, how they are created, found and listed."""

from __future__ import annotations

import asyncio
import collections
import enum
import functools
import itertools
import logging
from typing import Iterable, Protocol

from log_limits.repeats import RepeatLimitedLog
from managed_ledger.errors import ManagedLedgerStorageError, MetadataBadVersionError
from managed_ledger.interfaces import ManagedLedgerFactory, ReadOnlyLedger

from .config import BrokerConfig
from .connection.advertised_listeners import AdvertisedListeners
from .connection.lookup import Lookup, TopicLookup
from .connection.publish_buffer import PublishBuffer
from .errors import (BrokerError, MetadataError, NamespaceNotFound, NotAllowed, PersistenceError, ServiceNotReady,
                     TopicNotFound)
from .heartbeat import is_heartbeat_namespace
from .policies.applied import AppliedPolicies, NamespacePoliciesWatch, apply_policies, deduplication_on
from .policies.auto_topic_creation import AutoTopicCreation, auto_topic_creation
from .policies.backlog_quota import BacklogQuotas
from .policies.change_events import change_events_topic, is_system_topic, is_system_topic_name
from .policies.compaction_monitor import CompactionMonitor
from .policies.deduplication_snapshots import DeduplicationSnapshotMonitor
from .policies.inactive_topics import InactiveTopicMonitor
from .policies.message_expiry import MessageExpiryMonitor
from .policies.namespace_policies import POLICIES_ROOT, NamespacePolicies
from .policies.persistence import persistence_of
from .policies.rate_limits import BrokerRateLimits
from .policies.resource_groups import ResourceGroups
from .security.authentication import Authentication
from .security.authorization import Authorization
from .policies.retention import RetentionMonitor
from .policies.subscription_expiry import SubscriptionExpiryMonitor
from .policies.topic_policies import TopicPolicies, TopicPoliciesWatch
from .topics.non_persistent_topic import NonPersistentTopic
from .topics.partitioned_metadata import PartitionedMetadata
from .topics.schema_compatibility import Strategy
from .topics.schema_registry import SchemaRegistry
from .topics.topic import Topic, delete_topic_state
from .topics.topic_name import TopicName
from .transactions.buffer.buffer import SnapshotRule, TopicTransactionBuffer
from .transactions.buffer.snapshots import TopicSnapshots
from .transactions.coordinator.service import TRANSACTION_COORDINATOR_ASSIGN, TransactionCoordinators
from .transactions.coordinator.txn_log import is_transaction_log
from .transactions.participants import LocalParticipants
from .transactions.pending_ack.store import log_name as pending_ack_log_name

log = logging.getLogger(__name__)
_repeats = RepeatLimitedLog(log)   # clients retry a topic that cannot load: one line per interval

GENERATION_PATH = "/counters/producer-name"
#: GET_TOPICS_OF_NAMESPACE modes (CommandGetTopicsOfNamespace.Mode).
MODE_PERSISTENT, MODE_NON_PERSISTENT, MODE_ALL = 0, 1, 2


class Creation(enum.Enum):
    """What loading a topic that does not exist yet does."""

    NEVER = "never"          # TopicNotFound (admin operations on existing topics)
    AUTO = "auto"            # created if its namespace's auto-creation rule allows (clients)
    EXPLICIT = "explicit"    # created whatever that rule says (the admin API's create)
    SYSTEM = "system"        # a system topic the broker keeps for itself (topic policies)


class ServedTopics(Protocol):
    """Cluster mode: whether this broker serves a topic (owns its bundle); raises if not."""

    def check_serves(self, name: TopicName) -> None: ...


class BrokerService:
    def __init__(self, config: BrokerConfig, storage: ManagedLedgerFactory,
                 listeners: AdvertisedListeners, authentication: Authentication | None = None) -> None:
        self.config = config
        #: Built before storage opens by standalone.py, so a bad key stops the start early.
        self.authentication = authentication or Authentication(config.security)
        self.listeners = listeners
        self.lookup: Lookup = TopicLookup(self, listeners)
        #: None for standalone (every topic is served here); set by a broker of a cluster
        self.served: ServedTopics | None = None
        self.storage = storage
        #: local state (topics, schemas, ownership); clusters, tenants, namespaces and
        #: partitioned topics are in the configuration store, as in Pulsar
        self.metadata = storage.metadata_store
        self.configuration = storage.configuration_store
        self.policies = NamespacePolicies(self.configuration)
        #: counts kept only where this broker is the one writer (the embedded store, serving as
        #: configuration store too)
        self.partitioned = PartitionedMetadata(
            self.configuration, keep=config.storage.embedded and self.configuration is self.metadata)
        self.topic_policies = TopicPolicies(self)
        self.applied = AppliedPolicies(self.policies, self.topic_policies, config.cluster_name)
        self.schemas = SchemaRegistry(self.metadata, self.applied, Strategy(config.schema_compatibility_strategy))
        self.policies.add_listener(self._namespace_policies_changed)
        self.topic_policies.add_listener(self._topic_policies_changed)
        self.authorization = Authorization(config.security, self.policies, self.configuration, POLICIES_ROOT,
                                           self.authentication.audit)
        self.connections: set = set()
        #: Connections accepted since start (closed ones = this minus the open ones), for /metrics.
        self.connections_created = 0
        self.publish_buffer = PublishBuffer(config.max_message_publish_buffer_size)
        #: by full name: the topic once loaded, its loading task until then
        self._topics: dict[str, "Topic | NonPersistentTopic | asyncio.Task"] = {}
        #: Topics loaded or loading per namespace, kept as they come and go: the watches that
        #: run every second ask for namespaces, which then costs nothing per topic.
        self._per_namespace: collections.Counter[str] = collections.Counter()
        #: Topics being unloaded: loading one again waits until it is closed.
        self._unloading: dict[str, asyncio.Task] = {}
        self._producer_names = itertools.count()
        self._generation = 0
        self.backlog_quotas = BacklogQuotas(self)
        self.resource_groups = ResourceGroups(self.configuration)
        self.resource_groups.add_listener(lambda: self._refresh_policies(self._loaded()))
        self.rate_limits = BrokerRateLimits(config, self.resource_groups)
        #: The transaction coordinators (transactionCoordinatorEnabled), else None.
        self.transactions: TransactionCoordinators | None = None
        #: How the coordinators reach topics (a cluster broker adds the way to other brokers').
        self.participants = LocalParticipants(self)
        if config.transaction_coordinator_enabled:
            self.transactions = TransactionCoordinators(
                storage, self.metadata, self, self.participants, config.max_active_transactions_per_coordinator,
                config.transaction_buffer_client_operation_timeout_in_mills / 1000)
        #: The topics' transaction buffer snapshots (while transactions are enabled).
        self.transaction_snapshots = TopicSnapshots(self) if config.transaction_coordinator_enabled else None
        self._snapshot_rule = SnapshotRule(config.transaction_buffer_snapshot_max_transaction_count,
                                           config.transaction_buffer_snapshot_min_time_in_millis / 1000)
        self._chores = [RetentionMonitor(self), MessageExpiryMonitor(self), self.backlog_quotas.monitor,
                        CompactionMonitor(self), InactiveTopicMonitor(self), NamespacePoliciesWatch(self),
                        TopicPoliciesWatch(self.topic_policies, self.loaded_namespaces),
                        SubscriptionExpiryMonitor(self), DeduplicationSnapshotMonitor(self),
                        self.resource_groups.watch]

    async def start(self) -> None:
        """Count this start, so generated producer names never repeat one of an earlier run
        (deduplication keys on producer names), as Pulsar's distributed id generator does."""
        while True:   # brokers of a cluster may start at once: each gets its own count
            stored = await self.metadata.get(GENERATION_PATH)
            self._generation = int(stored[0]) + 1 if stored is not None else 0
            try:
                await self.metadata.put(GENERATION_PATH, str(self._generation).encode(),
                                        stored[1] if stored is not None else -1)
                break
            except MetadataBadVersionError:
                continue
        await self.resource_groups.load()
        for chore in self._chores:
            chore.start()

    def new_producer_name(self) -> str:
        return f"{self.config.cluster_name}-{self._generation}-{next(self._producer_names)}"

    # -- topics -----------------------------------------------------------------------------

    @property
    def topics(self) -> list[Topic]:
        """The loaded persistent topics."""
        return [t for t in self._loaded() if isinstance(t, Topic)]

    @property
    def non_persistent_topics(self) -> list[NonPersistentTopic]:
        return [t for t in self._loaded() if isinstance(t, NonPersistentTopic)]

    def loaded_topic_names(self) -> list[TopicName]:
        return [t.name for t in self._loaded()]

    def _loaded(self) -> list["Topic | NonPersistentTopic"]:
        return [t for t in map(_settled, self._topics.values()) if t is not None]

    async def get_topic(self, name: TopicName, create: bool = True) -> "Topic | NonPersistentTopic":
        """The loaded topic, loading (and, when its namespace's rule allows, creating) it on first use."""
        return await self._get_or_load(name, Creation.AUTO if create else Creation.NEVER)

    async def create_topic(self, name: TopicName) -> "Topic | NonPersistentTopic":
        """An explicit creation (admin API): allowed whatever the auto-creation rule says."""
        return await self._get_or_load(name, Creation.EXPLICIT)

    async def _get_or_load(self, name: TopicName, creation: Creation) -> "Topic | NonPersistentTopic":
        key = str(name)
        loading = self._topics.get(key)
        if loading is not None and not isinstance(loading, asyncio.Task):
            return loading
        if loading is None:
            loading = asyncio.get_running_loop().create_task(self._load(name, creation))
            loading.add_done_callback(functools.partial(self._keep_topic_only, key))
            self._topics[key] = loading
            self._per_namespace[name.namespace] += 1
        try:
            return await asyncio.shield(loading)
        except Exception:
            if self._topics.get(key) is loading:
                del self._topics[key]
                self._forget_one(name)
            raise

    def loaded_namespaces(self) -> set[str]:
        """The namespaces with a topic loaded (or loading) here."""
        return set(self._per_namespace)

    def _forget_one(self, name: TopicName) -> None:
        self._per_namespace[name.namespace] -= 1
        if self._per_namespace[name.namespace] <= 0:
            del self._per_namespace[name.namespace]

    def _keep_topic_only(self, key: str, loading: asyncio.Task) -> None:
        """A loaded topic is kept as itself: a finished task keeps its coroutine too, some 450
        bytes a topic (a finished future 160)."""
        if self._topics.get(key) is loading and (topic := _settled(loading)) is not None:
            self._topics[key] = topic

    async def _load(self, name: TopicName, creation: Creation) -> "Topic | NonPersistentTopic":
        unloading = self._unloading.get(str(name))
        if unloading is not None:
            await asyncio.wait([unloading])
        self.check_serves(name)
        if is_transaction_log(name):   # written by its coordinator only, never a topic
            raise NotAllowed(f"{name} is a transaction coordinator's log")
        may_create = creation is not Creation.NEVER and (   # the namespace must exist
            (await self.auto_topic_creation(name)).allowed or creation is not Creation.AUTO)
        if not may_create and not await self._exists(name):
            raise TopicNotFound(f"Topic {name} does not exist")
        if creation is not Creation.SYSTEM and is_system_topic(name) and not await self._exists(name):
            raise NotAllowed("Cannot create topic in system topic format!")
        if not is_system_topic(name):   # policies changed through other brokers up to now
            await self.topic_policies.catch_up_if_readable(name.namespace)
        view = await self.applied.of(name)
        if not name.persistent:
            log.info("created non-persistent topic %s", name)
            created = NonPersistentTopic(self, name)
            apply_policies(created, view, self.config, self.rate_limits)
            return created
        try:
            ledger = await self.storage.open_ledger(str(name), persistence_of(view, self.config))
        except ManagedLedgerStorageError as exc:   # as Pulsar: the client gets a PersistenceError
            _repeats.warning(str(exc), "loading topic %s failed: %s", name, exc)
            raise PersistenceError(f"Failed to load topic {name}: {exc}") from exc
        try:
            topic = await Topic.load(self, name, ledger, deduplication_on(view, self.config))
            if self.transaction_snapshots is not None and not is_system_topic(name):
                topic.transaction_buffer = await TopicTransactionBuffer.load(
                    topic, self.transaction_snapshots, self._snapshot_rule)
            apply_policies(topic, view, self.config, self.rate_limits)
            self.check_serves(name)   # its bundle may have been released, or the session lost, meanwhile
        except BaseException:
            await ledger.close()
            raise
        log.info("loaded topic %s", name)
        return topic

    async def change_events(self, namespace: str, create: bool) -> Topic | None:
        """The namespace's `__change_events` topic (topic policies), loaded, when this broker
        serves it; None when another broker does, or when it does not exist and create is False."""
        return await self.system_topic(change_events_topic(namespace), create)

    async def system_topic(self, name: TopicName, create: bool) -> Topic | None:
        """A namespace's system topic (`__change_events`, `__transaction_buffer_snapshot`),
        loaded, when this broker serves it; None when another broker does, or when it does not
        exist and create is False."""
        if not self._serves(name) or (not create and str(name) not in self._topics and not await self._exists(name)):
            return None
        try:
            topic = await self._get_or_load(name, Creation.SYSTEM)
        except ServiceNotReady:   # its bundle went to another broker meanwhile
            return None
        assert isinstance(topic, Topic)
        return topic

    async def change_events_view(self, namespace: str) -> ReadOnlyLedger | None:
        """A read-only view of the `__change_events` ledger (the broker serving it writes it);
        None when it does not exist."""
        return await self.system_topic_view(change_events_topic(namespace))

    async def system_topic_view(self, name: TopicName) -> ReadOnlyLedger | None:
        """A read-only view of a system topic's ledger, caught up now (another broker serving
        it writes it); None when it does not exist."""
        return await self.storage.open_read_only(str(name))

    def _topic_policies_changed(self, parent: TopicName) -> None:
        self._refresh_policies(t for t in self._loaded() if str(t.name.partitioned_parent) == str(parent))

    def _namespace_policies_changed(self, namespace: str) -> None:
        self._refresh_policies(t for t in self._loaded() if t.name.namespace == namespace)

    def _refresh_policies(self, topics: "Iterable[Topic | NonPersistentTopic]") -> None:
        for topic in topics:
            asyncio.get_running_loop().create_task(self.refresh_policies(topic))

    async def refresh_policies(self, topic: "Topic | NonPersistentTopic") -> None:
        """Give a loaded topic the policies in force now (after a change, and periodically, for
        changes made through another broker)."""
        apply_policies(topic, await self.applied.of(topic.name), self.config, self.rate_limits)

    def check_serves(self, name: TopicName) -> None:
        """ServiceNotReady when another broker of the cluster serves the topic."""
        if self.served is not None and not is_heartbeat_namespace(self.config, name.namespace):
            self.served.check_serves(name)

    def _serves(self, name: TopicName) -> bool:
        try:
            self.check_serves(name)
        except ServiceNotReady:
            return False
        return True

    async def _exists(self, name: TopicName) -> bool:
        """A stored ledger, a partition of a partitioned topic, or a live non-persistent topic."""
        if name.persistent and await self.storage.ledger_exists(str(name)):
            return True
        if not name.persistent and any(str(t.name) == str(name) for t in self.non_persistent_topics):
            return True
        parent = name.partitioned_parent
        return parent is not name and name.partition_index < await self.partitioned.count(parent)

    async def auto_topic_creation(self, name: TopicName) -> AutoTopicCreation:
        """The auto-creation rule of the topic's namespace; NamespaceNotFound when that namespace
        (or its tenant) does not exist: no topic is created there, as in Pulsar. This broker's
        heartbeat namespace has no Policies and always allows it (Pulsar's system namespaces)."""
        if is_heartbeat_namespace(self.config, name.namespace):
            return AutoTopicCreation(True, 0)
        policies = await self.policies.shared(name.namespace)
        if policies is None:
            raise NamespaceNotFound(f"Namespace {name.namespace} does not exist")
        return auto_topic_creation(self.config, policies)

    async def unload_topic(self, name: TopicName) -> bool:
        """Close a loaded topic; its clients are told to reconnect (and load it again)."""
        loading = self._topics.pop(str(name), None)
        if loading is not None:
            self._forget_one(name)
        topic = _settled(loading)
        if topic is None:
            return False
        for producer in list(topic.producers):
            producer.close_by_broker()
        for subscription in list(topic.subscriptions.values()):
            for consumer in subscription.consumers:
                consumer.close_by_broker()
        closing = asyncio.get_running_loop().create_task(topic.close())
        self._unloading[str(name)] = closing
        try:
            await asyncio.shield(closing)
        finally:
            if self._unloading.get(str(name)) is closing:
                del self._unloading[str(name)]
        log.info("unloaded topic %s", name)
        return True

    async def delete_topic(self, name: TopicName, force: bool) -> None:
        """Delete a topic and its data; without force only while no client is connected."""
        if not await self._exists(name):
            raise TopicNotFound(f"Topic {name} does not exist")
        await self._remove_topic(name, force)

    async def _remove_topic(self, name: TopicName, force: bool) -> None:
        loaded = next((t for t in self._loaded() if str(t.name) == str(name)), None)
        if loaded is not None and not force and (
                loaded.producers or any(s.consumers for s in loaded.subscriptions.values())):
            raise NotAllowed("Topic has active producers/subscriptions")
        pending_ack_logs = await self._pending_ack_logs(name)
        await self.unload_topic(name)
        if name.persistent:
            await self.storage.delete_ledger(str(name))
            for log_name in pending_ack_logs:
                await self.storage.delete_ledger(log_name)
            await delete_topic_state(self.metadata, name)
            if self.transaction_snapshots is not None and not is_system_topic(name):
                await self.transaction_snapshots.remove(name)
        if name.partition_index < 0 and not is_system_topic(name):
            await self.topic_policies.remove(name)
        log.info("deleted topic %s", name)

    async def _pending_ack_logs(self, name: TopicName) -> list[str]:
        """The pending-ack logs its subscriptions may have (with transactions on), which go
        with the topic, as Pulsar deletes each subscription's."""
        if not (name.persistent and self.config.transaction_coordinator_enabled):
            return []
        try:
            topic = await self.get_topic(name, create=False)
        except BrokerError as exc:   # not loadable here: its subscriptions are unknown
            log.warning("deleting topic %s: its pending-ack logs stay: %s", name, exc)
            return []
        return [pending_ack_log_name(str(name), sub) for sub in topic.subscriptions]

    # -- partitioned topics -----------------------------------------------------------------

    async def partitioned_count(self, name: TopicName) -> int:
        """Partitions of a partitioned topic, 0 for any other name (never creates one)."""
        return 0 if name.partition_index >= 0 else await self.partitioned.count(name)

    async def topic_exists(self, name: TopicName) -> bool:
        return await self._exists(name) or await self.partitioned_count(name) > 0

    async def partitions_of(self, name: TopicName, auto_create: bool = True) -> int:
        """PARTITIONED_METADATA: the stored count, 0 for a plain topic. A topic not there yet
        needs its namespace; it is created partitioned when the client (PIP-344 `auto_create`)
        and the namespace's rule allow creation and the rule says partitioned (else 0: created
        plain on first use); when either refuses, it is TopicNotFound, as in Pulsar."""
        if str(name) == TRANSACTION_COORDINATOR_ASSIGN and self.transactions is None:
            return 0   # transactions off: whatever an earlier run with them on stored
        partitions = await self.partitioned_count(name)
        if partitions:
            return partitions
        rule = await self.auto_topic_creation(name)
        creates = auto_create and rule.allowed
        plain = rule.partitions == 0 or name.partition_index >= 0 or str(name) == TRANSACTION_COORDINATOR_ASSIGN
        if (creates and plain) or await self._exists(name):
            return 0
        if not creates:
            raise TopicNotFound(f"Topic {name} does not exist")
        return await self.create_partitioned(name, rule.partitions, exist_ok=True)

    async def create_partitioned(self, name: TopicName, partitions: int, exist_ok: bool = False) -> int:
        try:
            await self.partitioned.create(name, partitions)
        except MetadataBadVersionError:  # created meanwhile by another request
            if not exist_ok:
                raise
            return await self.partitioned.count(name)
        log.info("created partitioned topic %s with %d partitions", name, partitions)
        return partitions

    async def delete_partitioned(self, name: TopicName, force: bool) -> None:
        """Delete a partitioned topic: its partitions that exist, then its metadata."""
        partitions = await self.partitioned.count(name)
        if partitions == 0:
            raise TopicNotFound(f"Partitioned topic {name} does not exist")
        for index in range(partitions):
            await self._remove_topic(name.partition(index), force)
        await self.partitioned.delete(name)
        await self.topic_policies.remove(name)
        log.info("deleted partitioned topic %s", name)

    async def partitioned_topics_of(self, namespace: str, domain: str) -> list[str]:
        return await self.partitioned.names(namespace, domain)

    async def delete_partitioned_in(self, namespace: str) -> None:
        for domain in ("persistent", "non-persistent"):
            for name in await self.partitioned_topics_of(namespace, domain):
                await self.delete_partitioned(TopicName.parse(name), force=True)

    # -- namespaces -------------------------------------------------------------------------

    async def topics_of_namespace(self, namespace: str, mode: int, include_system: bool = False) -> list[str]:
        """Every topic of the namespace, partitions included (regex consumers filter them):
        persistent ones from storage, non-persistent ones while they are live, as Pulsar;
        system topics only when asked for. A
        namespace that does not exist is MetadataError, except in the persistent mode (Pulsar
        lists what storage has there: nothing), which regex consumers use by default."""
        try:
            exists = await self.policies.shared(namespace) is not None
        except NotAllowed as exc:  # not tenant/namespace
            raise MetadataError(str(exc)) from None
        if not exists and mode != MODE_PERSISTENT:
            raise MetadataError(f"Policies not found for {namespace} namespace")
        names: set[str] = set()
        if mode in (MODE_PERSISTENT, MODE_ALL):
            names.update(await self.storage.list_ledgers(f"persistent://{namespace}/"))
            names.update(await self._partitions_in(namespace, "persistent"))
        if mode in (MODE_NON_PERSISTENT, MODE_ALL):
            names.update(str(t.name) for t in self.non_persistent_topics if t.name.namespace == namespace)
            names.update(await self._partitions_in(namespace, "non-persistent"))
        return sorted(name for name in names if include_system or not is_system_topic_name(name))

    async def _partitions_in(self, namespace: str, domain: str) -> list[str]:
        names = []
        for parent in map(TopicName.parse, await self.partitioned_topics_of(namespace, domain)):
            names.extend(str(parent.partition(i)) for i in range(await self.partitioned.count(parent)))
        return names

    async def close(self) -> None:
        for chore in self._chores:
            await chore.stop()
        if self.transactions is not None:
            await self.transactions.close()
        for connection in list(self.connections):
            connection.close()
        # all at once, so their final metadata writes share the store's commits (one by one,
        # 10,000 topics took some 20 s to stop); system topics last, as topics write to them
        loaded = self._loaded()
        for system in (False, True):
            closing = [topic.close() for topic in loaded if is_system_topic(topic.name) is system]
            for outcome in await asyncio.gather(*closing, return_exceptions=True):
                if isinstance(outcome, Exception):
                    log.error("closing a topic at stop: %s", outcome)
        self._topics.clear()
        self._per_namespace.clear()


def _settled(entry: "Topic | NonPersistentTopic | asyncio.Task") -> "Topic | NonPersistentTopic | None":
    """The topic an entry of BrokerService._topics holds; None while it loads or if it failed."""
    if not isinstance(entry, asyncio.Task):
        return entry
    return entry.result() if entry.done() and not entry.cancelled() and entry.exception() is None else None
