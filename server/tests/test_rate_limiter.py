"""The rate limiter under a clock the test moves: what a period allows, what an overshoot owes,
and when permits come back."""

from __future__ import annotations

from server.policies.dispatch_throttle import DispatchThrottle
from server.policies.rate_limiter import Rate, RateLimiter, RatePair


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_full_bucket_allows_a_period_s_permits_and_an_overshoot_is_paid_back_first():
    clock = Clock()
    limiter = RateLimiter(100, 1.0, clock)
    assert limiter.acquire(60)
    assert not limiter.acquire(290)          # 350 taken: 250 owed
    assert limiter.refill_in_s() == 2.6      # the debt, then a tenth of the permits
    clock.now += 2.5
    assert limiter.available() == 0
    clock.now += 0.5
    assert limiter.available() == 50
    clock.now += 10.0
    assert limiter.available() == 100        # never more than one period's permits


def test_without_precision_each_period_starts_afresh():
    clock = Clock()
    limiter = RateLimiter(100, 1.0, clock, precise=False)
    assert not limiter.acquire(350)
    assert limiter.refill_in_s() == 1.0
    clock.now += 0.5
    assert limiter.available() == 0
    clock.now += 0.5
    assert limiter.available() == 100


def test_a_period_of_several_seconds_and_a_new_rate_keeping_what_was_taken():
    clock = Clock()
    pair = RatePair(clock)
    pair.set_rate(Rate(messages=10, size=1000, period_s=5.0))
    assert not pair.acquire(3, 1500)         # bytes ran out, messages did not
    assert pair.refill_in_s() == 3.0         # 600 bytes owed, then 100 at 200 a second
    pair.set_rate(Rate(messages=10, size=1000, period_s=1.0))
    assert pair.refill_in_s() == 0.6
    pair.set_rate(Rate())
    assert not pair.limited and pair.acquire(10**9, 10**12)


def test_relative_limits_add_the_measured_rate_at_each_period():
    clock = Clock()
    measured = [50.0, 0.0]
    pair = RatePair(clock, measured=lambda: (measured[0], measured[1]))
    pair.set_rate(Rate(messages=10, relative=True))
    assert pair.messages is not None and pair.messages.permits == 60
    measured[0] = 200.0
    pair.acquire(1, 0)
    clock.now += 1.0
    assert pair.messages.available() == 210


def test_a_read_fetches_no_more_entries_than_the_fewest_permits_allow():
    clock = Clock()
    topic, subscription = RatePair(clock), RatePair(clock)
    topic.set_rate(Rate(messages=50))
    subscription.set_rate(Rate(size=10_000))
    throttle = DispatchThrottle((topic, subscription))
    assert throttle.read_limit(100, None, None) == 50
    assert throttle.read_limit(100, 20.0, None) == 3          # batches of 20 messages
    assert throttle.read_limit(100, None, 1000.0) == 10
    throttle.dispatched(10, 10_000)
    assert not throttle.allows_more() and throttle.read_limit(100, None, 1000.0) == 0
    assert throttle.refill_in_s() == 0.1
    clock.now += 0.5
    assert throttle.read_limit(100, None, 1000.0) == 5
