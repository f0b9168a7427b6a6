"""`pulsard admin` policy verbs: pulsar-admin's names and flags turned into REST calls, without a broker."""

import pytest

from server.admin.cli import COMMANDS, AdminCallError, Request
from server.admin.policy_flags import NAMESPACE_FLAGS, TOPIC_FLAGS
from server.cli import _parser
from server.policies.catalog import NAMESPACE_SPECS, TOPIC_SPECS

NS = "/admin/v2/namespaces/t/ns"
TOPIC = "persistent://t/ns/x"
TP = "/admin/v2/persistent/t/ns/x"


def parsed(*argv: str):
    args = _parser().parse_args(["admin", *argv])
    return args.build(args)


def test_every_policy_of_the_catalog_has_pulsar_admin_flags_at_each_level():
    assert [spec.field for spec in NAMESPACE_SPECS if spec.field not in NAMESPACE_FLAGS] == []
    assert [spec.field for spec in TOPIC_SPECS if spec.field not in TOPIC_FLAGS] == []


def test_topic_policies_is_the_policy_half_of_topics():
    assert set(COMMANDS["topicPolicies"]) <= set(COMMANDS["topics"])
    assert {"set-max-subscriptions", "set-max-subscriptions-per-topic", "get-backlog-quota", "get-backlog-quotas",
            "enable-deduplication", "set-schema-compatibility-strategy"} <= set(COMMANDS["topicPolicies"])


@pytest.mark.parametrize("argv, request_", [
    (("namespaces", "set-persistence", "t/ns", "-e", "3", "-w", "2", "-a", "1", "-r", "1.5"),
     Request("POST", NS + "/persistence", {"bookkeeperEnsemble": 3, "bookkeeperWriteQuorum": 2,
                                           "bookkeeperAckQuorum": 1, "managedLedgerMaxMarkDeleteRate": 1.5})),
    (("namespaces", "set-persistence", "t/ns"),   # pulsar-admin's defaults
     Request("POST", NS + "/persistence", {"bookkeeperEnsemble": 2, "bookkeeperWriteQuorum": 2,
                                           "bookkeeperAckQuorum": 2, "managedLedgerMaxMarkDeleteRate": 0.0})),
    (("namespaces", "set-dispatch-rate", "t/ns", "--msg-dispatch-rate", "100", "--byte-dispatch-rate", "1000",
      "--dispatch-rate-period", "2", "--relative-to-publish-rate"),
     Request("POST", NS + "/dispatchRate", {"dispatchThrottlingRateInMsg": 100, "dispatchThrottlingRateInByte": 1000,
                                            "ratePeriodInSecond": 2, "relativeToPublishRate": True})),
    (("namespaces", "set-subscription-dispatch-rate", "t/ns", "-md", "5"),
     Request("POST", NS + "/subscriptionDispatchRate", {"dispatchThrottlingRateInMsg": 5,
                                                        "dispatchThrottlingRateInByte": -1, "ratePeriodInSecond": 1,
                                                        "relativeToPublishRate": False})),
    (("namespaces", "set-publish-rate", "t/ns", "-m", "10", "-b", "2048"),
     Request("POST", NS + "/publishRate", {"publishThrottlingRateInMsg": 10, "publishThrottlingRateInByte": 2048})),
    (("namespaces", "set-subscribe-rate", "t/ns", "-sr", "5"),
     Request("POST", NS + "/subscribeRate", {"subscribeThrottlingRatePerConsumer": 5, "ratePeriodInSecond": 30})),
    (("namespaces", "set-delayed-delivery", "t/ns", "--enable", "--time", "2s", "--maxDelay", "1m"),
     Request("POST", NS + "/delayedDelivery", {"active": True, "tickTime": 2000, "maxDeliveryDelayInMillis": 60000})),
    (("namespaces", "set-delayed-delivery", "t/ns", "-d"),
     Request("POST", NS + "/delayedDelivery", {"active": False, "tickTime": 1000, "maxDeliveryDelayInMillis": 0})),
    (("namespaces", "set-subscription-types-enabled", "t/ns", "--types", "Shared,Key_Shared"),
     Request("POST", NS + "/subscriptionTypesEnabled", ["Shared", "Key_Shared"])),
    (("namespaces", "set-max-consumers-per-subscription", "t/ns", "-c", "3"),
     Request("POST", NS + "/maxConsumersPerSubscription", 3)),
    (("namespaces", "set-max-unacked-messages-per-consumer", "t/ns", "--max-unacked-messages-per-topic", "100"),
     Request("POST", NS + "/maxUnackedMessagesPerConsumer", 100)),
    (("namespaces", "set-max-unacked-messages-per-subscription", "t/ns", "-c", "200"),
     Request("POST", NS + "/maxUnackedMessagesPerSubscription", 200)),
    (("namespaces", "set-max-subscriptions-per-topic", "t/ns", "-m", "4"),
     Request("POST", NS + "/maxSubscriptionsPerTopic", 4)),
    (("namespaces", "set-subscription-expiration-time", "t/ns", "-t", "30"),
     Request("POST", NS + "/subscriptionExpirationTime", 30)),
    (("namespaces", "set-deduplication-snapshot-interval", "t/ns", "-i", "60"),
     Request("POST", NS + "/deduplicationSnapshotInterval", 60)),
    (("namespaces", "set-compaction-threshold", "t/ns", "--threshold", "10M"),
     Request("PUT", NS + "/compactionThreshold", 10 * 2**20)),
    (("namespaces", "remove-compaction-threshold", "t/ns"), Request("DELETE", NS + "/compactionThreshold")),
    (("topics", "set-message-ttl", TOPIC, "-t", "1h"), Request("POST", TP + "/messageTTL", 3600)),
    (("topics", "set-max-producers", TOPIC, "--max-producers", "3"), Request("POST", TP + "/maxProducers", 3)),
    (("topics", "set-max-consumers", TOPIC, "-c", "4"), Request("POST", TP + "/maxConsumers", 4)),
    (("topics", "set-max-unacked-messages-per-consumer", TOPIC, "--maxNum", "7"),
     Request("POST", TP + "/maxUnackedMessagesOnConsumer", 7)),
    (("topicPolicies", "set-max-unacked-messages-per-subscription", TOPIC, "-m", "8"),
     Request("POST", TP + "/maxUnackedMessagesOnSubscription", 8)),
    (("topics", "set-max-subscriptions", TOPIC, "-m", "9"), Request("POST", TP + "/maxSubscriptionsPerTopic", 9)),
    (("topicPolicies", "set-max-subscriptions-per-topic", TOPIC, "-s", "9"),
     Request("POST", TP + "/maxSubscriptionsPerTopic", 9)),
    (("topics", "set-max-message-size", TOPIC, "-m", "10240"), Request("POST", TP + "/maxMessageSize", 10240)),
    (("topics", "set-compaction-threshold", TOPIC, "-t", "1G"), Request("POST", TP + "/compactionThreshold", 2**30)),
    (("topics", "set-deduplication", TOPIC, "--enable"), Request("POST", TP + "/deduplicationEnabled", True)),
    (("topics", "disable-deduplication", TOPIC), Request("POST", TP + "/deduplicationEnabled", False)),
    (("topicPolicies", "set-schema-compatibility-strategy", TOPIC, "-s", "FORWARD"),
     Request("PUT", TP + "/schemaCompatibilityStrategy", "FORWARD")),
    (("topicPolicies", "set-inactive-topic-policies", TOPIC, "-d", "-t", "2h", "-m",
      "delete_when_subscriptions_caught_up"),
     Request("POST", TP + "/inactiveTopicPolicies", {"deleteWhileInactive": False, "maxInactiveDurationSeconds": 7200,
                                                     "inactiveTopicDeleteMode": "delete_when_subscriptions_caught_up"})),
    (("topics", "get-dispatch-rate", TOPIC, "-ap"), Request("GET", TP + "/dispatchRate", query={"applied": "true"})),
    (("topicPolicies", "get-backlog-quota", TOPIC, "--applied"),
     Request("GET", TP + "/backlogQuotaMap", query={"applied": "true"})),
    (("topics", "get-persistence", TOPIC), Request("GET", TP + "/persistence")),
    (("topicPolicies", "remove-subscribe-rate", TOPIC), Request("DELETE", TP + "/subscribeRate")),
    (("topics", "remove-backlog-quota", TOPIC, "-t", "message_age"),
     Request("DELETE", TP + "/backlogQuota", query={"backlogQuotaType": "message_age"})),
    (("topics", "set-retention", TOPIC, '{"retentionTimeInMinutes": 5, "retentionSizeInMB": 1}'),   # JSON instead
     Request("POST", TP + "/retention", {"retentionTimeInMinutes": 5, "retentionSizeInMB": 1})),
])
def test_pulsar_admin_flags_give_the_rest_call(argv, request_):
    assert parsed(*argv) == request_


def test_a_topic_backlog_quota_takes_the_namespace_flags():
    request = parsed("topics", "set-backlog-quota", TOPIC, "-t", "message_age", "-lt", "1h", "-p", "producer_exception")
    assert (request.method, request.path, request.body, request.query) == (
        "POST", TP + "/backlogQuota", {"limitTime": 3600, "policy": "producer_exception"},
        {"backlogQuotaType": "message_age"})


@pytest.mark.parametrize("argv, error", [
    (("namespaces", "set-delayed-delivery", "t/ns", "--time", "1s"), "Need to specify either --enable or --disable"),
    (("topics", "set-delayed-delivery", TOPIC, "-e", "-d"), "give only one of --enable or --disable"),
    (("namespaces", "set-subscription-types-enabled", "t/ns", "-t", "Shared,Sharde"), "Illegal subscription type Sharde"),
    (("topics", "set-inactive-topic-policies", TOPIC, "-t", "1h"), "Need to specify either enable-delete-while-inactive"),
    (("topics", "set-delayed-delivery", TOPIC, "-e", "-t", "soon"), "invalid time 'soon'"),
])
def test_bad_flag_values_are_refused_before_any_call(argv, error):
    with pytest.raises(ValueError, match=error):
        parsed(*argv)


def test_a_policy_needs_flags_or_a_value():
    for argv in (("namespaces", "set-dispatch-rate", "t/ns", "--bogus"), ("topics", "set-max-producers", TOPIC, "-x")):
        with pytest.raises(SystemExit):
            _parser().parse_args(["admin", *argv])
    with pytest.raises(AdminCallError, match="give the policy's flags"):
        parsed("topics", "set-max-producers", TOPIC)
