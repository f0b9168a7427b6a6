"""One process per data directory: an exclusive flock on ``<data_dir>/pulsard.lock``.

Two brokers on one directory both rotate the journal, move the checkpoint and delete what they
take for orphan ledgers: acknowledged data of both is lost. The lock is taken before anything
in the directory is opened, and the kernel drops it when its holder dies (kill -9 included), so
a crashed broker never blocks the next start. The holder's pid is written into the file so the
refusal can name it. A path that is (or lies under) a regular file is refused before anything
is created, naming the file, rather than failing in mkdir with a bare errno.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from .errors import DataDirError, DataDirInUseError

LOCK_FILE_NAME = "pulsard.lock"


def require_directory(data_dir: Path) -> None:
    """DataDirError when data_dir, or its nearest existing ancestor, is not a directory."""
    data_dir = Path(data_dir)
    existing = next((path for path in (data_dir, *data_dir.absolute().parents) if path.exists()), None)
    if existing is None or existing.is_dir():
        return
    where = "" if existing == data_dir else f": {existing}"
    raise DataDirError(f"data directory {data_dir}{where} is a file, not a directory")


class DataDirLock:
    """Held from acquire() to release(); not re-entrant, even inside one process."""

    def __init__(self, data_dir: Path, fd: int) -> None:
        self.data_dir = data_dir
        self._fd: int | None = fd

    @classmethod
    def acquire(cls, data_dir: Path) -> DataDirLock:
        """Take the lock or raise DataDirInUseError naming the holder; creates the directory."""
        require_directory(data_dir)
        data_dir = Path(data_dir).resolve()
        data_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(data_dir / LOCK_FILE_NAME, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise DataDirInUseError(
                f"data directory {data_dir} is in use by another pulsard (pid {holder}); "
                f"stop it first, or give this one another --data-dir") from None
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return cls(data_dir, fd)

    def release(self) -> None:
        """Unlock; the file stays (removing it would race with the next holder)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
