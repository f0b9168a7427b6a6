"""DelayedDeliveryTracker: what it holds, when the due positions come back, and in what order."""

from __future__ import annotations

import asyncio

from managed_ledger.position import Position
from server.topics.subscriptions.delayed_delivery import DelayedDeliveryTracker, now_ms

P = [Position(1, i) for i in range(5)]


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, timeout=10))


async def collect_due(tick_ms: int, delays_ms: dict[Position, int], wait_s: float):
    """Hold each position for its delay; return [(positions, ms after start)] per callback."""
    calls: list[tuple[list[Position], int]] = []
    start = now_ms()
    tracker = DelayedDeliveryTracker(tick_ms, lambda due: calls.append((due, now_ms() - start)))
    held = [tracker.hold(p, start + delay) for p, delay in delays_ms.items()]
    await asyncio.sleep(wait_s)
    return held, calls, tracker


def test_past_or_present_times_are_not_held():
    async def scenario():
        tracker = DelayedDeliveryTracker(1000, lambda due: None)
        assert not tracker.hold(P[0], now_ms() - 1)
        assert not tracker.hold(P[1], now_ms())
        assert len(tracker) == 0
    run(scenario())


def test_due_positions_come_back_in_time_order_never_early():
    held, calls, tracker = run(collect_due(10, {P[2]: 400, P[0]: 100, P[1]: 250}, 0.7))
    assert held == [True, True, True]
    assert [due for due, _ in calls] == [[P[0]], [P[1]], [P[2]]]
    assert [at >= delay for (_, at), delay in zip(calls, (100, 250, 400))] == [True] * 3
    assert len(tracker) == 0


def test_the_tick_coalesces_close_deliveries():
    _, calls, _ = run(collect_due(300, {P[0]: 20, P[1]: 150, P[2]: 200}, 0.6))
    assert calls[0][0] == [P[0]]
    assert calls[1][0] == [P[1], P[2]]            # fired once, a tick after the first
    assert calls[1][1] >= 300


def test_holding_twice_is_holding_once_and_clear_forgets_everything():
    async def scenario():
        calls = []
        tracker = DelayedDeliveryTracker(10, calls.append)
        at = now_ms() + 50
        assert tracker.hold(P[0], at) and tracker.hold(P[0], at)
        assert len(tracker) == 1
        tracker.hold(P[1], at)
        tracker.clear()
        await asyncio.sleep(0.15)
        assert calls == [] and len(tracker) == 0
    run(scenario())
