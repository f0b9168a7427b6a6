"""BookKeeperClient: the LedgerClient of bookkeeper/interfaces.py on a real BookKeeper cluster.

Chosen by ``bookkeeperMetadataServiceUri=zk+hierarchical://host:port[;host:port]/ledgers``.
Ledger metadata lives in ZooKeeper in BookKeeper's own format and layout (ledger_metadata.py),
so BookKeeper's tools (``BookieShell ledgermetadata``, ``readledger``) and its bookies' garbage
collection see our ledgers; entries go to the bookies over their v3 protocol (codec.py,
connection.py). Ensembles of E bookies, Qw copies per entry, acknowledged after Qa.
"""

from __future__ import annotations

import logging
import time
import weakref
from typing import AsyncIterator

from ..errors import BookKeeperError, MetadataNotFoundError, NoSuchLedgerError
from ..zk_metadata_store import ZkMetadataStore
from .codec import master_key
from .connection import BookiePool
from .ledger_metadata import LedgerMetadata, LedgerState, Segment, ledger_path
from .placement import Placement
from .reads import LedgerReadHandle, LocalWriterView, read_last_confirmed
from .recovery import recover
from .write_handle import LedgerWriteHandle

logger = logging.getLogger(__name__)

URI_SCHEMES = ("zk+hierarchical://", "zk+longhierarchical://", "zk://", "zk+null://")


def parse_service_uri(uri: str) -> tuple[str, str]:
    """``zk+hierarchical://h1:p1;h2:p2/ledgers`` -> ("h1:p1,h2:p2", "/ledgers")."""
    for scheme in URI_SCHEMES:
        if uri.startswith(scheme):
            rest = uri[len(scheme):]
            break
    else:
        raise BookKeeperError(f"unsupported bookkeeperMetadataServiceUri {uri!r} "
                              f"(expected zk+hierarchical://host:port/ledgers)")
    hosts, _, root = rest.partition("/")
    if not hosts:
        raise BookKeeperError(f"no ZooKeeper host in {uri!r}")
    return hosts.replace(";", ","), "/" + (root.strip("/") or "ledgers")


class BookKeeperClient:
    def __init__(self, store: ZkMetadataStore, root: str, ensemble_size: int, write_quorum: int,
                 ack_quorum: int, password: bytes = b"", timeout_s: float = 10.0,
                 speculative_read_s: float = 1.0, explicit_lac_interval_s: float = 0.0) -> None:
        if not ensemble_size >= write_quorum >= ack_quorum >= 1:
            raise BookKeeperError(f"need E >= Qw >= Qa >= 1, got E={ensemble_size} "
                                  f"Qw={write_quorum} Qa={ack_quorum}")
        self.store = store
        self.root = root
        self.ensemble_size = ensemble_size
        self.write_quorum = write_quorum
        self.ack_quorum = ack_quorum
        self.password = password
        self.master_key = master_key(password)
        self.pool = BookiePool(timeout_s)
        self.speculative_read_s = speculative_read_s or 1.0
        #: writers send their LAC after this long idle (0: never), see write_handle.py
        self.explicit_lac_interval_s = explicit_lac_interval_s
        self.placement = Placement(store, root)
        #: ledgers this client writes: opening one without recovery reads the live writer
        self._writers: weakref.WeakValueDictionary[int, LedgerWriteHandle] = \
            weakref.WeakValueDictionary()

    @classmethod
    async def open(cls, service_uri: str, ensemble_size: int = 2, write_quorum: int = 2,
                   ack_quorum: int = 2, password: bytes = b"",
                   timeout_s: float = 10.0, speculative_read_s: float = 1.0,
                   explicit_lac_interval_s: float = 0.0,
                   zk_session_timeout_s: float = 10.0) -> BookKeeperClient:
        hosts, root = parse_service_uri(service_uri)
        store = await ZkMetadataStore.open(f"zk:{hosts}", zk_session_timeout_s)
        if await store.get(f"{root}/LAYOUT") is None:
            await store.close()
            raise BookKeeperError(f"no BookKeeper cluster at {service_uri} ({root}/LAYOUT missing:"
                                  f" run BookieShell metaformat)")
        return cls(store, root, ensemble_size, write_quorum, ack_quorum, password, timeout_s,
                   speculative_read_s, explicit_lac_interval_s)

    # ---- LedgerClient -------------------------------------------------------------------------

    async def create_ledger(self, custom: dict[str, bytes] | None = None,
                            ensemble_size: int | None = None, write_quorum: int | None = None,
                            ack_quorum: int | None = None) -> LedgerWriteHandle:
        size = ensemble_size or self.ensemble_size
        metadata = LedgerMetadata(
            ensemble_size=size, write_quorum=write_quorum or self.write_quorum,
            ack_quorum=ack_quorum or self.ack_quorum,
            segments=(Segment(0, await self.placement.new_ensemble(size)),),
            password=self.password, ctime_ms=int(time.time() * 1000),
            custom=tuple((custom or {"application": b"pulsard"}).items()))
        ledger_id = await self._next_ledger_id()
        version = await self.store.put(ledger_path(self.root, ledger_id), metadata.encode(), -1)
        logger.debug("created ledger %d on %s", ledger_id, metadata.last_ensemble)
        writer = LedgerWriteHandle(self, ledger_id, metadata, version)
        self._writers[ledger_id] = writer
        return writer

    async def open_ledger(self, ledger_id: int,
                          recovery: bool = True) -> LedgerReadHandle | LocalWriterView:
        writer = self._writers.get(ledger_id)
        if writer is not None and not recovery and not writer.is_closed:
            return LocalWriterView(writer)
        metadata, version = await self.read_metadata(ledger_id)
        if recovery and metadata.state is not LedgerState.CLOSED:
            metadata, version = await recover(self, ledger_id, metadata, version)
        if metadata.state is LedgerState.CLOSED:
            lac, length = metadata.last_entry_id, metadata.length
        else:
            lac, length = await read_last_confirmed(self, metadata, ledger_id)
        return LedgerReadHandle(self, ledger_id, metadata, lac, length)

    async def delete_ledger(self, ledger_id: int) -> None:
        """Remove its metadata; the bookies' garbage collection reclaims the entries."""
        try:
            await self.store.delete(ledger_path(self.root, ledger_id))
        except MetadataNotFoundError:
            raise NoSuchLedgerError(f"ledger {ledger_id} does not exist") from None
        logger.debug("deleted ledger %d", ledger_id)

    async def list_ledgers(self, under: str = "") -> AsyncIterator[int]:
        """Every ledger id, walking the (Long)HierarchicalLedgerManager tree: digit folders,
        then ``L`` + digits leaves; the id is their digits joined (other nodes are skipped)."""
        for name in await self.store.children(f"{self.root}{under}"):
            if name.isdigit():
                async for ledger_id in self.list_ledgers(f"{under}/{name}"):
                    yield ledger_id
            elif name[:1] == "L" and name[1:].isdigit() and under:
                yield int(under.replace("/", "") + name[1:])

    async def close(self) -> None:
        await self.pool.close()
        await self.store.close()

    # ---- metadata -------------------------------------------------------------------------------

    async def read_metadata(self, ledger_id: int) -> tuple[LedgerMetadata, int]:
        found = await self.store.get(ledger_path(self.root, ledger_id))
        if found is None:
            raise NoSuchLedgerError(f"ledger {ledger_id} does not exist")
        return LedgerMetadata.decode(found[0]), found[1]

    async def write_metadata(self, ledger_id: int, metadata: LedgerMetadata, version: int) -> int:
        """CAS on the znode version; MetadataBadVersionError when someone else changed it."""
        return await self.store.put(ledger_path(self.root, ledger_id), metadata.encode(), version)

    async def _next_ledger_id(self) -> int:
        """ZkLedgerIdGenerator: the sequence number of an ephemeral sequential node."""
        zk = self.store.client
        path = await self.store.call(zk.create_async, f"{self.root}/idgen/ID-", b"",
                                     ephemeral=True, sequence=True, makepath=True)
        await self.store.call(zk.delete_async, path)
        return int(path.rsplit("ID-", 1)[1])
