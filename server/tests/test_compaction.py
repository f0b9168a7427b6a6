"""The compactor over a real managed ledger: latest per key, tombstones, batches, status."""

from __future__ import annotations

from pathlib import Path

import pytest

from managed_ledger.tests.conftest import TOPIC, open_storage
from protocol import pulsar_api_pb2 as pb
from protocol.batch import compress, unpack
from protocol.entry import make_entry
from server.topics.compaction import CompactionInProgress, CompactionStatus, TopicCompaction, compact


def plain(key: str | None, value: bytes) -> bytes:
    metadata = pb.MessageMetadata(producer_name="p", sequence_id=0, publish_time=1)
    if key is not None:
        metadata.partition_key = key
    return make_entry(metadata, value)


def batch(pairs: list[tuple[str, bytes]], codec: int = pb.NONE) -> bytes:
    raw = b""
    for key, value in pairs:
        single = pb.SingleMessageMetadata(partition_key=key, payload_size=len(value)).SerializeToString()
        raw += len(single).to_bytes(4, "big") + single + value
    metadata = pb.MessageMetadata(producer_name="p", sequence_id=0, publish_time=1,
                                  num_messages_in_batch=len(pairs), compression=codec,
                                  uncompressed_size=len(raw))
    return make_entry(metadata, compress(codec, raw))


def kept_payloads(entries) -> list[bytes]:
    """Payloads of batched messages; a plain entry shows as <plain> (unpack leaves it whole)."""
    return [m.payload if m.batch_index >= 0 else b"<plain>" for e in entries for m in unpack(bytes(e.data))]


@pytest.mark.parametrize("codec", [pb.NONE, pb.LZ4, pb.ZLIB, pb.ZSTD, pb.SNAPPY])
def test_batch_round_trip(codec: int) -> None:
    messages = unpack(batch([("a", b"1"), ("b", b""), ("c", b"3")], codec))
    assert [(m.key, m.tombstone, m.batch_index, m.payload) for m in messages] == [
        ("a", False, 0, b"1"), ("b", True, 1, b""), ("c", False, 2, b"3")]


async def test_compaction_keeps_the_latest_per_key_and_is_incremental(tmp_path: Path) -> None:
    async with open_storage(tmp_path) as factory:
        ledger = await factory.open_ledger(TOPIC)
        await ledger.add_entry(plain("a", b"a1"))
        mixed = await ledger.add_entry(batch([("b", b"b1"), ("a", b"a2"), ("c", b"c1")], pb.LZ4))
        await ledger.add_entry(plain("c", b""))          # tombstone: c is deleted
        await ledger.add_entry(plain(None, b"keyless"))
        await compact(ledger)
        view = await ledger.compacted_view()
        assert view.horizon == ledger.last_confirmed_entry
        assert [e.position for e in await view.read_all()] == [mixed]
        assert kept_payloads(await view.read_all()) == [b"b1", b"a2"]
        b2 = await ledger.add_entry(plain("b", b"b2"))
        await compact(ledger)
        view = await ledger.compacted_view()
        assert [e.position for e in await view.read_all()] == [mixed, b2]
        assert kept_payloads(await view.read_all()) == [b"a2", b"<plain>"]


async def test_status_and_one_run_at_a_time(tmp_path: Path) -> None:
    async with open_storage(tmp_path) as factory:
        ledger = await factory.open_ledger(TOPIC)
        await ledger.add_entry(plain("a", b"a1"))
        compaction = TopicCompaction(ledger)
        assert compaction.report() == {"status": "NOT_RUN", "lastError": ""}
        task = compaction.start()
        with pytest.raises(CompactionInProgress):
            compaction.start()
        await task
        assert compaction.status is CompactionStatus.SUCCESS


async def test_keyless_messages_are_kept_in_place_when_asked(tmp_path: Path) -> None:
    async with open_storage(tmp_path) as factory:
        ledger = await factory.open_ledger(TOPIC)
        await ledger.add_entry(plain(None, b"keyless"))
        await ledger.add_entry(batch([("a", b"a1"), (None, b"n1"), ("a", b"a2"), (None, b"n2")], pb.ZSTD))
        await compact(ledger, retain_null_key=True)
        view = await ledger.compacted_view()
        assert kept_payloads(await view.read_all()) == [b"<plain>", b"n1", b"a2", b"n2"]
