"""When a ledger counts as an orphan (orphan_ledgers.py) and whose a ledger is (ledger_tags.py),
without bookies; test_cluster_orphans.py has the kill and the cleanup on real ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from bookkeeper.bk.ledger_metadata import LedgerMetadata, Segment
from bookkeeper.errors import MetadataBadVersionError, MetadataSessionLostError
from managed_ledger.errors import ManagedLedgerStorageError
from managed_ledger.ledger_list import LedgerInfo
from managed_ledger.ledger_tags import COMPACTED_LEDGER, MANAGED_LEDGER, LedgerOwner, LedgerTags
from managed_ledger.metadata import CompactedLedger, ManagedLedgerMetadata, managed_ledger_path
from managed_ledger.orphan_ledgers import is_orphan
from managed_ledger.position import Position

from .conftest import TOPIC, open_storage

OPEN = LedgerMetadata(3, 2, 2, (Segment(0, ("a:1", "b:2", "c:3")),))
SEALED = OPEN.closed(9, 100)
DATA = LedgerOwner(MANAGED_LEDGER, "persistent://t/n/topic")
COMPACTED = LedgerOwner(COMPACTED_LEDGER, "persistent://t/n/topic")


def listing(*ids: int, compacted: int | None = None) -> ManagedLedgerMetadata:
    return ManagedLedgerMetadata([LedgerInfo(i, 1, 1) for i in ids],
                                 CompactedLedger(compacted, Position(1, 1)) if compacted is not None else None)


def test_a_data_ledger_is_an_orphan_only_once_a_later_one_is_listed_without_it() -> None:
    assert is_orphan(5, OPEN, DATA, listing(3, 7))           # a rollover to 5 lost its CAS
    assert not is_orphan(5, OPEN, DATA, listing(3, 5))        # listed
    assert not is_orphan(5, OPEN, DATA, listing(3))           # being recorded right now, maybe
    assert not is_orphan(5, OPEN, DATA, listing())            # a new managed ledger's first
    assert is_orphan(5, OPEN, DATA, None)                     # its managed ledger was deleted
    assert not is_orphan(5, SEALED, DATA, listing(1, 9, compacted=5))   # listed as the view


def test_a_compacted_ledger_is_an_orphan_once_sealed_and_a_newer_view_is_listed() -> None:
    assert is_orphan(5, SEALED, COMPACTED, listing(9, compacted=8))
    assert not is_orphan(5, OPEN, COMPACTED, listing(9, compacted=8))     # still being written
    assert not is_orphan(5, SEALED, COMPACTED, listing(9, compacted=3))   # about to be recorded
    assert not is_orphan(5, SEALED, COMPACTED, listing(9))                # the first view
    assert not is_orphan(5, SEALED, COMPACTED, listing(9, compacted=5))


def test_tags_are_pulsars_and_name_only_ledgers_of_this_store() -> None:
    ours, theirs = LedgerTags("ours"), LedgerTags("theirs")
    tags = ours.of(DATA)
    assert tags["application"] == b"pulsar" and tags["component"] == b"managed-ledger"
    assert tags["pulsar/managed-ledger"] == b"persistent://t/n/topic"
    assert ours.of(COMPACTED)["pulsar/compactedTopic"] == b"persistent://t/n/topic"
    assert ours.owner(tuple(tags.items())) == DATA
    assert ours.owner(tuple(ours.of(COMPACTED).items())) == COMPACTED
    assert theirs.owner(tuple(tags.items())) is None          # another cluster on the same bookies
    assert ours.owner((("application", b"pulsard"),)) is None  # made before tags, or not ours
    untagged = {k: v for k, v in tags.items() if k != "pulsard/storage-id"}
    assert ours.owner(tuple(untagged.items())) is None         # Pulsar's own brokers


@pytest.mark.parametrize("failure, deleted", [(MetadataBadVersionError, True), (MetadataSessionLostError, False)],
                         ids=["cas-lost", "connection-lost"])
async def test_a_rollovers_ledger_is_deleted_only_when_its_recording_surely_failed(
        tmp_path: Path, monkeypatch, failure: type, deleted: bool) -> None:
    """A write that lost its CAS did not land; one whose connection dropped may have, and then
    deleting the ledger would leave the metadata naming a ledger that is gone."""
    async with open_storage(tmp_path, max_entries_per_ledger=1) as factory:
        ledger = await factory.open_ledger(TOPIC)
        store = factory.metadata_store
        put = store.put

        async def failing_put(path: str, value: bytes, expected_version=None) -> int:
            if path == managed_ledger_path(TOPIC):
                monkeypatch.setattr(store, "put", put)
                raise failure(path)
            return await put(path, value, expected_version)

        created = []
        create = factory.bookkeeper.create_ledger

        async def recorded_create(custom=None, *replication):
            created.append(writer := await create(custom, *replication))
            return writer

        monkeypatch.setattr(store, "put", failing_put)
        monkeypatch.setattr(factory.bookkeeper, "create_ledger", recorded_create)
        await ledger.add_entry(b"fills the ledger")   # the rollover after it fails to record
        with pytest.raises(ManagedLedgerStorageError):
            await ledger.add_entry(b"queued behind the rollover")
        assert len(created) == 1
        assert (created[0].ledger_id not in await factory.bookkeeper.list_ledgers()) is deleted
