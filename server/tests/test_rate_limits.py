"""Which rates are in force for a topic: topic over namespace over broker keys, a rate that
limits nothing leaving the level below in force (as Pulsar normalizes it), per-subscription
overrides."""

from __future__ import annotations

from server.config import BrokerConfig
from server.policies.catalog import applied_view
from server.policies.rate_limiter import Rate
from server.policies.rate_limits import resolve

CLUSTER = "standalone"


def test_a_topic_rate_that_limits_nothing_leaves_the_namespace_s_in_force():
    namespace = {"publishMaxMessageRate": {CLUSTER: {"publishThrottlingRateInMsg": 100,
                                                     "publishThrottlingRateInByte": -1}}}
    topic = {"publishRate": {"publishThrottlingRateInMsg": -1, "publishThrottlingRateInByte": -1}}
    rates = resolve(applied_view(namespace, topic, CLUSTER), BrokerConfig())
    assert rates.publish == Rate(100, -1, precise=False)


def test_the_broker_keys_apply_where_no_level_sets_a_rate():
    config = BrokerConfig(dispatch_throttling_rate_per_subscription_in_msg=50, subscribe_throttling_rate_per_consumer=2,
                          precise_topic_publish_rate_limiter_enable=True)
    rates = resolve(applied_view({}, {}, CLUSTER), config)
    assert rates.subscription == Rate(50, 0, 1)
    assert rates.subscribe == (2, 30)
    assert not rates.publish.limited and not rates.dispatch.limited


def test_one_subscription_s_own_dispatch_rate_and_another_cluster_s_rates():
    namespace = {"topicDispatchRate": {"elsewhere": {"dispatchThrottlingRateInMsg": 10}}}
    topic = {"subscriptionPolicies": {"slow": {"dispatchRate": {
        "dispatchThrottlingRateInMsg": 5, "dispatchThrottlingRateInByte": -1, "relativeToPublishRate": False,
        "ratePeriodInSecond": 2}}, "unlimited": {"dispatchRate": {"dispatchThrottlingRateInMsg": -1}}}}
    rates = resolve(applied_view(namespace, topic, CLUSTER), BrokerConfig())
    assert rates.overrides == {"slow": Rate(5, -1, 2)}
    assert not rates.dispatch.limited and rates.limited   # the override alone limits the topic
