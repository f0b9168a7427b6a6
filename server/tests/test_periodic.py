"""A chore's pass over every loaded topic lets the loop run between turns, so a broker with
100,000 topics keeps answering its clients while retention or a quota check goes over them."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Awaitable, Callable

from server.policies.periodic import TURN, in_turns
from server.policies.retention import RetentionMonitor


def progress_seen_by_others(work: Callable[[], Awaitable[None]], progress: Callable[[], int]) -> list[int]:
    """Run ``work`` beside a task that notes ``progress()`` each time the loop lets it run."""
    async def main() -> list[int]:
        seen: list[int] = []

        async def other() -> None:
            while True:
                seen.append(progress())
                await asyncio.sleep(0)

        task = asyncio.get_running_loop().create_task(other())
        await asyncio.sleep(0)
        await work()
        task.cancel()
        return seen

    return asyncio.run(main())


def test_in_turns_yields_every_item_in_order_and_lets_others_run_between_turns():
    items: list[int] = []

    async def take_all() -> None:
        async for item in in_turns(range(TURN * 3 + 7)):
            items.append(item)

    seen = progress_seen_by_others(take_all, lambda: len(items))
    assert items == list(range(TURN * 3 + 7))
    assert [p for p in seen if 0 < p < len(items)] == [TURN, 2 * TURN, 3 * TURN]


def test_a_chore_over_many_topics_is_not_one_callback():
    trimmed: list[object] = []

    class FakeLedger:
        async def trim(self) -> None:       # nothing to trim: never suspends
            trimmed.append(self)

    async def refresh_policies(topic: object) -> None:
        return None

    topics = [SimpleNamespace(ledger=FakeLedger()) for _ in range(TURN * 4)]
    broker = SimpleNamespace(config=SimpleNamespace(retention_check_interval_in_seconds=60),
                             topics=topics, refresh_policies=refresh_policies)

    seen = progress_seen_by_others(RetentionMonitor(broker).check, lambda: len(trimmed))
    assert len(trimmed) == len(topics)
    assert [p for p in seen if 0 < p < len(topics)] == [TURN, 2 * TURN, 3 * TURN]
