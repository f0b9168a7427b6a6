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
All sqlite work happens on one dedicated thread, so the event loop never blocks.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import contextlib
import sqlite3
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

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


class SqliteMetadataStore:
    """Versioned tree of byte values in one sqlite file, served by one thread."""

    def __init__(self, db_path: Path) -> None:
        self._db_path = db_path
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="metadata-store")
        #: Touched only by the store thread.
        self._conn: sqlite3.Connection | None = None
        self._closed = False

    @classmethod
    async def open(cls, db_path: Path) -> SqliteMetadataStore:
        db_path.parent.mkdir(parents=True, exist_ok=True)
        store = cls(db_path)
        await store._run(lambda conn: None)
        return store

    async def get(self, path: str) -> tuple[bytes, int] | None:
        _check_path(path)

        def get(conn: sqlite3.Connection) -> tuple[bytes, int] | None:
            row = conn.execute("SELECT value, version FROM nodes WHERE path = ?", (path,)).fetchone()
            return (bytes(row[0]), row[1]) if row is not None else None

        return await self._run(get)

    async def put(self, path: str, value: bytes, expected_version: int | None = None) -> int:
        """Store value; -1 as expected_version means "must not exist". Returns the new version."""
        _check_path(path)
        value = bytes(value)

        def put(conn: sqlite3.Connection) -> int:
            with _transaction(conn):
                row = conn.execute("SELECT version FROM nodes WHERE path = ?", (path,)).fetchone()
                current = row[0] if row is not None else None
                _check_version(path, current, expected_version)
                version = 0 if current is None else current + 1
                conn.execute("INSERT OR REPLACE INTO nodes (path, value, version) VALUES (?, ?, ?)",
                             (path, value, version))
            return version

        return await self._run(put)

    async def delete(self, path: str, expected_version: int | None = None) -> None:
        _check_path(path)

        def delete(conn: sqlite3.Connection) -> None:
            with _transaction(conn):
                row = conn.execute("SELECT version FROM nodes WHERE path = ?", (path,)).fetchone()
                current = row[0] if row is not None else None
                if current is None:
                    raise MetadataNotFoundError(path)
                _check_version(path, current, expected_version)
                conn.execute("DELETE FROM nodes WHERE path = ?", (path,))

        await self._run(delete)

    async def children(self, path: str) -> list[str]:
        _check_path(path)
        prefix = "/" if path == "/" else path + "/"

        def children(conn: sqlite3.Connection) -> list[str]:
            rows = conn.execute("SELECT path FROM nodes WHERE path > ? AND path < ?",
                                (prefix, prefix + _PATH_END))
            names = {row[0][len(prefix):].split("/", 1)[0] for row in rows}
            return sorted(names)

        return await self._run(children)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True

        def close_connection() -> None:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor, close_connection)
        self._executor.shutdown(wait=False)

    # ---- the store thread ----------------------------------------------------------------

    async def _run(self, operation: Callable[[sqlite3.Connection], T]) -> T:
        if self._closed:
            raise MetadataStoreError("metadata store is closed")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._call, operation)

    def _call(self, operation: Callable[[sqlite3.Connection], Any]) -> Any:
        if self._conn is None:
            self._conn = self._connect()
        try:
            return operation(self._conn)
        except sqlite3.Error as exc:
            raise MetadataStoreError(f"sqlite failure: {exc}") from exc

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self._db_path, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute(_SCHEMA)
        return conn


@contextlib.contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


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
