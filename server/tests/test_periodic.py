"""A chore's pass over every loaded topic lets the loop run between turns, so a broker with
100,000 topics keeps answering its clients while retention or a quota check goes over them."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from server.policies.periodic import TURN, in_turns
from server.policies.retention import RetentionMonitor


def test_in_turns_yields_every_item_in_order_and_lets_others_run_between_turns():
    async def main() -> tuple[list[int], list[int]]:
        ticks: list[int] = []
        seen: list[int] = []

        async def other() -> None:
            while True:
                ticks.append(len(seen))
                await asyncio.sleep(0)

        task = asyncio.get_running_loop().create_task(other())
        await asyncio.sleep(0)
        async for item in in_turns(range(TURN * 3 + 7)):
            seen.append(item)
        task.cancel()
        return seen, ticks

    seen, ticks = asyncio.run(main())
    assert seen == list(range(TURN * 3 + 7))
    assert [t for t in ticks if 0 < t < len(seen)] == [TURN, 2 * TURN, 3 * TURN]


def test_a_chore_over_many_topics_is_not_one_callback():
    class FakeLedger:
        async def trim(self) -> None:       # nothing to trim: never suspends
            trimmed.append(self)

    trimmed: list[FakeLedger] = []
    topics = [SimpleNamespace(ledger=FakeLedger()) for _ in range(TURN * 4)]

    async def refresh_policies(topic: object) -> None:
        return None

    broker = SimpleNamespace(config=SimpleNamespace(retention_check_interval_in_seconds=60),
                             topics=topics, refresh_policies=refresh_policies)

    async def main() -> list[int]:
        progress: list[int] = []

        async def other() -> None:
            while True:
                progress.append(len(trimmed))
                await asyncio.sleep(0)

        task = asyncio.get_running_loop().create_task(other())
        await asyncio.sleep(0)
        await RetentionMonitor(broker).check()
        task.cancel()
        return progress

    progress = asyncio.run(main())
    assert len(trimmed) == len(topics)
    assert [p for p in progress if 0 < p < len(topics)] == [TURN, 2 * TURN, 3 * TURN]
