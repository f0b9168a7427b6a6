"""Reads of flushed entries: runs of records in one pread, and read-ahead for sequential readers."""

from __future__ import annotations

import os
import threading
from array import array
from pathlib import Path

import pytest

from bookkeeper import entry_log
from bookkeeper.entry_log import entry_log_name, open_log, read_run
from bookkeeper.errors import EntryCorruptedError
from bookkeeper.journal import HEADER_SIZE, record_crc
from bookkeeper.ledger_index import EntryLocation
from bookkeeper.ledger_storage import EntryLogStorage
from bookkeeper.read_cache import READ_AHEAD_BYTES, ReadCache

ENTRY = 100 * 1024


def flushed_storage(directory: Path, entries: int, size: int = ENTRY) -> EntryLogStorage:
    storage = EntryLogStorage(directory, 64 * 1024 * 1024)
    storage.load(set())
    for entry_id in range(entries):
        data = b"%08d" % entry_id * (size // 8)
        storage.add(7, entry_id, [data], array("I", [record_crc(7, entry_id, data)]))
    storage.flush_all()
    return storage


def read(storage: EntryLogStorage, first: int, last: int) -> tuple[list[bytes], int]:
    """(data, how many entries needed the entry log) as the bookie reads them."""
    found = storage.lookup(7, first, last)
    missing = sum(isinstance(item, EntryLocation) for item in found)
    data = storage.read(7, first, found) if missing else found
    return data, missing  # type: ignore[return-value]


def test_a_sequential_reader_finds_the_entries_after_its_read_in_memory(tmp_path: Path) -> None:
    storage = flushed_storage(tmp_path, 100)
    try:
        data, missing = read(storage, 0, 1)
        assert (data[1][:8], missing) == (b"00000001", 2)   # a first read: nothing known ahead
        data, missing = read(storage, 2, 2)
        assert (data[0][:8], missing) == (b"00000002", 1)   # continues the last read: reads ahead
        ahead = READ_AHEAD_BYTES // ENTRY
        data, missing = read(storage, 3, 2 + ahead)
        assert missing == 0 and [d[:8] for d in data] == [b"%08d" % i for i in range(3, 3 + ahead)]
        assert read(storage, 3 + ahead, 3 + ahead)[1] == 1
        assert read(storage, 4 + ahead, 4 + ahead)[1] == 0
    finally:
        storage.close()


def test_a_jump_reads_no_further_and_a_deleted_ledger_leaves_the_read_cache(tmp_path: Path) -> None:
    storage = flushed_storage(tmp_path, 100)
    try:
        read(storage, 0, 0)
        read(storage, 50, 50)
        assert read(storage, 51, 51)[1] == 1          # 50 was a jump: nothing read ahead of it
        assert storage.read_cache.size > 0            # but 51 continued it
        storage.delete_ledger(7)
        assert storage.read_cache.size == 0
    finally:
        storage.close()


def test_a_run_of_records_is_verified_record_by_record(tmp_path: Path) -> None:
    storage = flushed_storage(tmp_path, 3, size=64)
    storage.close()
    locations = storage.index.locations(7, 0, 2)
    path = tmp_path / entry_log_name(locations[0].log_id)
    fd = open_log(tmp_path, locations[0].log_id)
    try:
        lengths = [location.length for location in locations]
        assert read_run(fd, 7, 0, locations[0].offset, lengths)[2] == b"%08d" % 2 * 8
        raw = bytearray(path.read_bytes())
        raw[locations[2].offset + 30] ^= 0xFF
        path.write_bytes(raw)
        with pytest.raises(EntryCorruptedError):
            read_run(fd, 7, 0, locations[0].offset, lengths)
    finally:
        os.close(fd)


@pytest.mark.parametrize("buffer_max", [entry_log.RUN_BUFFER_MAX, 1024], ids=["kept buffer", "fresh read"])
def test_runs_of_any_size_read_right_one_after_another_and_a_cut_log_is_a_short_read(
        tmp_path: Path, monkeypatch, buffer_max: int) -> None:
    """Runs read into the thread's kept buffer (a long one, then shorter ones, then one that
    makes it grow) and runs past its cap, read on their own, bring the same bytes; a run
    reaching past the end of its log fails on either way."""
    monkeypatch.setattr(entry_log, "RUN_BUFFER_MAX", buffer_max)
    monkeypatch.setattr(entry_log, "_run_buffers", threading.local())
    storage = flushed_storage(tmp_path, 40, size=4096)
    storage.close()
    locations = storage.index.locations(7, 0, 39)
    fd = open_log(tmp_path, locations[0].log_id)
    try:
        for first, last in [(0, 29), (3, 4), (10, 10), (0, 39)]:
            lengths = [location.length for location in locations[first:last + 1]]
            data = read_run(fd, 7, first, locations[first].offset, lengths)
            assert data == [b"%08d" % i * 512 for i in range(first, last + 1)]
        end = locations[39].offset + HEADER_SIZE + 4096
        os.truncate(tmp_path / entry_log_name(locations[0].log_id), end - 1)
        with pytest.raises(EntryCorruptedError, match="short read"):
            read_run(fd, 7, 38, locations[38].offset, [4096, 4096])
    finally:
        os.close(fd)


def test_the_read_cache_keeps_to_its_byte_budget() -> None:
    cache = ReadCache(max_bytes=250)
    for entry_id in range(5):
        cache.put(1, entry_id, bytes(100))
    assert cache.size == 200 and cache.take(1, 2) is None and cache.take(1, 4) is not None
    assert cache.size == 100 and cache.take(1, 4) is None    # taken: read ahead for one read
