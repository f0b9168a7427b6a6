"""Entry log files and the per-ledger index files, below the bookie."""

from __future__ import annotations

import os
import platform
import random
import shutil
import threading
from array import array
from pathlib import Path

import pytest

from bookkeeper import entry_log, journal
from bookkeeper.entry_log import (EntryLogGoneError, EntryLogWriter, LogIds, entry_log_name,
                                  list_entry_logs, open_log, read_record)
from bookkeeper.errors import EntryCorruptedError
from bookkeeper.journal import HEADER_SIZE, RECORD_HEADER, record_crc
from bookkeeper.ledger_index import RECORD_SIZE, EntryLocation, LedgerIndex, encode_locations, summarize


def write_entries(directory: Path, limit: int, entries: list[tuple[int, int, bytes]]
                  ) -> tuple[dict[int, int], list[EntryLocation]]:
    sizes: dict[int, int] = {}
    writer = EntryLogWriter(directory, limit, LogIds(0), sizes)
    locations = []
    for ledger_id, entry_id, data in entries:
        words, _ = writer.append_records(ledger_id, entry_id, [data], array("I", [record_crc(ledger_id, entry_id, data)]))
        locations.append(EntryLocation((words[0] >> 32) - 1, words[1], len(data)))
    writer.close()
    return sizes, locations


def crcs_of(ledger_id: int, entries: list[bytes]) -> array:
    return array("I", [record_crc(ledger_id, entry_id, data) for entry_id, data in enumerate(entries)])


@pytest.mark.usefixtures("packing")
def test_a_run_of_records_splits_at_the_size_limit_and_reads_back(tmp_path: Path) -> None:
    sizes: dict[int, int] = {}
    writer = EntryLogWriter(tmp_path, 1000, LogIds(0), sizes)
    entries = [b"%03d" % entry_id * (entry_id % 7 + 1) for entry_id in range(120)]
    words, live = writer.append_records(5, 0, entries, crcs_of(5, entries))
    writer.close()
    assert len(words) == 2 * len(entries) and len(sizes) > 3
    assert all(size <= 1000 for size in sizes.values())
    assert live == {log_id: size for log_id, size in sizes.items()}
    for entry_id, data in enumerate(entries):
        location = EntryLocation((words[2 * entry_id] >> 32) - 1, words[2 * entry_id + 1], len(data))
        fd = open_log(tmp_path, location.log_id)
        try:
            record = read_record(fd, 5, entry_id, location.offset, location.length)
            assert record == RECORD_HEADER.pack(len(data), record_crc(5, entry_id, data), 5, entry_id) + data
        finally:
            os.close(fd)


def test_native_packer_and_framer_are_built_where_they_can_be() -> None:
    """The extension is optional at install; on this kind of machine (x86-64 with SSE4.2) it
    must be there, and the journal's framer with it."""
    if os.environ.get("PULSARD_PURE_PYTHON") or platform.machine() != "x86_64" or not shutil.which("cc"):
        pytest.skip("the native packer is not expected here")
    assert entry_log._pack_records is not None
    assert journal._frame_run is not None


@pytest.mark.parametrize("size_limit", [256 * 1024, 8 * 1024 * 1024])
def test_native_and_python_packing_write_the_same_logs_and_words(tmp_path: Path, monkeypatch,
                                                                 size_limit: int) -> None:
    """Runs of every shape (empty entries, entries past the log limit or past the 1 MiB write
    chunk, chunks split by it and by rotation), several ledgers after one another into the same
    logs, with single records appended in between (as compaction appends them)."""
    if entry_log._pack_records is None:
        pytest.skip("bookkeeper._records is not built here")
    rng = random.Random(11)
    shapes = [[0], [5] * 3000, [rng.randint(0, 9000) for _ in range(400)], [300_000, 1, 70_000],
              [1_100_000, 7, 1_048_560], [200_000] * 12]
    runs = []
    for ledger_id, sizes in enumerate(rng.sample(shapes * 2, len(shapes) * 2), start=1):
        entries = [rng.randbytes(size) for size in sizes]
        runs.append((ledger_id, rng.randint(0, 2**40), entries, crcs_of(ledger_id, entries)))
    results = {}
    for path in ("native", "python"):
        if path == "python":
            monkeypatch.setattr(entry_log, "_pack_records", None)
        sizes: dict[int, int] = {}
        writer = EntryLogWriter(tmp_path / path, size_limit, LogIds(0), sizes)
        (tmp_path / path).mkdir()
        placed = []
        for ledger_id, first_entry_id, entries, crcs in runs:
            placed.append(writer.append_records(ledger_id, first_entry_id, entries, crcs))
            single = b"single %d" % ledger_id
            header = RECORD_HEADER.pack(len(single), record_crc(99, ledger_id, single), 99, ledger_id)
            placed.append(writer.append_record(header, single))
        writer.close()
        logs = {log_id: (tmp_path / path / entry_log_name(log_id)).read_bytes() for log_id in sizes}
        results[path] = (placed, sizes, logs)
    assert results["native"] == results["python"]


def test_logs_rotate_at_the_size_limit_and_read_back(tmp_path: Path) -> None:
    entries = [(ledger, entry, b"%d-%d" % (ledger, entry) * 10) for entry in range(20)
               for ledger in (3, 7)]
    sizes, locations = write_entries(tmp_path, 500, entries)
    assert list_entry_logs(tmp_path) == sizes
    assert len(sizes) > 3 and all(size <= 500 for size in sizes.values())
    for (ledger, entry, data), location in zip(entries, locations):
        fd = open_log(tmp_path, location.log_id)
        try:
            record = read_record(fd, ledger, entry, location.offset, location.length)
        finally:
            os.close(fd)
        assert record[HEADER_SIZE:] == data


def test_a_damaged_record_fails_its_crc_and_a_removed_log_is_reported(tmp_path: Path) -> None:
    _, (location,) = write_entries(tmp_path, 10_000, [(1, 0, b"precious bytes")])
    path = tmp_path / entry_log_name(location.log_id)
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 0xFF
    path.write_bytes(raw)
    fd = open_log(tmp_path, location.log_id)
    try:
        with pytest.raises(EntryCorruptedError):
            read_record(fd, 1, 0, location.offset, location.length)
        with pytest.raises(EntryCorruptedError):  # asked for another entry than stored there
            read_record(fd, 1, 1, location.offset, location.length)
    finally:
        os.close(fd)
    path.unlink()
    with pytest.raises(EntryLogGoneError):
        open_log(tmp_path, location.log_id)


def test_a_log_is_synced_on_the_way_every_so_many_bytes(tmp_path: Path, monkeypatch) -> None:
    """flushEntrylogBytes: a journal on the same disk never waits for a whole flush's data."""
    synced: list[int] = []
    real_fdatasync = os.fdatasync
    monkeypatch.setattr(os, "fdatasync", lambda fd: (synced.append(fd), real_fdatasync(fd))[1])
    entries = [bytes([i % 256]) * 4000 for i in range(768)]   # 3 chunks of records, the last not full
    crcs = crcs_of(7, entries)

    for sync_every, on_the_way in ((0, 0), (512 * 1024, 2), (64 * 1024 * 1024, 0)):
        synced.clear()
        writer = EntryLogWriter(tmp_path / str(sync_every), 1 << 30, LogIds(0), {}, sync_every)
        (tmp_path / str(sync_every)).mkdir()
        words, live = writer.append_records(7, 0, entries, crcs)
        (log_id,) = live
        assert len(synced) == on_the_way
        writer.sync()   # durable all the same, on the way or not
        assert len(synced) == on_the_way + 1
        writer.close()
        fd = open_log(tmp_path / str(sync_every), log_id)
        try:
            assert read_record(fd, 7, 767, words[2 * 767 + 1], len(entries[767])).endswith(entries[767])
        finally:
            os.close(fd)


def persisted_index(directory: Path, ledger_id: int, locations: list[EntryLocation]) -> Path:
    index = LedgerIndex(directory, threading.Lock())
    directory.mkdir(exist_ok=True)
    index.persist(ledger_id, 0, encode_locations(locations))
    index.sync()
    return directory / f"{ledger_id}.idx"


def test_index_round_trip_and_live_bytes(tmp_path: Path) -> None:
    sizes, locations = write_entries(tmp_path, 300, [(5, e, b"x" * e) for e in range(30)])
    persisted_index(tmp_path / "index", 5, locations)

    index = LedgerIndex(tmp_path / "index", threading.Lock())
    index.load({5}, sizes)

    assert index.count(5) == 30 and index.size(5) == sum(range(30))
    assert index.locations(5, 0, 29) == locations
    assert not index.live_bytes  # counted after start-up, on the storage thread
    index.count_loaded_entries()
    assert dict(index.live_bytes) == sizes  # every byte of every log is live


def test_summaries_of_locations_spread_over_logs_and_dropping_a_ledger(tmp_path: Path) -> None:
    """Compacted entries sit in other logs than their neighbours: per-log record bytes are
    counted per log however the entries interleave, and a dropped ledger (loaded at
    start-up and extended since) leaves no live byte behind."""
    locations = [EntryLocation(log_id, 64 * e, e % 7 + 1)
                 for e, log_id in enumerate([3] * 5 + [0, 3, 12, 12, 3, 0] + [2**31 + 5] * 3)]
    expected: dict[int, int] = {}
    for location in locations:
        expected[location.log_id] = expected.get(location.log_id, 0) + HEADER_SIZE + location.length
    assert summarize(encode_locations(locations)) == (sum(loc.length for loc in locations), expected)
    assert summarize(encode_locations([])) == (0, {})

    sizes = {log_id: 10**9 for log_id in expected}
    persisted_index(tmp_path / "index", 5, locations[:6])
    index = LedgerIndex(tmp_path / "index", threading.Lock())
    index.load({5}, sizes)
    index.count_loaded_entries()
    index.persist(5, 6, encode_locations(locations[6:]))
    index.extend(5, encode_locations(locations[6:]), summarize(encode_locations(locations[6:])))
    assert dict(index.live_bytes) == expected
    index.drop(5)
    assert set(index.live_bytes.values()) == {0}


def test_index_tail_torn_or_pointing_past_a_log_is_cut(tmp_path: Path) -> None:
    sizes, locations = write_entries(tmp_path, 10_000, [(5, e, b"y" * 10) for e in range(10)])
    path = persisted_index(tmp_path / "index", 5, locations)
    beyond = EntryLocation(locations[0].log_id, sizes[locations[0].log_id], 10)
    with open(path, "ab") as f:  # a record whose data never reached the log, and a torn one
        f.write(encode_locations([beyond]).tobytes() + b"\x01\x02\x03")

    index = LedgerIndex(tmp_path / "index", threading.Lock())
    index.load({5}, sizes)

    assert index.count(5) == 10
    assert path.stat().st_size == 10 * RECORD_SIZE


def test_zeroed_index_records_end_the_ledger_and_deleted_ledgers_lose_their_file(
        tmp_path: Path) -> None:
    sizes, locations = write_entries(tmp_path, 10_000, [(5, e, b"z") for e in range(4)])
    path = persisted_index(tmp_path / "index", 5, locations)
    gone = persisted_index(tmp_path / "index", 6, locations)
    with open(path, "r+b") as f:
        f.seek(2 * RECORD_SIZE)
        f.write(bytes(RECORD_SIZE))

    index = LedgerIndex(tmp_path / "index", threading.Lock())
    index.load({5}, sizes)

    assert index.count(5) == 2 and index.count(6) == 0
    assert not gone.exists()
