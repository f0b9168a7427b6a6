"""A clean stop sweeps orphan ledgers and marks the data directory; the next start skips the
sweep. A start without the mark (the last run was killed) sweeps."""

from __future__ import annotations

from pathlib import Path

from managed_ledger import factory as factory_module
from managed_ledger.clean_stop import MARK_NAME

from .conftest import TOPIC, open_storage


def counting_sweeps(monkeypatch, run_it: bool = True) -> list[int]:
    sweeps: list[int] = []
    real = factory_module._delete_orphan_ledgers

    async def sweep(store, bookkeeper) -> None:
        sweeps.append(1)
        if run_it:
            await real(store, bookkeeper)

    monkeypatch.setattr(factory_module, "_delete_orphan_ledgers", sweep)
    return sweeps


async def test_a_clean_stop_sweeps_and_the_next_start_does_not(tmp_path: Path, monkeypatch) -> None:
    sweeps = counting_sweeps(monkeypatch)
    async with open_storage(tmp_path) as factory:   # a first start: no mark
        assert sweeps == [1]
        ledger = await factory.open_ledger(TOPIC)
        await ledger.add_entry(b"kept")
        orphan = await factory.bookkeeper.create_ledger()   # as if a rollover died half-way
    assert sweeps == [1, 1] and (tmp_path / MARK_NAME).exists()
    async with open_storage(tmp_path) as factory:
        assert sweeps == [1, 1] and not (tmp_path / MARK_NAME).exists()
        assert orphan.ledger_id not in await factory.bookkeeper.list_ledgers()
        ledger = await factory.open_ledger(TOPIC)
        assert [e.data for e in await ledger.read_entries(ledger.first_position(), 10)] == [b"kept"]


async def test_a_start_without_the_mark_sweeps(tmp_path: Path, monkeypatch) -> None:
    sweeps = counting_sweeps(monkeypatch, run_it=False)
    async with open_storage(tmp_path) as factory:
        orphan = await factory.bookkeeper.create_ledger()
    assert sweeps == [1, 1]   # neither swept (run_it=False): the orphan is still there
    (tmp_path / MARK_NAME).unlink()   # as after a kill -9: the stop never came
    monkeypatch.undo()
    async with open_storage(tmp_path) as factory:
        assert orphan.ledger_id not in await factory.bookkeeper.list_ledgers()


async def test_a_stop_whose_sweep_fails_leaves_no_mark(tmp_path: Path, monkeypatch) -> None:
    async with open_storage(tmp_path):
        async def failing(store, bookkeeper) -> None:
            raise OSError(5, "Input/output error")
        monkeypatch.setattr(factory_module, "_delete_orphan_ledgers", failing)
    assert not (tmp_path / MARK_NAME).exists()
