"""Transactions: the coordinator, the transaction buffer of each topic, the pending acks of each subscription."""
