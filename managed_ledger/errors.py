"""The managed-ledger layer's exception family; server/ maps these to Pulsar error codes.

Storage failures from bookkeeper/ surface as ManagedLedgerStorageError (the original is the
``__cause__``). The metadata store's own errors are re-exported here so that code above this
layer can handle them without importing bookkeeper/.
"""

from __future__ import annotations

from bookkeeper.errors import (MetadataBadVersionError, MetadataNotFoundError,
                               MetadataSessionLostError, MetadataStoreError)

__all__ = [
    "ManagedLedgerError", "ManagedLedgerClosedError", "ManagedLedgerFencedError", "ManagedLedgerStorageError",
    "NonRecoverableEntryError", "LedgerMissingError",
    "ManagedLedgerTerminatedError", "CursorClosedError", "DataDirError", "DataDirInUseError", "ConcurrentReadError",
    "MetadataStoreError", "MetadataBadVersionError", "MetadataNotFoundError", "MetadataSessionLostError",
]


class ManagedLedgerError(Exception):
    """Base of every error raised by managed_ledger/."""


class ManagedLedgerClosedError(ManagedLedgerError):
    """The managed ledger (or its factory) was closed or deleted."""


class ManagedLedgerTerminatedError(ManagedLedgerError):
    """The managed ledger was terminated: it takes no more entries, ever."""


class DataDirError(ManagedLedgerError):
    """The data directory cannot be used (a one-line reason for the user)."""


class DataDirInUseError(DataDirError):
    """Another process holds the data directory: opening it too would destroy data."""


class ManagedLedgerStorageError(ManagedLedgerError):
    """The storage below failed an add, a read or a metadata update."""


class ManagedLedgerFencedError(ManagedLedgerStorageError):
    """Another broker wrote the managed ledger's metadata (BadVersion): it owns the log now,
    and this instance must be closed and opened afresh (Pulsar's ManagedLedgerFencedException)."""


class NonRecoverableEntryError(ManagedLedgerStorageError):
    """An entry no copy of which could be read (Pulsar's NonRecoverableLedgerException): a
    cursor skips it only with autoSkipNonRecoverableData, else its reads fail there."""


class LedgerMissingError(NonRecoverableEntryError):
    """A ledger the managed ledger lists has no metadata any more (Pulsar's
    LedgerNotExistException): none of its entries can be read, so a cursor skips all of them."""


class CursorClosedError(ManagedLedgerError):
    """The cursor was deleted or its managed ledger closed."""


class ConcurrentReadError(ManagedLedgerError):
    """A cursor allows one read_entries_or_wait at a time."""
