"""The transaction coordinator: transactions' states in a log per coordinator, their timeouts,
and the ending of each on what it touched (through TransactionParticipants)."""
