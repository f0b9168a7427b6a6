"""The entry index's files: listed at start-up, each read on its ledger's first use."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from bookkeeper import ledger_index
from bookkeeper.journal import HEADER_SIZE
from bookkeeper.ledger_index import EntryLocation, LedgerIndex, encode_locations

LOG_SIZE = 10_000


def offset(entry_id: int) -> int:
    return HEADER_SIZE + entry_id * (HEADER_SIZE + 10)


def written_index(directory: Path, ledgers: dict[int, int]) -> None:
    """Index files for ledgers {id: entries}, each entry 10 bytes in log 0."""
    index = LedgerIndex(directory, threading.Lock())
    index.load(set(), {})
    for ledger_id, count in ledgers.items():
        index.persist(ledger_id, 0, encode_locations(
            [EntryLocation(0, offset(i), 10) for i in range(count)]))
    index.sync()


def reading_index(directory: Path, live: set[int], monkeypatch) -> tuple[LedgerIndex, list[int]]:
    index = LedgerIndex(directory, threading.Lock())
    read: list[int] = []
    real = index._read_file
    monkeypatch.setattr(index, "_read_file", lambda ledger_id: (read.append(ledger_id), real(ledger_id))[1])
    index.load(live, {0: LOG_SIZE})
    return index, read


def test_start_up_lists_the_files_and_reads_each_on_first_use(tmp_path: Path, monkeypatch) -> None:
    written_index(tmp_path, {1: 3, 2: 5, 3: 1})
    index, read = reading_index(tmp_path, {1, 2, 3}, monkeypatch)
    assert read == []
    with index._lock:
        assert index.count(2) == 5
        assert [location.offset for location in index.locations(2, 3, 4)] == [offset(3), offset(4)]
    assert read == [2]
    index.count_loaded_entries()   # before a garbage collection: every file, every entry counted
    assert sorted(read) == [1, 2, 3]
    assert index.live_bytes[0] == 9 * (HEADER_SIZE + 10)


def test_unread_files_are_read_a_step_at_a_time_before_the_count(tmp_path: Path, monkeypatch) -> None:
    written_index(tmp_path, {1: 3, 2: 5, 3: 1, 4: 2, 5: 4})
    index, read = reading_index(tmp_path, {1, 2, 3, 4, 5}, monkeypatch)
    with index._lock:
        assert index.count(4) == 2
    steps = [index.read_unread(2) for _ in range(3)]
    assert steps == [False, True, True] and sorted(read) == [1, 2, 3, 4, 5] and len(read) == 5
    index.count_loaded_entries()   # every file read: the count reads none again
    assert len(read) == 5
    assert index.live_bytes[0] == 15 * (HEADER_SIZE + 10)


def test_a_write_to_a_ledger_not_yet_read_keeps_what_its_file_held(tmp_path: Path, monkeypatch) -> None:
    written_index(tmp_path, {7: 2})
    index, read = reading_index(tmp_path, {7}, monkeypatch)
    words = encode_locations([EntryLocation(0, 500, 10)])
    index.persist(7, 2, words)   # the flush of a third entry reads the file before writing it
    index.sync()
    assert read == [7]
    with index._lock:
        index.extend(7, words, (10, {0: HEADER_SIZE + 10}))
        assert index.count(7) == 3
    reopened, _ = reading_index(tmp_path, {7}, monkeypatch)
    with reopened._lock:
        assert reopened.count(7) == 3


def test_a_deleted_ledger_is_never_read(tmp_path: Path, monkeypatch) -> None:
    written_index(tmp_path, {4: 2, 5: 2})
    index, read = reading_index(tmp_path, {4, 5}, monkeypatch)
    with index._lock:
        index.drop(5)
    index.delete_file(5)
    index.count_loaded_entries()
    assert read == [4]
    assert index.live_bytes[0] == 2 * (HEADER_SIZE + 10)
    assert not (tmp_path / "5.idx").exists()


def test_a_torn_tail_is_cut_when_the_file_is_read(tmp_path: Path, monkeypatch) -> None:
    written_index(tmp_path, {9: 2})
    with open(tmp_path / "9.idx", "ab") as f:   # a record pointing past the log's end
        f.write(encode_locations([EntryLocation(0, LOG_SIZE + 100, 10)]).tobytes())
    index, _ = reading_index(tmp_path, {9}, monkeypatch)
    with index._lock:
        assert index.count(9) == 2
    assert (tmp_path / "9.idx").stat().st_size == 2 * 16


@pytest.mark.parametrize("syncfs", [True, False])
def test_a_flush_of_many_ledgers_keeps_few_files_open(tmp_path: Path, monkeypatch, syncfs: bool) -> None:
    """Past MAX_OPEN_FILES, the files are closed as written and one syncfs makes them durable
    (or, without syncfs, each is fsynced as it is closed)."""
    monkeypatch.setattr("bookkeeper.ledger_index.MAX_OPEN_FILES", 8)
    monkeypatch.setattr("bookkeeper.ledger_index.has_sync_filesystem", lambda: syncfs)
    calls = {"fsync": 0, "syncfs": 0}
    real_fsync, real_syncfs = os.fsync, ledger_index.sync_filesystem
    monkeypatch.setattr(os, "fsync", lambda fd: calls.__setitem__("fsync", calls["fsync"] + 1) or real_fsync(fd))
    monkeypatch.setattr(ledger_index, "sync_filesystem",
                        lambda path: calls.__setitem__("syncfs", calls["syncfs"] + 1) or real_syncfs(path))
    index = LedgerIndex(tmp_path, threading.Lock())
    index.load(set(), {})
    for ledger_id in range(50):
        index.persist(ledger_id, 0, encode_locations([EntryLocation(0, offset(0), 10)]))
        assert len(index._dirty) <= 8
    index.sync()
    files = calls["fsync"] - 1   # and the directory's
    assert (calls["syncfs"], files) == ((1, 0) if syncfs else (0, 50))
    reopened, _ = reading_index(tmp_path, set(range(50)), monkeypatch)
    with reopened._lock:
        assert [reopened.count(ledger_id) for ledger_id in range(50)] == [1] * 50
