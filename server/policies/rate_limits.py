"""The rate limits in force for each loaded topic, kept as state across policy changes.

apply_policies hands every topic's applied view here (at load, after every change, and
periodically). Each limit is resolved topic > namespace > broker (the view, else the broker's
keys, broker_defaults.py) and pushed into the buckets the topic keeps (TopicRateLimits); a
bucket whose rate did not change keeps its state, so applying the same policies again hands out
no fresh permits. Where the buckets live: a topic's publish rate and dispatch rate on the topic,
a subscription's dispatch rate on the topic by subscription name, a resource group's in the
group (resource_groups.py), the broker's publish rate here.

What a topic does with them is small, so the hot path stays cheap: it counts each run of SENDs
against `publish_limits` (an empty tuple when nothing limits it), its dispatchers ask
`dispatch(subscription)` once per read, and a SUBSCRIBE calls `check_subscribe`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from server.config import BrokerConfig

from .broker_defaults import broker_default
from .catalog import (DISPATCH_RATE, PUBLISH_RATE, RESOURCE_GROUP, SUBSCRIBE_RATE, SUBSCRIPTION_DISPATCH_RATE,
                      SUBSCRIPTION_POLICIES)
from .dispatch_throttle import DispatchThrottle
from .publish_throttle import PublishThrottle
from .rate_limiter import Rate, RatePair
from .resource_groups import GroupLimits, ResourceGroups
from .subscribe_rate import SubscribeRateLimiter


class MeasuredStats(Protocol):
    def rates(self, window_s: float) -> Any:
        """msg_rate_in and msg_throughput_in over the last stats window."""


class RateLimitedTopic(Protocol):
    name: Any
    stats: MeasuredStats
    subscriptions: dict
    publish_limits: tuple
    rate_limits: TopicRateLimits | None


def _value_or_broker(view: dict[str, Any], field: str, config: BrokerConfig) -> dict[str, Any]:
    """The policy's value in the view, else the broker's (both in the policy's JSON shape)."""
    return view.get(field) or broker_default(field, config)


def publish_rate(value: dict[str, Any], precise: bool) -> Rate:
    return Rate(value.get("publishThrottlingRateInMsg", -1), value.get("publishThrottlingRateInByte", -1),
                precise=precise)


def dispatch_rate(value: dict[str, Any] | None) -> Rate:
    if not value:
        return Rate()
    return Rate(value.get("dispatchThrottlingRateInMsg", -1), value.get("dispatchThrottlingRateInByte", -1),
                value.get("ratePeriodInSecond", 1), bool(value.get("relativeToPublishRate")))


@dataclass(frozen=True)
class TopicRates:
    """The rates in force for one topic, resolved from its view."""

    publish: Rate
    dispatch: Rate
    subscription: Rate
    overrides: dict[str, Rate]     # subscription -> its own dispatch rate
    subscribe: tuple[int, int]     # subscribes per consumer, period in seconds

    @property
    def limited(self) -> bool:
        return self.publish.limited or self.dispatch.limited or self.subscription.limited or bool(self.overrides) \
            or self.subscribe[0] > 0


def resolve(view: dict[str, Any], config: BrokerConfig) -> TopicRates:
    subscribe = _value_or_broker(view, SUBSCRIBE_RATE, config)
    overrides = {name: rate for name, policies in (view.get(SUBSCRIPTION_POLICIES) or {}).items()
                 if (rate := dispatch_rate((policies or {}).get("dispatchRate"))).limited}
    return TopicRates(publish_rate(_value_or_broker(view, PUBLISH_RATE, config),
                                   config.precise_topic_publish_rate_limiter_enable),
                      dispatch_rate(_value_or_broker(view, DISPATCH_RATE, config)),
                      dispatch_rate(_value_or_broker(view, SUBSCRIPTION_DISPATCH_RATE, config)), overrides,
                      (subscribe.get("subscribeThrottlingRatePerConsumer", 0), subscribe.get("ratePeriodInSecond", 30)))


class TopicRateLimits:
    """The buckets of one topic: its publish rate, its dispatch rate, its subscriptions'
    dispatch rates and its subscribe rate."""

    def __init__(self, topic: RateLimitedTopic, stats_window_s: float) -> None:
        def measured() -> tuple[float, float]:
            rates = topic.stats.rates(stats_window_s)
            return rates.msg_rate_in, rates.msg_throughput_in

        self._measured = measured
        self.publish = PublishThrottle(f"of {topic.name}")
        self.dispatch_limits = RatePair(measured=measured)
        self.subscribe = SubscribeRateLimiter()
        self._subscription_rate = Rate()
        self._overrides: dict[str, Rate] = {}
        self._subscriptions: dict[str, RatePair] = {}
        self._group: RatePair | None = None
        self._throttles: dict[str, DispatchThrottle | None] = {}

    def update(self, rates: TopicRates, group: GroupLimits | None, subscriptions: set[str]) -> None:
        self.publish.set_rate(rates.publish)
        self.dispatch_limits.set_rate(rates.dispatch)
        self._subscription_rate, self._overrides = rates.subscription, rates.overrides
        self._group = group.dispatch if group is not None else None
        for name in set(self._subscriptions) - subscriptions:
            del self._subscriptions[name]
        for name, pair in self._subscriptions.items():
            pair.set_rate(self._rate_of(name))
        self._throttles.clear()
        self.subscribe.set_rate(*rates.subscribe)

    def _rate_of(self, subscription: str) -> Rate:
        return self._overrides.get(subscription, self._subscription_rate)

    def dispatch(self, subscription: str) -> DispatchThrottle | None:
        """The limits a subscription's next read obeys; None when nothing limits it."""
        try:
            return self._throttles[subscription]
        except KeyError:
            pass
        rate = self._rate_of(subscription)
        own = self._subscriptions.get(subscription)
        if own is None and rate.limited:
            own = self._subscriptions[subscription] = RatePair(measured=self._measured)
            own.set_rate(rate)
        limits = tuple(pair for pair in (self.dispatch_limits, own, self._group) if pair is not None and pair.limited)
        throttle = self._throttles[subscription] = DispatchThrottle(limits) if limits else None
        return throttle

    def check_subscribe(self, host: str, consumer_name: str, consumer_id: int) -> None:
        self.subscribe.check(host, consumer_name, consumer_id)


class BrokerRateLimits:
    """The broker's own publish throttle and the resource groups' buckets; pushes each
    topic's limits into it."""

    def __init__(self, config: BrokerConfig, groups: ResourceGroups) -> None:
        self.config = config
        self.groups = groups
        self.publish = PublishThrottle("of the broker")
        self.publish.set_rate(Rate(config.broker_publisher_throttling_max_message_rate,
                                   config.broker_publisher_throttling_max_byte_rate, precise=False))

    def apply(self, topic: RateLimitedTopic, view: dict[str, Any]) -> None:
        """Push the topic's limits into its buckets; a topic nothing has limited yet gets none."""
        rates, group = resolve(view, self.config), self.groups.limits(view.get(RESOURCE_GROUP))
        limits = topic.rate_limits
        if limits is None and (rates.limited or group is not None):
            limits = topic.rate_limits = TopicRateLimits(topic, self.config.stats_update_frequency_in_secs)
        if limits is not None:
            limits.update(rates, group, set(topic.subscriptions))
        throttles = (limits.publish if limits is not None else None, group.publish if group is not None else None,
                     self.publish)
        topic.publish_limits = tuple(t for t in throttles if t is not None and t.limited)
