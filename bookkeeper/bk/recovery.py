"""Open with recovery: take an unsealed ledger over from its (dead or alive) writer and seal it.

As BookKeeper's LedgerRecoveryOp: (1) metadata OPEN -> IN_RECOVERY (CAS); (2) fence every
bookie of the last ensemble with a fencing read of its last entry -- from then on they refuse
the old writer's adds (EFENCED) -- and take the highest LAC in their answers, which must cover
every write set with Qw - Qa + 1 bookies; (3) read on from LAC + 1: an entry found on any
bookie of its write set is written again to its write set with RECOVERY_ADD (allowed on a
fenced ledger) until Qa acknowledge it; an entry that Qw - Qa + 1 bookies report missing is
past the end; (4) CAS to CLOSED with the last entry and length. Every entry the old writer got
acknowledged (Qa copies) is found, so nothing acknowledged is lost.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from typing import TYPE_CHECKING

from ..errors import BookieUnavailableError, MetadataBadVersionError
from .codec import Status, StoredEntry, package_entry, unpack_entry
from .ledger_metadata import LedgerMetadata, LedgerState
from .placement import write_set
from .reads import read_last_confirmed

if TYPE_CHECKING:
    from .client import BookKeeperClient

logger = logging.getLogger(__name__)

MAX_ENSEMBLE_CHANGES = 5


async def recover(client: BookKeeperClient, ledger_id: int, metadata: LedgerMetadata,
                  version: int) -> tuple[LedgerMetadata, int]:
    while metadata.state is LedgerState.OPEN:
        in_recovery = replace(metadata, state=LedgerState.IN_RECOVERY)
        try:
            version = await client.write_metadata(ledger_id, in_recovery, version)
            metadata = in_recovery
        except MetadataBadVersionError:
            metadata, version = await client.read_metadata(ledger_id)
    if metadata.state is LedgerState.CLOSED:
        return metadata, version

    lac, length = await read_last_confirmed(client, metadata, ledger_id, fence=True)
    last = lac
    entry_id = lac + 1
    while (found := await _recovery_read(client, metadata, ledger_id, entry_id)) is not None:
        length += len(found.payload)
        for _ in range(MAX_ENSEMBLE_CHANGES):
            failed = await _recovery_add(client, metadata, ledger_id, entry_id, last, length,
                                         found.payload)
            if not failed:
                break
            metadata, version = await _replace_bookies(client, ledger_id, metadata, version,
                                                       entry_id, failed)
        else:
            raise BookieUnavailableError(f"ledger {ledger_id}: entry {entry_id} could not be "
                                         f"written again to Qa bookies")
        last = entry_id
        entry_id += 1

    sealed = metadata.closed(last, length)
    try:
        version = await client.write_metadata(ledger_id, sealed, version)
    except MetadataBadVersionError:
        current, version = await client.read_metadata(ledger_id)
        if current.state is LedgerState.CLOSED:
            return current, version  # another recovery sealed it first
        raise
    logger.info("recovered ledger %d: LAC was %d, sealed at %d (%d bytes)", ledger_id, lac, last,
                length)
    return sealed, version


async def _recovery_read(client: BookKeeperClient, metadata: LedgerMetadata, ledger_id: int,
                         entry_id: int) -> StoredEntry | None:
    """The entry from any bookie of its write set, or None once enough of them lack it."""
    ensemble = metadata.ensemble_at(entry_id)
    bookies = [ensemble[i] for i in write_set(entry_id, metadata.ensemble_size,
                                              metadata.write_quorum)]

    async def ask(bookie: str) -> StoredEntry | None:
        connection = await client.pool.get(bookie)
        response = await connection.read(ledger_id, entry_id)
        if response.status in (Status.ENOENTRY, Status.ENOLEDGER):
            return None
        if response.status != Status.EOK or response.body is None:
            raise BookieUnavailableError(f"recovery read {ledger_id}/{entry_id} on {bookie}: "
                                         f"{Status.of(response.status)!r}")
        return unpack_entry(response.body, ledger_id, entry_id)

    outcomes = await asyncio.gather(*[ask(b) for b in bookies], return_exceptions=True)
    for outcome in outcomes:
        if isinstance(outcome, StoredEntry):
            return outcome
    missing = sum(1 for outcome in outcomes if outcome is None)
    if missing >= metadata.write_quorum - metadata.ack_quorum + 1:
        return None
    raise BookieUnavailableError(f"ledger {ledger_id}: cannot tell whether entry {entry_id} "
                                 f"exists: {outcomes}")


async def _recovery_add(client: BookKeeperClient, metadata: LedgerMetadata, ledger_id: int,
                        entry_id: int, lac: int, length: int, payload: bytes) -> set[str]:
    """RECOVERY_ADD to the entry's write set; the bookies that failed when fewer than Qa
    acknowledged (empty set: done)."""
    ensemble = metadata.ensemble_at(entry_id)
    bookies = [ensemble[i] for i in write_set(entry_id, metadata.ensemble_size,
                                              metadata.write_quorum)]
    body = package_entry(ledger_id, entry_id, lac, length, payload)

    async def add(bookie: str) -> bool:
        connection = await client.pool.get(bookie)
        response = await connection.add(ledger_id, entry_id, client.master_key, body, recovery=True)
        return response.status == Status.EOK

    outcomes = await asyncio.gather(*[add(b) for b in bookies], return_exceptions=True)
    if sum(1 for outcome in outcomes if outcome is True) >= metadata.ack_quorum:
        return set()
    failed = {b for b, outcome in zip(bookies, outcomes) if outcome is not True}
    logger.warning("ledger %d: recovery add of entry %d failed on %s", ledger_id, entry_id,
                   ", ".join(sorted(failed)))
    for bookie in failed:
        client.placement.quarantine(bookie)
    return failed


async def _replace_bookies(client: BookKeeperClient, ledger_id: int, metadata: LedgerMetadata,
                           version: int, entry_id: int,
                           failed: set[str]) -> tuple[LedgerMetadata, int]:
    """Ensemble change during recovery: a segment from entry_id without the failed bookies."""
    ensemble = await client.placement.replacements(metadata.ensemble_at(entry_id), failed)
    changed = metadata.with_ensemble(entry_id, ensemble)
    try:
        version = await client.write_metadata(ledger_id, changed, version)
    except MetadataBadVersionError:
        raise BookieUnavailableError(f"ledger {ledger_id}: its metadata changed during "
                                     f"recovery (another recovery?)") from None
    logger.info("ledger %d: recovery moved entries from %d to %s", ledger_id, entry_id,
                ", ".join(ensemble))
    return changed, version
