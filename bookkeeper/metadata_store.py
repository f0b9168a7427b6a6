"""The embedded metadata store: a versioned key/value tree on stdlib sqlite3.

Implements managed_ledger.interfaces.MetadataStore (structurally; this layer imports nothing
from above). Semantics follow ZooKeeper so a ZooKeeper/etcd implementation can replace it:

- versions start at 0 on creation and grow by one on every put;
- ``put(..., expected_version=-1)`` creates only (BadVersion if the node exists);
  ``expected_version=n >= 0`` updates only that version (NotFound if missing, BadVersion if
  different); None writes unconditionally;
- ``delete`` of a missing node raises NotFound; parents are implicit (no need to create them);
- ``children(path)`` lists the distinct next path components below ``path``.

Paths are '/'-separated; callers encode names that may contain '/' (urllib quote, safe="").

The database runs in WAL mode with synchronous=FULL: a put that returned survives kill -9.
One dedicated thread owns the connection and group-commits like the journal does: it takes
every queued operation, runs each write inside its own savepoint (so one failing operation does
not undo the others), commits once (one fsync for many cursor flushes) and settles the whole
batch's futures with a single ``call_soon_threadsafe``. Reads need neither: a batch of reads
alone (most of a topic's loading) opens no transaction.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, TypeVar

from .errors import MetadataBadVersionError, MetadataNotFoundError, MetadataStoreError

logger = logging.getLogger(__name__)

T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS nodes (
    path TEXT PRIMARY KEY,
    value BLOB NOT NULL,
    version INTEGER NOT NULL
) WITHOUT ROWID
"""
#: Sorts after every character that may follow '/' in a child path (U+10FFFF in UTF-8).
_PATH_END = "\U0010ffff"


def _check_path(path: str) -> None:
    if not path.startswith("/") or (len(path) > 1 and path.endswith("/")) or "//" in path:
        raise MetadataStoreError(f"invalid metadata path {path!r}")


@dataclass(slots=True)
class _Operation:
    run: Callable[[sqlite3.Connection], Any]
    future: asyncio.Future
    writes: bool


class SqliteMetadataStore:
    """Versioned tree of byte values in one sqlite file, served by one thread."""

    def __init__(self, db_path: Path, loop: asyncio.AbstractEventLoop) -> None:
        self._db_path = db_path
        self._loop = loop
        self._cond = threading.Condition()
        self._queue: collections.deque[_Operation] = collections.deque()
        self._stopping = False
        self._thread = threading.Thread(target=self._serve, name="metadata-store", daemon=True)
        #: Transactions committed, for tests and metrics.
        self.commits = 0

    @classmethod
    async def open(cls, db_path: Path) -> SqliteMetadataStore:
        db_path.parent.mkdir(parents=True, exist_ok=True)
        store = cls(db_path, asyncio.get_running_loop())
        store._thread.start()
        await store._submit(lambda conn: None)
        return store

    async def get(self, path: str) -> tuple[bytes, int] | None:
        _check_path(path)

        def get(conn: sqlite3.Connection) -> tuple[bytes, int] | None:
            row = conn.execute("SELECT value, version FROM nodes WHERE path = ?", (path,)).fetchone()
            return (bytes(row[0]), row[1]) if row is not None else None

        return await self._submit(get, writes=False)

    async def put(self, path: str, value: bytes, expected_version: int | None = None) -> int:
        """Store value; -1 as expected_version means "must not exist". Returns the new version."""
        _check_path(path)
        value = bytes(value)

        def put(conn: sqlite3.Connection) -> int:
            current = _current_version(conn, path)
            _check_version(path, current, expected_version)
            version = 0 if current is None else current + 1
            conn.execute("INSERT OR REPLACE INTO nodes (path, value, version) VALUES (?, ?, ?)",
                         (path, value, version))
            return version

        return await self._submit(put)

    async def delete(self, path: str, expected_version: int | None = None) -> None:
        _check_path(path)

        def delete(conn: sqlite3.Connection) -> None:
            current = _current_version(conn, path)
            if current is None:
                raise MetadataNotFoundError(path)
            _check_version(path, current, expected_version)
            conn.execute("DELETE FROM nodes WHERE path = ?", (path,))

        await self._submit(delete)

    async def children(self, path: str, starting: str = "") -> list[str]:
        """The names below ``path`` (only those starting with ``starting``), sorted."""
        _check_path(path)
        parent = "/" if path == "/" else path + "/"
        prefix = parent + starting

        def children(conn: sqlite3.Connection) -> list[str]:
            rows = conn.execute("SELECT path FROM nodes WHERE path >= ? AND path < ?",
                                (prefix, prefix + _PATH_END))
            return sorted({row[0][len(parent):].split("/", 1)[0] for row in rows})

        return await self._submit(children, writes=False)

    async def children_values(self, path: str) -> dict[str, bytes]:
        """The values of the direct children of ``path`` that have one, by child name: one
        query where ``children`` and a ``get`` each would read them one by one."""
        _check_path(path)
        prefix = "/" if path == "/" else path + "/"

        def children_values(conn: sqlite3.Connection) -> dict[str, bytes]:
            rows = conn.execute("SELECT path, value FROM nodes WHERE path > ? AND path < ?",
                                (prefix, prefix + _PATH_END))
            return {name: bytes(value) for full, value in rows if "/" not in (name := full[len(prefix):])}

        return await self._submit(children_values, writes=False)

    async def close(self) -> None:
        """Finish queued operations, then stop the thread and close the database."""
        with self._cond:
            if self._stopping:
                return
            self._stopping = True
            self._cond.notify()
        await self._loop.run_in_executor(None, self._thread.join)

    def _submit(self, run: Callable[[sqlite3.Connection], T], writes: bool = True) -> asyncio.Future[T]:
        future: asyncio.Future[T] = self._loop.create_future()
        with self._cond:
            if self._stopping:
                raise MetadataStoreError("metadata store is closed")
            self._queue.append(_Operation(run, future, writes))
            if len(self._queue) == 1:   # else the thread has been woken and takes the whole queue
                self._cond.notify()
        return future

    # ---- the store thread ----------------------------------------------------------------

    def _serve(self) -> None:
        try:
            conn = sqlite3.connect(self._db_path, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            conn.execute(_SCHEMA)
        except sqlite3.Error as exc:
            logger.exception("cannot open metadata store %s", self._db_path)
            with self._cond:
                self._stopping = True
                batch = list(self._queue)
                self._queue.clear()
            error = MetadataStoreError(f"cannot open {self._db_path}: {exc}")
            self._loop.call_soon_threadsafe(_settle, batch, [(None, error)] * len(batch))
            return
        try:
            while True:
                with self._cond:
                    while not self._queue and not self._stopping:
                        self._cond.wait()
                    batch = list(self._queue)
                    self._queue.clear()
                if not batch:
                    return
                outcomes = self._run_batch(conn, batch)
                self._loop.call_soon_threadsafe(_settle, batch, outcomes)
        finally:
            conn.close()

    def _run_batch(self, conn: sqlite3.Connection,
                   batch: list[_Operation]) -> list[tuple[Any, BaseException | None]]:
        """One transaction, one savepoint per write, one commit (one fsync); none for reads."""
        writes = any(operation.writes for operation in batch)
        outcomes: list[tuple[Any, BaseException | None]] = []
        try:
            if writes:
                conn.execute("BEGIN IMMEDIATE")
            for operation in batch:
                if operation.writes:
                    conn.execute("SAVEPOINT operation")
                try:
                    outcomes.append((operation.run(conn), None))
                except (MetadataStoreError, sqlite3.Error) as exc:
                    if operation.writes:
                        conn.execute("ROLLBACK TO operation")
                    outcomes.append((None, _as_store_error(exc)))
                if operation.writes:
                    conn.execute("RELEASE operation")
            if writes:
                conn.execute("COMMIT")
                self.commits += 1
        except sqlite3.Error as exc:
            logger.exception("metadata store transaction failed")
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            error = _as_store_error(exc)
            outcomes = [(None, error)] * len(batch)
        return outcomes


def _settle(batch: list[_Operation], outcomes: list[tuple[Any, BaseException | None]]) -> None:
    for operation, (result, error) in zip(batch, outcomes):
        if operation.future.done():
            continue
        if error is None:
            operation.future.set_result(result)
        else:
            operation.future.set_exception(error)


def _as_store_error(exc: BaseException) -> BaseException:
    if isinstance(exc, MetadataStoreError):
        return exc
    return MetadataStoreError(f"sqlite failure: {exc}")


def _current_version(conn: sqlite3.Connection, path: str) -> int | None:
    row = conn.execute("SELECT version FROM nodes WHERE path = ?", (path,)).fetchone()
    return row[0] if row is not None else None


def _check_version(path: str, current: int | None, expected: int | None) -> None:
    if expected is None:
        return
    if expected == -1:
        if current is not None:
            raise MetadataBadVersionError(f"{path} already exists (version {current})")
    elif current is None:
        raise MetadataNotFoundError(path)
    elif current != expected:
        raise MetadataBadVersionError(f"{path} is at version {current}, expected {expected}")
