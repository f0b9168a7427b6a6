"""The coordinators this broker runs (Pulsar's TransactionMetadataStoreService).

Coordinator i is served by whoever serves partition i of
`persistent://pulsar/system/transaction_coordinator_assign` (this broker standalone; the owner
of that partition's bundle in a cluster). It opens on the first TC_CLIENT_CONNECT for it, as in
Pulsar 3.0 (a standalone broker opens its own at start): its log is replayed, transactions caught
ending are ended, and open ones get their timeouts again. It closes when its bundle is released.

END_TXN logs COMMITTING (or ABORTING) durably, which decides the outcome; then every partition
and subscription the transaction touched is ended through TransactionParticipants, retried
until each succeeds; then COMMITTED (ABORTED) is logged and the client answered.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Callable, Protocol

from log_limits.repeats import RepeatLimitedLog
from managed_ledger.interfaces import MetadataStore
from server.errors import ServiceNotReady
from server.testing.crash_points import crash_point
from server.topics.topic_name import TopicName
from server.transactions.interfaces import ABORT, COMMIT, TransactionParticipants, TxnID

from .errors import CoordinatorNotFound, InvalidTxnStatus
from .metadata_store import TransactionMetadataStore, TxnMeta, TxnStatus, now_ms
from .txn_log import LedgerOpener, TransactionLog

log = logging.getLogger(__name__)
_repeats = RepeatLimitedLog(log)

#: Pulsar creates this partitioned topic only for a running transaction coordinator; clients read
#: its partition count 0 as "transactions are off" and refuse at once (never auto-created).
TRANSACTION_COORDINATOR_ASSIGN = "persistent://pulsar/system/transaction_coordinator_assign"
#: What Pulsar standalone creates, and what `pulsar initialize-cluster-metadata` does by default.
STANDALONE_COORDINATORS = 1
CLUSTER_COORDINATORS = 16
#: Pulsar's endTransactionRetryIntervalTime.
RETRY_INTERVAL_S = 1.0
CRASH_AFTER_ENDING_LOGGED = "coordinator-after-ending-logged"
CRASH_AFTER_A_PARTICIPANT = "coordinator-after-a-participant-ended"


class AssignTopic(Protocol):
    """Where the assign topic's partitions are kept, and who serves them."""

    async def create_partitioned(self, name: TopicName, partitions: int, exist_ok: bool = False) -> int: ...

    def check_serves(self, name: TopicName) -> None:
        """ServiceNotReady when another broker serves it."""


def assign_partition(tc_id: int) -> TopicName:
    return TopicName.parse(TRANSACTION_COORDINATOR_ASSIGN).partition(tc_id)


class TransactionCoordinators:
    def __init__(self, storage: LedgerOpener, metadata: MetadataStore, assign: AssignTopic,
                 participants: TransactionParticipants, max_active: int, participant_timeout_s: float) -> None:
        self._storage = storage
        self._metadata = metadata
        self._assign = assign
        self._participants = participants
        self._max_active = max_active
        self._participant_timeout_s = participant_timeout_s
        self.count = 0
        self.stores: dict[int, TransactionMetadataStore] = {}
        self._opening: dict[int, asyncio.Task[TransactionMetadataStore]] = {}
        self._ending: dict[TxnID, asyncio.Task[None]] = {}
        self._timeouts: dict[TxnID, asyncio.TimerHandle] = {}
        self._tasks: set[asyncio.Task] = set()
        #: (start, end) in ms of each coordinator's recovery here (admin stats).
        self.recover_times: dict[int, tuple[int, int]] = {}

    async def create_assign_topic(self, count: int) -> None:
        """The assign topic's partitions, once (a cluster keeps the count its first broker made)."""
        self.count = await self._assign.create_partitioned(TopicName.parse(TRANSACTION_COORDINATOR_ASSIGN),
                                                           count, exist_ok=True)

    # -- coordinators ------------------------------------------------------------------------

    async def recover_served(self) -> None:
        """At start: open (and recover) the coordinators this broker serves already, so that a
        transaction caught committing at a crash ends without waiting for a client (standalone:
        all of them; a cluster broker serves none yet, and opens each on its first connect)."""
        for tc_id in range(self.count):
            try:
                await self.connect(tc_id)
            except ServiceNotReady:
                continue

    async def connect(self, tc_id: int) -> None:
        """TC_CLIENT_CONNECT: this broker serves coordinator tc_id, opened and recovered."""
        if not 0 <= tc_id < self.count:   # as Pulsar, which finds no owner for such a partition
            raise ServiceNotReady(f"Namespace bundle for topic ({assign_partition(tc_id)}) not served by this "
                                  f"instance. Please redo the lookup.")
        self._assign.check_serves(assign_partition(tc_id))
        if tc_id in self.stores:
            return
        opening = self._opening.get(tc_id)
        if opening is None:
            opening = self._opening[tc_id] = asyncio.get_running_loop().create_task(self._open(tc_id))
            opening.add_done_callback(lambda _: self._opening.pop(tc_id, None))
        await asyncio.shield(opening)

    async def _open(self, tc_id: int) -> TransactionMetadataStore:
        started = now_ms()
        store = TransactionMetadataStore(await TransactionLog.open(tc_id, self._storage, self._metadata),
                                         self._max_active)
        try:
            await store.replay()
        except BaseException:
            await store.close()
            raise
        self.stores[tc_id] = store
        self.recover_times[tc_id] = (started, now_ms())
        for meta in list(store.txns.values()):
            if meta.status is TxnStatus.OPEN:
                self._arm_timeout(meta)
            else:
                self._background(self.end_txn(meta.txn, COMMIT if meta.status is TxnStatus.COMMITTING else ABORT))
        log.info("transaction coordinator %d ready: %d transactions recovered, next id %d",
                 tc_id, len(store.txns), store.sequence + 1)
        return store

    def store(self, tc_id: int) -> TransactionMetadataStore:
        """The serving coordinator; CoordinatorNotFound (the client looks it up again) when it
        is not open here, or its partition went to another broker (it is closed then)."""
        store = self.stores.get(tc_id)
        if store is None:
            raise CoordinatorNotFound(tc_id)
        try:
            self._assign.check_serves(assign_partition(tc_id))
        except ServiceNotReady:
            self._background(self._close(tc_id))
            raise CoordinatorNotFound(tc_id) from None
        return store

    def served_partitions(self) -> list[TopicName]:
        """The assign topic's partitions of the coordinators open here."""
        return [assign_partition(tc_id) for tc_id in self.stores]

    async def close_coordinator(self, name: TopicName) -> bool:
        """Close the coordinator of that assign partition (its bundle is being released);
        False when the name is not one of them."""
        if str(name.partitioned_parent) != TRANSACTION_COORDINATOR_ASSIGN or name.partition_index not in self.stores:
            return False
        await self._close(name.partition_index)
        return True

    async def _close(self, tc_id: int) -> None:
        store = self.stores.pop(tc_id, None)
        if store is None:
            return
        for txn in [t for t in self._timeouts if t.most_bits == tc_id]:
            self._timeouts.pop(txn).cancel()
        await store.close()
        log.info("transaction coordinator %d closed", tc_id)

    async def close(self) -> None:
        """Ends under way stop here; the next start finishes them (they are logged)."""
        for task in [*self._tasks, *self._ending.values()]:
            task.cancel()
        for tc_id in list(self.stores):
            await self._close(tc_id)

    # -- transactions ------------------------------------------------------------------------

    async def new_txn(self, tc_id: int, timeout_ms: int, owner: str | None) -> TxnID:
        meta = await self.store(tc_id).new_txn(timeout_ms, owner)
        self._arm_timeout(meta)
        return meta.txn

    def get(self, txn: TxnID) -> TxnMeta:
        return self.store(txn.most_bits).get(txn)

    async def add_partitions(self, txn: TxnID, partitions: list[str]) -> None:
        await self.store(txn.most_bits).add_partitions(txn, partitions)

    async def add_subscriptions(self, txn: TxnID, subscriptions: list[tuple[str, str]]) -> None:
        await self.store(txn.most_bits).add_subscriptions(txn, subscriptions)

    async def end_txn(self, txn: TxnID, action: int, timed_out: bool = False) -> None:
        """Commit or abort: decided once COMMITTING/ABORTING is logged; done once every
        participant has ended it and COMMITTED/ABORTED is logged. Repeating the same end while
        it is under way waits for it; the other end is InvalidTxnStatus."""
        store = self.store(txn.most_bits)
        meta = store.get(txn)
        ending = TxnStatus.COMMITTING if action == COMMIT else TxnStatus.ABORTING
        if meta.status is TxnStatus.OPEN:
            await store.update_status(txn, ending, timed_out)
            crash_point(CRASH_AFTER_ENDING_LOGGED)
            timeout = self._timeouts.pop(txn, None)
            if timeout is not None:
                timeout.cancel()
        elif meta.status is not ending:
            raise InvalidTxnStatus(txn, ending.value, meta.status.value)
        task = self._ending.get(txn)
        if task is None:
            task = self._ending[txn] = asyncio.get_running_loop().create_task(self._finish(store, meta, action))
            task.add_done_callback(lambda _: self._ending.pop(txn, None))
        await asyncio.shield(task)

    async def _finish(self, store: TransactionMetadataStore, meta: TxnMeta, action: int) -> None:
        calls = [lambda p=p: self._participants.end_on_partition(p, meta.txn, action) for p in meta.partitions]
        calls += [lambda s=s: self._participants.end_on_subscription(s[0], s[1], meta.txn, action)
                  for s in meta.subscriptions]
        await asyncio.gather(*(self._until_done(call, meta.txn) for call in calls))
        await store.update_status(meta.txn, TxnStatus.COMMITTED if action == COMMIT else TxnStatus.ABORTED)

    async def _until_done(self, call: Callable, txn: TxnID) -> None:
        """The outcome is decided: a participant that fails (unreachable, its topic moving) is
        asked again until it succeeds. One slower than transactionBufferClientOperationTimeoutInMills
        is waited for, never cancelled (an end cut off half way would be repeated)."""
        while True:
            attempt = asyncio.ensure_future(call())
            try:
                while not (await asyncio.wait({attempt}, timeout=self._participant_timeout_s))[0]:
                    _repeats.warning("slow", "ending transaction %s: a participant has not answered in %.0f s",
                                     txn, self._participant_timeout_s)
            finally:
                attempt.cancel()   # only when we are cancelled ourselves (shutdown): it is done otherwise
            if attempt.exception() is None:
                crash_point(CRASH_AFTER_A_PARTICIPANT)
                return
            _repeats.warning(type(attempt.exception()).__name__,
                             "ending transaction %s on a participant failed, retrying: %r", txn, attempt.exception())
            await asyncio.sleep(RETRY_INTERVAL_S)

    def _arm_timeout(self, meta: TxnMeta) -> None:
        delay_s = max(0.0, (meta.timeout_at_ms - now_ms()) / 1000)
        self._timeouts[meta.txn] = asyncio.get_running_loop().call_later(delay_s, self._timed_out, meta.txn)

    def _timed_out(self, txn: TxnID) -> None:
        self._timeouts.pop(txn, None)
        store = self.stores.get(txn.most_bits)
        meta = store.txns.get(txn) if store is not None else None
        if meta is not None and meta.status is TxnStatus.OPEN:
            log.info("transaction %s timed out: aborting it", txn)
            self._background(self.end_txn(txn, ABORT, timed_out=True))

    def _background(self, work) -> None:
        task = asyncio.get_running_loop().create_task(self._logged(work))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    @staticmethod
    async def _logged(work) -> None:
        try:
            await work
        except Exception as exc:   # the client (or the next recovery) repeats it
            _repeats.warning(type(exc).__name__, "transaction coordinator: %r", exc)
