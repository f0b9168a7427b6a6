"""The broker service: which topics exist, how they are created, found and listed."""

from __future__ import annotations

import asyncio
import json
import logging
from urllib.parse import quote, unquote

from managed_ledger.errors import MetadataBadVersionError
from managed_ledger.interfaces import ManagedLedgerFactory

from .config import BrokerConfig
from .errors import NotAllowed, TopicNotFound
from .schema_registry import SchemaRegistry
from .topic import Topic
from .topic_name import TopicName

log = logging.getLogger(__name__)

PARTITIONED_TOPICS = "/admin/partitioned-topics"
#: Pulsar creates this partitioned topic only for a running transaction coordinator; clients read
#: its partition count 0 as "transactions are off" and refuse at once (never auto-created here).
TRANSACTION_COORDINATOR_ASSIGN = "persistent://pulsar/system/transaction_coordinator_assign"
#: GET_TOPICS_OF_NAMESPACE modes (CommandGetTopicsOfNamespace.Mode).
MODE_PERSISTENT, MODE_NON_PERSISTENT, MODE_ALL = 0, 1, 2


class BrokerService:
    def __init__(self, config: BrokerConfig, storage: ManagedLedgerFactory) -> None:
        self.config = config
        self.storage = storage
        self.metadata = storage.metadata_store
        self.schemas = SchemaRegistry(self.metadata)
        self.connections: set = set()
        self._topics: dict[str, asyncio.Task[Topic]] = {}

    # -- topics -----------------------------------------------------------------------------

    @property
    def topics(self) -> list[Topic]:
        return [t.result() for t in self._topics.values() if t.done() and not t.exception()]

    async def get_topic(self, name: TopicName, create: bool = True) -> Topic:
        """The loaded topic, loading (and, when allowed, creating) it on first use."""
        if not name.persistent:
            raise NotAllowed(f"Non-persistent topics are not supported yet: {name}")
        key = str(name)
        loading = self._topics.get(key)
        if loading is None:
            loading = asyncio.get_running_loop().create_task(self._load(name, create))
            self._topics[key] = loading
        try:
            return await asyncio.shield(loading)
        except Exception:
            if self._topics.get(key) is loading:
                del self._topics[key]
            raise

    async def _load(self, name: TopicName, create: bool) -> Topic:
        if not (create and self.config.allow_auto_topic_creation) and not await self._exists(name):
            raise TopicNotFound(f"Topic {name} does not exist")
        ledger = await self.storage.open_ledger(str(name))
        log.info("loaded topic %s", name)
        return Topic(self, name, ledger)

    async def _exists(self, name: TopicName) -> bool:
        if str(name) in await self.storage.list_ledgers():
            return True
        parent = name.partitioned_parent
        return parent is not name and name.partition_index < await self._stored_partitions(parent)

    async def lookup(self, name: TopicName) -> str:
        """Every topic is served here: the answer is this broker's own service URL."""
        if not self.config.allow_auto_topic_creation and not await self._exists(name):
            if await self._stored_partitions(name) == 0:
                raise TopicNotFound(f"Topic {name} does not exist")
        return self.config.service_url

    # -- partitioned topics -----------------------------------------------------------------

    @staticmethod
    def _partitions_path(name: TopicName) -> str:
        return f"{PARTITIONED_TOPICS}/{name.domain}/{name.tenant}/{name.namespace_local}/{quote(name.local_name, safe='')}"

    async def _stored_partitions(self, name: TopicName) -> int:
        stored = await self.metadata.get(self._partitions_path(name))
        return json.loads(stored[0])["partitions"] if stored else 0

    async def partitions_of(self, name: TopicName) -> int:
        """PARTITIONED_METADATA: the stored count, or a new partitioned topic when the broker
        auto-creates topics as partitioned and no plain topic of that name exists."""
        if name.partition_index >= 0:
            return 0
        partitions = await self._stored_partitions(name)
        if partitions or not self._auto_creates_partitioned(name) or await self._exists(name):
            return partitions
        return await self.create_partitioned(name, self.config.default_num_partitions, exist_ok=True)

    def _auto_creates_partitioned(self, name: TopicName) -> bool:
        return (
            str(name) != TRANSACTION_COORDINATOR_ASSIGN
            and self.config.allow_auto_topic_creation
            and self.config.allow_auto_topic_creation_type == "partitioned"
            and self.config.default_num_partitions > 0
        )

    async def create_partitioned(self, name: TopicName, partitions: int, exist_ok: bool = False) -> int:
        try:
            await self.metadata.put(self._partitions_path(name), json.dumps({"partitions": partitions}).encode(), -1)
        except MetadataBadVersionError:  # created meanwhile by another request
            if not exist_ok:
                raise
            return await self._stored_partitions(name)
        log.info("created partitioned topic %s with %d partitions", name, partitions)
        return partitions

    # -- namespaces -------------------------------------------------------------------------

    async def topics_of_namespace(self, namespace: str, mode: int) -> list[str]:
        """Every topic of the namespace, partitions included (regex consumers filter them)."""
        if mode == MODE_NON_PERSISTENT:
            return []
        tenant, _, local = namespace.partition("/")
        prefix = f"persistent://{namespace}/"
        names = {n for n in await self.storage.list_ledgers() if n.startswith(prefix)}
        partitioned_dir = f"{PARTITIONED_TOPICS}/persistent/{tenant}/{local}"
        for child in await self.metadata.children(partitioned_dir):
            parent = TopicName("persistent", tenant, local, unquote(child))
            for index in range(await self._stored_partitions(parent)):
                names.add(str(parent.partition(index)))
        return sorted(names)

    async def close(self) -> None:
        for connection in list(self.connections):
            connection.close()
        for topic in self.topics:
            await topic.close()
        self._topics.clear()
