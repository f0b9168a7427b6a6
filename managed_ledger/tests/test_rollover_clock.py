"""RolloverClock: one loop timer fires every ledger's deadline, once, in order; a timer
restarted, cancelled or stopped meanwhile is passed over; one asked again retries later."""

from __future__ import annotations

import asyncio
from pathlib import Path

from managed_ledger.config import StorageConfig
from managed_ledger.rollover import RolloverClock, RolloverTimer


def config(seconds: float) -> StorageConfig:
    return StorageConfig(data_dir=Path("."), max_ledger_rollover_minutes=seconds / 60)


async def test_deadlines_fire_once_each_and_skip_what_changed() -> None:
    clock = RolloverClock()
    fired: list[str] = []

    def timer(name: str, seconds: float, again: bool = False) -> RolloverTimer:
        return RolloverTimer(clock, config(seconds), lambda owner: fired.append(owner) or again, name)

    later, sooner, cancelled, stopped, restarted = (timer("later", 0.7), timer("sooner", 0.35),
                                                    timer("cancelled", 0.1), timer("stopped", 0.1),
                                                    timer("restarted", 0.1))
    many = [timer(f"same-{i}", 0.5) for i in range(100)]
    for each in (later, sooner, cancelled, stopped, restarted, *many):
        each.restart()
    cancelled.cancel()
    stopped.stop()
    await asyncio.sleep(0.05)
    restarted.restart()   # its first deadline is passed over, its second one fires
    await asyncio.sleep(0.9)   # deadlines fire up to a bucket (0.1 s) late
    assert fired == ["restarted", "sooner", *(f"same-{i}" for i in range(100)), "later"]


async def test_a_ledger_not_due_is_asked_again(monkeypatch) -> None:
    monkeypatch.setattr(RolloverTimer, "RETRY_S", 0.1)
    answers = [True, True, False]
    RolloverTimer(RolloverClock(), config(0.05), lambda owner: owner.pop(0), answers).restart()
    await asyncio.sleep(0.6)
    assert answers == []
