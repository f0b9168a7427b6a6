"""Run ``async def`` tests with asyncio.run (no pytest-asyncio), plus storage fixtures."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from pathlib import Path
from typing import AsyncIterator

import pytest

from bookkeeper.config import BookieConfig
from bookkeeper.ledger import BookKeeper
from bookkeeper.metadata_store import SqliteMetadataStore


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    arguments = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
    asyncio.run(asyncio.wait_for(pyfuncitem.obj(**arguments), timeout=60))
    return True


@contextlib.asynccontextmanager
async def open_bookkeeper(root: Path, crash_on_exit: bool = False,
                          **settings) -> AsyncIterator[BookKeeper]:
    """A BookKeeper over a metadata store and a bookie under root; closed on exit, without the
    final checkpoint when crash_on_exit (the disk then looks as after a kill -9)."""
    store = await SqliteMetadataStore.open(root / "metadata.db")
    bookkeeper = await BookKeeper.open(root, BookieConfig(**settings), store)
    try:
        yield bookkeeper
    finally:
        await bookkeeper.bookie.close(final_checkpoint=not crash_on_exit)
        await store.close()


from bookkeeper.tests.cluster_fixture import (  # noqa: E402,F401  (session fixture, hook)
    cluster, pytest_runtest_teardown)


@pytest.fixture(params=["native", "python"])
def packing(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Journal and entry-log records built by bookkeeper._records ('native', skipped where it
    is not built or the CPU lacks SSE4.2) or in Python ('python', as with PULSARD_PURE_PYTHON=1)."""
    from bookkeeper import entry_log, journal

    if request.param == "native":
        if entry_log._pack_records is None or journal._frame_run is None:
            pytest.skip("bookkeeper._records is not built or not usable here")
    else:
        monkeypatch.setattr(entry_log, "_pack_records", None)
        monkeypatch.setattr(journal, "_frame_run", None)
    return request.param
