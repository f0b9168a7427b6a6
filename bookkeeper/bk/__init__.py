"""pulsard's client of a real Apache BookKeeper cluster: v3 wire protocol (codec, connection),
ledger metadata in BookKeeper's format (ledger_metadata), placement, writes (write_handle),
reads (reads), recovery, and the LedgerClient over them (client)."""
