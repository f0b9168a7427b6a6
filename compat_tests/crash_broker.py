"""A pulsard that SIGKILLs itself right after creating the Nth ledger of one managed ledger,
before the managed ledger records it: the orphaning point of a rollover (or of an open).

Usage (as PULSARD_COMMAND for compat_tests/broker.py):
    python -m compat_tests.crash_broker MANAGED_LEDGER N  broker --config ...
"""

from __future__ import annotations

import os
import signal
import sys

from bookkeeper.bk.client import BookKeeperClient
from server.cli import main

ORIGINAL_CREATE = BookKeeperClient.create_ledger


def crash_at(name: str, nth: int):
    created = 0

    async def create_ledger(self, custom=None, *args, **kwargs):
        nonlocal created
        writer = await ORIGINAL_CREATE(self, custom, *args, **kwargs)
        if (custom or {}).get("pulsar/managed-ledger") == name.encode():
            created += 1
            if created == nth:
                print(f"CRASH after creating ledger {writer.ledger_id}", flush=True)
                os.kill(os.getpid(), signal.SIGKILL)
        return writer
    return create_ledger


if __name__ == "__main__":
    BookKeeperClient.create_ledger = crash_at(sys.argv[1], int(sys.argv[2]))
    main(sys.argv[3:])
