"""Logging helpers shared by every layer (bookkeeper, managed_ledger, server); depends on none.

``RepeatLimitedLog`` (repeats.py): an expected failure that repeats, such as every add failing
while a bookie is missing, logs one line per interval with a count of what it held back.
"""
