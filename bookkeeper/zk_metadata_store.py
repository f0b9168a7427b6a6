"""The metadata store on Apache ZooKeeper (``metadataStoreUrl=zk:host:port[,host:port][/chroot]``).

Same contract as the embedded store (metadata_store.py): versions from 0 growing by one per
put (they are the znodes' own data versions), ``expected_version=-1`` creates only, ``n``
updates only version n, NotFound / BadVersion alike. On top of it, what a cluster needs:
ephemeral nodes (gone with the session that made them), watches (data and children, called on
the event loop) and session events (suspended / reconnected / expired).

Built on kazoo: the ZooKeeper client in pure Python that is kept up (Python 3.8-3.13, used by
OpenStack and others), speaking the real ZooKeeper protocol with sessions, chroots, watches,
ephemeral nodes and multi; no C extension to build (zkpython needs the ZooKeeper C client),
and an ``*_async`` call per operation whose completion we can hand to the event loop.

kazoo is thread-based: each ``*_async`` call returns at once, and its result arrives on kazoo's
own threads. We never wait on it from the event loop: the completion is passed back to a loop
future with ``call_soon_threadsafe``. The few blocking kazoo calls (start, stop, a watch's first
read) run in the loop's default executor.

The embedded store's parents are implicit; ZooKeeper needs real parent znodes. They are made
on demand with empty data, and **an empty value reads as absent** (get gives None, create with
-1 over it succeeds); deleting a node that still has children empties it instead, and a delete
also removes the empty, childless parents it leaves behind. So ``children()`` lists what the
embedded store lists. Store no empty values through this interface.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from typing import Any, Callable

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (BadVersionError, ConnectionLoss, KazooException, NoNodeError,
                              NodeExistsError, NotEmptyError, SessionExpiredError)
from kazoo.recipe.watchers import ChildrenWatch, DataWatch
from kazoo.retry import KazooRetry

from log_limits.repeats import RepeatFilter

from .config import ZK_URL_PREFIX
from .errors import (MetadataBadVersionError, MetadataNotFoundError, MetadataSessionLostError,
                     MetadataStoreError)
from .metadata_store import _check_path

logger = logging.getLogger(__name__)
# while ZooKeeper is away kazoo logs each reconnection attempt: a flood, held back to a line
logging.getLogger("kazoo.client").addFilter(RepeatFilter())

URL_PREFIX = ZK_URL_PREFIX


class SessionEvent(enum.Enum):
    SUSPENDED = "suspended"      # connection lost; the session may still live
    RECONNECTED = "reconnected"  # back, same session: ephemeral nodes and watches are intact
    EXPIRED = "expired"          # the session is gone, and its ephemeral nodes with it


def parse_zk_url(url: str) -> tuple[str, str]:
    """``zk:h1:p1,h2:p2/chroot`` -> ("h1:p1,h2:p2", "/chroot" or "")."""
    if not url.startswith(URL_PREFIX):
        raise MetadataStoreError(f"not a ZooKeeper metadata store url: {url!r}")
    rest = url[len(URL_PREFIX):].removeprefix("//")
    hosts, slash, chroot = rest.partition("/")
    if not hosts:
        raise MetadataStoreError(f"no ZooKeeper host in {url!r}")
    chroot = ("/" + chroot.rstrip("/")) if slash and chroot.strip("/") else ""
    return hosts, chroot


class ZkMetadataStore:
    """A versioned tree of byte values in ZooKeeper; implements managed_ledger's MetadataStore."""

    def __init__(self, client: KazooClient, loop: asyncio.AbstractEventLoop, chroot: str,
                 session_timeout_s: float = 10.0, hosts: str = "") -> None:
        self._zk = client
        self._loop = loop
        self._chroot = chroot
        self._session_timeout_s = session_timeout_s
        self._servers = _servers(hosts)
        self._listeners: list[Callable[[SessionEvent], None]] = []
        self._closed = False
        #: the session is taken as lost (expired, or unreachable past its timeout) until the
        #: client is connected again: calls fail at once instead of waiting in kazoo's queue
        self._lost = False
        self._watching: asyncio.Task | None = None   # while suspended
        self._pending: set[asyncio.Future] = set()
        client.add_listener(self._on_state)

    @classmethod
    async def open(cls, url: str, session_timeout_s: float = 10.0) -> ZkMetadataStore:
        hosts, chroot = parse_zk_url(url)
        loop = asyncio.get_running_loop()
        if chroot:
            await loop.run_in_executor(None, _ensure_chroot, hosts, chroot, session_timeout_s)
        client = KazooClient(hosts=hosts + chroot, timeout=session_timeout_s,
                             connection_retry=_reconnecting(session_timeout_s))
        try:
            await loop.run_in_executor(None, lambda: client.start(timeout=session_timeout_s))
        except Exception as exc:  # kazoo raises a bare timeout, or a handler error
            await loop.run_in_executor(None, client.close)
            raise MetadataStoreError(f"cannot connect to ZooKeeper at {hosts}: {exc}") from exc
        logger.info("metadata store on ZooKeeper %s%s", hosts, chroot)
        return cls(client, loop, chroot, session_timeout_s, hosts)

    @property
    def client(self) -> KazooClient:
        """The kazoo client (for components that speak ZooKeeper directly, like the
        BookKeeper client's ledger metadata)."""
        return self._zk

    # ---- the MetadataStore contract ---------------------------------------------------------

    async def get(self, path: str) -> tuple[bytes, int] | None:
        _check_path(path)
        try:
            data, stat = await self.call(self._zk.get_async, path)
        except MetadataNotFoundError:
            return None
        if not data:
            return None
        return bytes(data), stat.version

    async def put(self, path: str, value: bytes, expected_version: int | None = None) -> int:
        """Store value; -1 as expected_version means "must not exist". Returns the new version."""
        _check_path(path)
        value = bytes(value)
        if expected_version is not None and expected_version >= 0:
            stat = await self.call(self._zk.set_async, path, value, expected_version)
            return stat.version
        while True:
            if expected_version is None:
                try:
                    stat = await self.call(self._zk.set_async, path, value, -1)
                    return stat.version
                except MetadataNotFoundError:
                    pass
            try:
                await self.call(self._zk.create_async, path, value, makepath=True)
                return 0
            except MetadataBadVersionError:
                if expected_version is None:
                    continue
            try:
                data, stat = await self.call(self._zk.get_async, path)
            except MetadataNotFoundError:
                continue  # deleted in between: create again
            if expected_version == -1 and data:
                raise MetadataBadVersionError(f"{path} already exists (version {stat.version})")
            try:  # an empty (implicit parent) node, or an unconditional put
                stat = await self.call(self._zk.set_async, path, value, stat.version)
                return stat.version
            except (MetadataBadVersionError, MetadataNotFoundError):
                if expected_version == -1:
                    raise MetadataBadVersionError(f"{path} was created concurrently") from None
                continue

    async def delete(self, path: str, expected_version: int | None = None) -> None:
        _check_path(path)
        version = -1 if expected_version is None else expected_version
        try:
            await self.call(self._zk.delete_async, path, version)
        except _NotEmpty:
            # still a parent: becomes an implicit one (empty), as in the embedded store
            data, stat = await self.call(self._zk.get_async, path)
            if not data:
                raise MetadataNotFoundError(path) from None
            await self.call(self._zk.set_async, path, b"", version)
            return
        await self._prune_parents(path)

    async def children(self, path: str, starting: str = "") -> list[str]:
        """The names below ``path`` (only those starting with ``starting``), sorted."""
        _check_path(path)
        try:
            names = await self.call(self._zk.get_children_async, path)
        except MetadataNotFoundError:
            return []
        if path == "/" and not self._chroot:
            names = [n for n in names if n != "zookeeper"]
        return sorted(n for n in names if n.startswith(starting))

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._stop_watching()
        self._zk.remove_listener(self._on_state)
        await self._loop.run_in_executor(None, self._stop_client)

    # ---- cluster additions ------------------------------------------------------------------

    async def put_ephemeral(self, path: str, value: bytes) -> int:
        """Create a node that lives as long as this store's session; BadVersion if it exists."""
        _check_path(path)
        await self.call(self._zk.create_async, path, bytes(value), ephemeral=True, makepath=True)
        return 0

    async def watch_data(self, path: str,
                         on_change: Callable[[tuple[bytes, int] | None], None]) -> Callable[[], None]:
        """Call on_change (on the loop) with the node's (value, version), or None while absent,
        now and after every change; returns a function that stops the watch."""
        stopped = False

        def changed(data: bytes | None, stat: Any) -> bool | None:
            if stopped or self._closed:
                return False
            value = (bytes(data), stat.version) if data and stat is not None else None
            try:
                self._loop.call_soon_threadsafe(_call_unless, lambda: stopped, on_change, value)
            except RuntimeError:
                return False  # the loop is closed
            return None

        await self._loop.run_in_executor(None, lambda: DataWatch(self._zk, path, changed))

        def stop() -> None:
            nonlocal stopped
            stopped = True
        return stop

    async def watch_children(self, path: str,
                             on_change: Callable[[list[str]], None]) -> Callable[[], None]:
        """Call on_change (on the loop) with the sorted children of path, now and after every
        change of the set; returns a function that stops the watch."""
        stopped = False
        await self.call(self._zk.ensure_path_async, path)

        def changed(children: list[str]) -> bool | None:
            if stopped or self._closed:
                return False
            try:
                self._loop.call_soon_threadsafe(_call_unless, lambda: stopped, on_change,
                                                sorted(children))
            except RuntimeError:
                return False  # the loop is closed
            return None

        await self._loop.run_in_executor(None, lambda: ChildrenWatch(self._zk, path, changed))

        def stop() -> None:
            nonlocal stopped
            stopped = True
        return stop

    async def ephemeral_owner(self, path: str) -> int | None:
        """The session that created the ephemeral node at path; None without one."""
        _check_path(path)
        stat = await self.call(self._zk.exists_async, path)
        return stat.ephemeralOwner if stat is not None and stat.ephemeralOwner else None

    def add_session_listener(self, listener: Callable[[SessionEvent], None]) -> None:
        """listener(event) on the loop when the connection or session changes."""
        self._listeners.append(listener)

    @property
    def session_id(self) -> int:
        return self._zk.client_id[0] if self._zk.client_id else 0

    # ---- internals --------------------------------------------------------------------------

    def call(self, method: Callable[..., Any], *args: Any, **kwargs: Any) -> asyncio.Future:
        """Run a kazoo ``*_async`` call; its outcome settles a loop future (never blocks)."""
        if self._closed:
            raise MetadataStoreError("metadata store is closed")
        future = self._loop.create_future()
        path = args[0] if args else "?"
        if self._lost:
            future.set_exception(MetadataSessionLostError(f"ZooKeeper session lost, on {path}"))
            return future
        self._pending.add(future)
        future.add_done_callback(self._pending.discard)
        try:
            async_result = method(*args, **kwargs)
        except KazooException as exc:
            future.set_exception(_translate(exc, path))
            return future

        def done(result: Any) -> None:  # on a kazoo thread
            try:
                outcome, error = result.get_nowait(), None
            except Exception as exc:  # noqa: BLE001 - every failure goes to the future
                outcome, error = None, _translate(exc, path)
            try:
                self._loop.call_soon_threadsafe(_settle, future, outcome, error)
            except RuntimeError:
                pass  # the loop is closed: nobody waits any more

        async_result.rawlink(done)
        return future

    async def _prune_parents(self, path: str) -> None:
        parent = path.rsplit("/", 1)[0]
        while parent:
            try:
                data, stat = await self.call(self._zk.get_async, parent)
                if data or stat.numChildren:
                    return
                await self.call(self._zk.delete_async, parent, stat.version)
            except MetadataStoreError:
                return  # someone else is using it, or it is already gone
            parent = parent.rsplit("/", 1)[0]

    def _on_state(self, state: str) -> None:
        """kazoo thread: map connection states to session events."""
        if state == KazooState.LOST:
            event = SessionEvent.EXPIRED
        elif state == KazooState.SUSPENDED:
            event = SessionEvent.SUSPENDED
        else:
            event = SessionEvent.RECONNECTED
        try:
            self._loop.call_soon_threadsafe(self._state_changed, event)
        except RuntimeError:
            pass  # the loop is closed

    def _state_changed(self, event: SessionEvent) -> None:
        """On the loop. An expiry heard after the session was taken as lost is not told twice."""
        if event is not SessionEvent.SUSPENDED:
            self._stop_watching()
        if event is SessionEvent.EXPIRED:
            if not self._lost:
                self._session_lost("ZooKeeper session expired: ephemeral nodes are gone")
            return
        if event is SessionEvent.SUSPENDED and self._watching is None and not self._lost:
            self._watching = self._loop.create_task(self._watch_suspension())
        elif event is SessionEvent.RECONNECTED:
            self._lost = False
        self._notify(event)

    async def _watch_suspension(self) -> None:
        """Cut off from ZooKeeper for a whole session timeout while it runs, the session is
        taken as lost, as Pulsar's session watcher does: ZooKeeper expires it meanwhile, and
        another broker may own our bundles already; kazoo would only learn it on reconnecting.
        But ZooKeeper expires sessions only while it runs, and gives each its whole timeout
        again when it starts: while every server refuses connections (ZooKeeper is down, not
        away), the count starts over, and the topics keep being served."""
        timeout = self._session_timeout_s
        deadline = self._loop.time() + timeout
        while (left := deadline - self._loop.time()) > 0:
            await asyncio.sleep(min(left, timeout / 4))
            if await self._no_server_runs():
                deadline = self._loop.time() + timeout
        self._watching = None
        self._session_lost("ZooKeeper unreachable for the session timeout: its session is taken as lost")

    async def _no_server_runs(self) -> bool:
        for host, port in self._servers:
            try:
                _, writer = await asyncio.wait_for(asyncio.open_connection(host, port),
                                                   self._session_timeout_s / 4)
            except ConnectionRefusedError:
                continue
            except (OSError, asyncio.TimeoutError):
                return False
            writer.close()
            return False
        return bool(self._servers)

    def _stop_watching(self) -> None:
        if self._watching is not None:
            self._watching.cancel()
            self._watching = None

    def _session_lost(self, why: str) -> None:
        """Calls waiting for ZooKeeper fail now (their outcome is unknown: one may still be
        applied once the client is connected again, as after any connection loss)."""
        self._lost = True
        logger.warning(why)
        for future in list(self._pending):
            if not future.done():
                future.set_exception(MetadataSessionLostError(why))
        self._notify(SessionEvent.EXPIRED)

    def _notify(self, event: SessionEvent) -> None:
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:  # noqa: BLE001
                logger.exception("session listener failed")

    def _stop_client(self) -> None:
        try:
            self._zk.stop()
        finally:
            self._zk.close()


class _NotEmpty(MetadataStoreError):
    pass


def _translate(exc: BaseException, path: str) -> BaseException:
    if isinstance(exc, NoNodeError):
        return MetadataNotFoundError(path)
    if isinstance(exc, (BadVersionError, NodeExistsError)):
        return MetadataBadVersionError(f"{path}: {type(exc).__name__}")
    if isinstance(exc, NotEmptyError):
        return _NotEmpty(path)
    if isinstance(exc, (SessionExpiredError, ConnectionLoss)):
        return MetadataSessionLostError(f"ZooKeeper {type(exc).__name__} on {path}")
    if isinstance(exc, MetadataStoreError):
        return exc
    return MetadataStoreError(f"ZooKeeper {type(exc).__name__} on {path}: {exc}")


def _settle(future: asyncio.Future, outcome: Any, error: BaseException | None) -> None:
    if future.done():
        return
    if error is None:
        future.set_result(outcome)
    else:
        future.set_exception(error)


def _call_unless(stopped: Callable[[], bool], callback: Callable[[Any], None], value: Any) -> None:
    if not stopped():
        callback(value)


def _servers(hosts: str) -> list[tuple[str, int]]:
    """(host, port) of each server of a connect string (port 2181 when none is given)."""
    servers = []
    for each in filter(None, hosts.split(",")):
        host, _, port = each.rpartition(":") if ":" in each else (each, "", "2181")
        servers.append((host, int(port)))
    return servers


def _reconnecting(session_timeout_s: float) -> KazooRetry:
    """Retry connecting forever, at least every quarter of the session timeout (ZooKeeper's
    Java client waits up to 1 s): kazoo's default backoff doubles up to an hour, so a client
    back after a ZooKeeper restart can miss its session's renewed timeout, and lose it."""
    return KazooRetry(max_tries=-1, delay=0.1, backoff=2, max_jitter=0.1,
                      max_delay=min(1.0, session_timeout_s / 4))


def _ensure_chroot(hosts: str, chroot: str, timeout: float) -> None:
    client = KazooClient(hosts=hosts, timeout=timeout)
    try:
        client.start(timeout=timeout)
        client.ensure_path(chroot)
        client.stop()
    finally:
        client.close()
