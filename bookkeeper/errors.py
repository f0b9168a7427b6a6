"""The bookkeeper layer's one exception family; server/ maps these to Pulsar error codes."""

from __future__ import annotations


class BookKeeperError(Exception):
    """Base of every error raised by bookkeeper/."""


class BookieClosedError(BookKeeperError):
    """The bookie was shut down; no further adds or reads."""


class BookieIOError(BookKeeperError):
    """A journal write or fsync failed; the journal refuses further adds until restart."""


class EntryCorruptedError(BookKeeperError):
    """A stored record failed its CRC or header check on read."""


class NoSuchLedgerError(BookKeeperError):
    """The ledger does not exist (never created, or deleted)."""


class NoSuchEntryError(BookKeeperError):
    """The entry id lies beyond what the ledger holds."""


class LedgerFencedError(BookKeeperError):
    """The ledger was fenced by a recovery open: it accepts no more adds."""


class LedgerClosedError(BookKeeperError):
    """The handle (or the ledger) is closed for writing."""


class MetadataStoreError(BookKeeperError):
    """Base of metadata store failures."""


class MetadataBadVersionError(MetadataStoreError):
    """The node's version differs from the expected one (or it exists when -1 was expected)."""


class MetadataNotFoundError(MetadataStoreError):
    """The node does not exist."""


class MetadataSessionLostError(MetadataStoreError):
    """The store's session expired or its connection is down: an expected condition for a
    while (the caller retries later), not a bug worth a traceback."""


class BookieUnavailableError(BookKeeperError):
    """A remote bookie could not be reached, dropped the connection or did not answer in time."""


class EntryUnreadableError(BookKeeperError):
    """No bookie of the entry's write set gave it: it stays unreadable until one of them is
    back (or the entry is re-replicated); the entries around it may well be readable."""


class NotEnoughBookiesError(BookKeeperError):
    """Too few writable bookies for the ensemble (or its repair after a failure)."""


class BookieRequestError(BookKeeperError):
    """A remote bookie refused a request (its status code is in the message)."""
