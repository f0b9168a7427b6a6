"""One leader broker per cluster, elected as Pulsar elects it: the broker that creates the
ephemeral ``/loadbalance/leader`` node (Pulsar's LeaderBroker JSON: serviceUrl, brokerId) leads
while its ZooKeeper session lives. The others watch the node and run again when it goes, so a
leader killed with kill -9 is replaced once its session expires."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any, Callable

from bookkeeper.zk_metadata_store import SessionEvent
from managed_ledger.errors import MetadataBadVersionError, MetadataNotFoundError, MetadataStoreError

log = logging.getLogger(__name__)

LEADER_PATH = "/loadbalance/leader"


class LeaderElection:
    def __init__(self, store: Any, broker_id: str, service_url: str,
                 on_change: Callable[[bool], None] = lambda leading: None) -> None:
        self._store = store
        self._value = json.dumps({"serviceUrl": service_url, "brokerId": broker_id}).encode()
        self.broker_id = broker_id
        self._on_change = on_change
        self.is_leader = False
        self.leader: dict[str, Any] | None = None   # the LeaderBroker of the node, when there is one
        self._electing = asyncio.Lock()
        self._chores: set[asyncio.Task] = set()
        self._stop_watch: Callable[[], None] | None = None
        self._session_lost = False
        store.add_session_listener(self._on_session)

    async def start(self) -> None:
        """Run for leader, then follow the node (its removal starts a new election)."""
        await self.elect()
        self._stop_watch = await self._store.watch_data(LEADER_PATH, self._node_changed)

    def stop(self) -> None:
        if self._stop_watch is not None:
            self._stop_watch()
        for task in self._chores:
            task.cancel()

    @property
    def leader_id(self) -> str | None:
        return broker_id_of(self.leader)

    async def current(self) -> dict[str, Any] | None:
        """The LeaderBroker, read from the node while this broker has not run yet."""
        if self.leader is None:
            stored = await self._store.get(LEADER_PATH)
            return json.loads(stored[0]) if stored is not None else None
        return self.leader

    async def elect(self) -> None:
        async with self._electing:
            while True:
                try:
                    await self._store.put_ephemeral(LEADER_PATH, self._value)
                    self._set(json.loads(self._value), leading=True)
                    return
                except MetadataBadVersionError:
                    pass
                stored = await self._store.get(LEADER_PATH)
                if stored is None:
                    continue   # gone in between: run again
                if stored[0] == self._value and not self.is_leader:
                    # the node of an earlier session of ours, not expired yet: as Pulsar's
                    # resource locks do, delete it and run again
                    log.info("removing the leader node of an earlier session of this broker")
                    try:
                        await self._store.delete(LEADER_PATH)
                    except MetadataNotFoundError:
                        pass
                    continue
                self._set(json.loads(stored[0]), leading=stored[0] == self._value)
                return

    def _on_session(self, event: SessionEvent) -> None:
        """An expired session took the node with it: lead no more; run again once back."""
        if event is SessionEvent.EXPIRED:
            self._session_lost = True
            self._set(None, leading=False)
        elif event is SessionEvent.RECONNECTED and self._session_lost:
            self._session_lost = False
            self._run(self._elect_logged())

    def _set(self, leader: dict[str, Any] | None, leading: bool) -> None:
        self.leader = leader
        if leading != self.is_leader:
            self.is_leader = leading
            log.info("this broker %s the load balancer leader", "is now" if leading else "is no longer")
            self._on_change(leading)
        elif leader is not None and not leading:
            log.debug("the leader is %s", self.leader_id)

    def _node_changed(self, stored: tuple[bytes, int] | None) -> None:
        if stored is not None:
            self._set(json.loads(stored[0]), leading=self.is_leader and stored[0] == self._value)
            return
        if self.is_leader:
            self._set(None, leading=False)   # deleted under us (our session went)
        self._run(self._elect_logged())

    async def _elect_logged(self) -> None:
        try:
            await self.elect()
        except MetadataStoreError as exc:   # the session is away: the reconnection runs again
            log.warning("leader election failed: %s", exc)

    def _run(self, chore: Any) -> None:
        task = asyncio.get_running_loop().create_task(chore)
        self._chores.add(task)
        task.add_done_callback(self._chores.discard)


def broker_id_of(leader: dict[str, Any] | None) -> str | None:
    """host:webPort (Pulsar before 3.2 writes the serviceUrl only)."""
    if not leader:
        return None
    url = leader.get("serviceUrl")
    return leader.get("brokerId") or (url.split("://", 1)[-1] if url else None)
