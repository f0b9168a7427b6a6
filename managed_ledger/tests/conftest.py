"""Async tests run through bookkeeper's hook; a factory helper over a temporary data dir."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import AsyncIterator

from bookkeeper.tests.conftest import pytest_pyfunc_call  # noqa: F401  (async test runner)
from managed_ledger.config import StorageConfig
from managed_ledger.factory import ManagedLedgerFactoryImpl, open_factory

TOPIC = "persistent://public/default/topic-1"


@contextlib.asynccontextmanager
async def open_storage(data_dir: Path, **settings) -> AsyncIterator[ManagedLedgerFactoryImpl]:
    factory = await open_factory(StorageConfig(data_dir, **settings))
    try:
        yield factory
    finally:
        await factory.close()
from bookkeeper.tests.cluster_fixture import (  # noqa: E402,F401  (session fixture, hook)
    cluster, pytest_runtest_teardown)
