"""Deleting orphan ledgers on a BookKeeper cluster: ledgers made for a managed ledger that its
metadata will never list. A rollover whose metadata write failed, a broker killed between
creating a ledger and recording it, a trim or a deletion that died between the metadata and
the ledger: each leaves a ledger in ZooKeeper and on the bookies for good.

A ledger is an orphan only when all of these hold, on its metadata and the managed ledger's
read now:
- its tags (ledger_tags.py) name a managed ledger of this metadata store;
- it is older than the minimum age (a margin for clocks; the rules below do not rely on it);
- the managed ledger's metadata does not list it, and either that metadata is gone (the
  managed ledger was deleted: it was created before any ledger of its, see ManagedLedgerImpl),
  or it lists a ledger created later (a greater id): that write went through its CAS after this
  ledger existed, so whoever made this ledger either recorded it before (then it would be
  listed, or was trimmed) or can never record it (its CAS fails). A compacted view's ledger
  must also be sealed, and the listed view newer: compactions and rollovers of one managed
  ledger overlap, rollovers among themselves never do.
"""

from __future__ import annotations

import logging
import time

from bookkeeper.bk.client import BookKeeperClient
from bookkeeper.bk.ledger_metadata import LedgerMetadata, LedgerState
from bookkeeper.errors import BookKeeperError, NoSuchLedgerError
from log_limits.repeats import RepeatLimitedLog

from .interfaces import MetadataStore
from .ledger_tags import COMPACTED_LEDGER, LedgerOwner, LedgerTags
from .metadata import ManagedLedgerMetadata, managed_ledger_path

logger = logging.getLogger(__name__)
_repeats = RepeatLimitedLog(logger)   # ZooKeeper away: one line per interval, not per pass


def is_orphan(ledger_id: int, ledger: LedgerMetadata, owner: LedgerOwner,
              listed: ManagedLedgerMetadata | None) -> bool:
    """The rules above, but the age; listed is the owner's metadata, None when it is gone."""
    if listed is None:
        return True
    if ledger_id in listed.ledger_ids():
        return False
    if owner.component == COMPACTED_LEDGER:
        return (ledger.state is LedgerState.CLOSED and listed.compacted is not None
                and listed.compacted.ledger_id > ledger_id)
    return any(info.ledger_id > ledger_id for info in listed.ledgers)


async def delete_orphan_ledgers(store: MetadataStore, client: BookKeeperClient, tags: LedgerTags,
                                min_age_s: float) -> list[int]:
    """One pass over every ledger of the cluster; the ids deleted (a failed pass stops there:
    the next one starts over)."""
    deleted: list[int] = []
    try:
        await _delete_orphans(store, client, tags, min_age_s, deleted)
    except BookKeeperError as exc:
        _repeats.warning(type(exc), "looking for orphan ledgers failed: %s", exc)
    if deleted:
        logger.info("deleted %d orphan ledgers: %s", len(deleted), deleted)
    return deleted


async def _delete_orphans(store: MetadataStore, client: BookKeeperClient, tags: LedgerTags,
                          min_age_s: float, deleted: list[int]) -> None:
    async for ledger_id in client.list_ledgers():
        try:
            ledger, _ = await client.read_metadata(ledger_id)
        except NoSuchLedgerError:
            continue   # deleted since the listing
        owner = tags.owner(ledger.custom)
        if owner is None or not ledger.ctime_ms or time.time() * 1000 - ledger.ctime_ms < min_age_s * 1000:
            continue
        found = await store.get(managed_ledger_path(owner.name))
        listed = ManagedLedgerMetadata.decode(found[0]) if found is not None else None
        if not is_orphan(ledger_id, ledger, owner, listed):
            continue
        try:
            await client.delete_ledger(ledger_id)
        except NoSuchLedgerError:
            continue   # another broker's cleaner was first
        deleted.append(ledger_id)
