"""The policies a command line sets at namespace and topic level, as pulsar-admin names them, with
the flags a user types (10M, 1h, 2s) and what a get then shows: one table for Pulsar's own
pulsar-admin (test_pulsar_admin_policies.py) and for `pulsard admin` (test_admin_cli_policies.py),
which takes the same verbs and flags."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from compat_tests.admin_http import AdminHttp

Command = tuple[str, ...]


@dataclass(frozen=True)
class Policy:
    """One policy as pulsar-admin names it at each level, the flags set, and what gets print back."""

    ns_verb: str | None                  # namespaces {set,get,remove}-<ns_verb>; None: topic level only
    ns_flags: tuple[str, ...]
    ns_value: object
    topic_verbs: dict[str, str] = field(default_factory=dict)   # group -> verb stem
    topic_flags: dict[str, tuple[str, ...]] = field(default_factory=dict)   # group -> flags
    topic_value: object = None
    applied: bool = False                # the topic groups' get takes -ap


def both(stem: str) -> dict[str, str]:
    return {"topics": stem, "topicPolicies": stem}


def same(*flags: str) -> dict[str, tuple[str, ...]]:
    return {"topics": flags, "topicPolicies": flags}


def rates(msg: int, byte: int, period: int, relative: bool) -> dict:
    return {"dispatchThrottlingRateInMsg": msg, "dispatchThrottlingRateInByte": byte,
            "relativeToPublishRate": relative, "ratePeriodInSecond": period}


POLICIES = (
    Policy("retention", ("-s", "100M", "-t", "1h"), {"retentionTimeInMinutes": 60, "retentionSizeInMB": 100},
           both("retention"), same("-s", "200M", "-t", "2h"), {"retentionTimeInMinutes": 120, "retentionSizeInMB": 200},
           applied=True),
    Policy("message-ttl", ("-ttl", "1h"), 3600, both("message-ttl"), same("-t", "2h"), 7200, applied=True),
    Policy("max-producers-per-topic", ("-p", "5"), 5, both("max-producers"), same("-p", "3"), 3, applied=True),
    Policy("max-consumers-per-topic", ("-c", "7"), 7, both("max-consumers"), same("-c", "4"), 4, applied=True),
    Policy("max-unacked-messages-per-consumer", ("-c", "1000"), 1000, both("max-unacked-messages-per-consumer"),
           same("-m", "11"), 11, applied=True),
    Policy("max-unacked-messages-per-subscription", ("-c", "2000"), 2000,
           both("max-unacked-messages-per-subscription"), same("-m", "22"), 22, applied=True),
    Policy("max-consumers-per-subscription", ("-c", "4"), 4, both("max-consumers-per-subscription"),
           same("-c", "2"), 2),
    Policy("max-subscriptions-per-topic", ("-m", "6"), 6,
           {"topics": "max-subscriptions", "topicPolicies": "max-subscriptions-per-topic"},
           {"topics": ("-m", "9"), "topicPolicies": ("-s", "9")}, 9),
    Policy(None, (), None, both("max-message-size"), same("-m", "10240"), 10240),
    Policy("persistence", ("-e", "1", "-w", "1", "-a", "1", "-r", "2.5"),
           {"bookkeeperEnsemble": 1, "bookkeeperWriteQuorum": 1, "bookkeeperAckQuorum": 1,
            "managedLedgerMaxMarkDeleteRate": 2.5},
           both("persistence"), same("-e", "1", "-w", "1", "-a", "1", "-r", "1"),
           {"bookkeeperEnsemble": 1, "bookkeeperWriteQuorum": 1, "bookkeeperAckQuorum": 1,
            "managedLedgerMaxMarkDeleteRate": 1.0}),
    Policy("publish-rate", ("-m", "200", "-b", "2000"),
           {"publishThrottlingRateInMsg": 200, "publishThrottlingRateInByte": 2000},
           both("publish-rate"), same("-m", "20", "-b", "300"),
           {"publishThrottlingRateInMsg": 20, "publishThrottlingRateInByte": 300}),
    Policy("dispatch-rate", ("-md", "100", "-bd", "1000", "-dt", "2", "-rp"), rates(100, 1000, 2, True),
           both("dispatch-rate"), same("-md", "30", "-bd", "400", "-dt", "5"), rates(30, 400, 5, False), applied=True),
    Policy("subscription-dispatch-rate", ("-md", "50", "-bd", "500", "-dt", "3"), rates(50, 500, 3, False),
           both("subscription-dispatch-rate"), same("-md", "31", "-bd", "401", "-dt", "6", "-rp"),
           rates(31, 401, 6, True), applied=True),
    Policy("subscribe-rate", ("-sr", "10", "-st", "20"), {"subscribeThrottlingRatePerConsumer": 10,
                                                          "ratePeriodInSecond": 20},
           both("subscribe-rate"), same("-sr", "3", "-st", "40"),
           {"subscribeThrottlingRatePerConsumer": 3, "ratePeriodInSecond": 40}, applied=True),
    Policy("deduplication", ("--enable",), True, both("deduplication"), same("--disable"), False),
    Policy("deduplication-snapshot-interval", ("-i", "60"), 60, both("deduplication-snapshot-interval"),
           same("-i", "15"), 15),
    Policy("delayed-delivery", ("-e", "-t", "2s"), {"tickTime": 2000, "active": True},
           both("delayed-delivery"), same("-d", "-t", "3s"),
           {"tickTime": 3000, "active": False}, applied=True),
    Policy("inactive-topic-policies", ("-e", "-t", "1h", "-m", "delete_when_no_subscriptions"),
           {"inactiveTopicDeleteMode": "delete_when_no_subscriptions", "maxInactiveDurationSeconds": 3600,
            "deleteWhileInactive": True},
           both("inactive-topic-policies"), same("-d", "-t", "2h", "-m", "delete_when_subscriptions_caught_up"),
           {"inactiveTopicDeleteMode": "delete_when_subscriptions_caught_up", "maxInactiveDurationSeconds": 7200,
            "deleteWhileInactive": False}, applied=True),
    Policy("compaction-threshold", ("-t", "10M"), 10 * 2**20, both("compaction-threshold"), same("-t", "20M"),
           20 * 2**20, applied=True),
    Policy("subscription-types-enabled", ("-t", "Shared,Failover"), ["Failover", "Shared"],
           both("subscription-types-enabled"), same("-t", "Exclusive,Key_Shared"), ["Exclusive", "Key_Shared"]),
    Policy("subscription-expiration-time", ("-t", "30"), 30),
    Policy("schema-compatibility-strategy", ("-c", "FORWARD"), "FORWARD",   # topicPolicies only, and no namespace remove
           {"topicPolicies": "schema-compatibility-strategy"}, {"topicPolicies": ("-s", "BACKWARD")}, "BACKWARD",
           applied=True),
)
#: what a get prints once the policy is removed, where not null
UNSET = {"subscription-types-enabled": []}
#: what -ap prints once neither level sets it: the broker's configuration (the test brokers')
BROKER_VALUES = {
    "retention": {"retentionTimeInMinutes": 0, "retentionSizeInMB": 0}, "message-ttl": 0,
    "max-unacked-messages-per-consumer": 50000, "max-unacked-messages-per-subscription": 200000,
    "delayed-delivery": {"tickTime": 1000, "active": True}, "compaction-threshold": 0,
}
NO_QUOTA = {"limitSize": -1, "limitTime": -1, "policy": "producer_request_hold"}
def comparable(value: object) -> object:
    """A delayed delivery policy without `maxDeliveryDelayInMillis: 0`: Pulsar 3.0.7 has no such
    field (newer pulsar-admin adds it as 0, pulsard keeps it at namespace level); lists sorted."""
    if isinstance(value, dict) and value.get("maxDeliveryDelayInMillis") == 0:
        return {key: item for key, item in value.items() if key != "maxDeliveryDelayInMillis"}
    return sorted(value) if isinstance(value, list) else value


NO_SCHEMA_REMOVE = "schema-compatibility-strategy"   # pulsar-admin's namespaces has no remove of it
QUOTA_GET = {"topics": "get-backlog-quotas", "topicPolicies": "get-backlog-quota"}
NS_QUOTA = {"destination_storage": {"limitSize": 10 * 2**20, "limitTime": -1, "policy": "producer_request_hold"}}
TOPIC_QUOTA = {"destination_storage": {"limitSize": 20 * 2**20, "limitTime": -1, "policy": "producer_exception"}}


class Scenario:
    """A new namespace and its topics; the commands that set and remove every policy of POLICIES
    (a topic for each topic policy: Pulsar applies topic policies asynchronously and rewrites the
    topic's whole TopicPolicies on every change, so quick changes of one topic can undo each
    other there) and the gets with what they should show after each step."""

    def __init__(self, web_url: str) -> None:
        self.http = AdminHttp(web_url)
        self.ns = f"public/pol-{uuid.uuid4().hex[:6]}"
        assert self.http.put(f"/admin/v2/namespaces/{self.ns}").status_code == 204
        self.inherit = self.topic("inherit")   # no policy of its own: -ap shows the namespace's, then the broker's
        self.own = {(group, stem): self.topic(f"{group}-{stem}") for p in POLICIES for group, stem in p.topic_verbs.items()}
        self.quota = {group: self.topic(f"{group}-quota") for group in QUOTA_GET}

    def topic(self, name: str) -> str:
        assert self.http.put(f"/admin/v2/persistent/{self.ns}/{name}").status_code == 204
        return f"persistent://{self.ns}/{name}"

    def sets(self) -> list[Command]:
        commands = [("namespaces", f"set-{p.ns_verb}", self.ns, *p.ns_flags) for p in POLICIES if p.ns_verb]
        commands += [(group, f"set-{stem}", self.own[group, stem], *p.topic_flags[group])
                     for p in POLICIES for group, stem in p.topic_verbs.items()]
        commands += [("namespaces", "set-backlog-quota", self.ns, "-l", "10M", "-p", "producer_request_hold")]
        return commands + [(group, "set-backlog-quota", name, "-l", "20M", "-p", "producer_exception")
                           for group, name in self.quota.items()]

    def after_sets(self) -> dict[Command, object]:
        expected: dict[Command, object] = {("namespaces", "get-backlog-quotas", self.ns): NS_QUOTA}
        for p in POLICIES:
            if p.ns_verb:
                expected["namespaces", f"get-{p.ns_verb}", self.ns] = p.ns_value
            for group, stem in p.topic_verbs.items():
                expected[group, f"get-{stem}", self.own[group, stem]] = p.topic_value
                if p.applied:
                    expected[group, f"get-{stem}", self.own[group, stem], "-ap"] = p.topic_value
                    expected[group, f"get-{stem}", self.inherit, "-ap"] = p.ns_value
        for group, name in self.quota.items():
            expected[group, QUOTA_GET[group], name] = TOPIC_QUOTA
            expected[group, QUOTA_GET[group], name, "-ap"] = TOPIC_QUOTA
            expected[group, QUOTA_GET[group], self.inherit, "-ap"] = NS_QUOTA
        return expected

    def removes(self) -> list[Command]:
        commands = [("namespaces", f"remove-{p.ns_verb}", self.ns) for p in POLICIES
                    if p.ns_verb and p.ns_verb != NO_SCHEMA_REMOVE]
        commands += [(group, f"remove-{stem}", self.own[group, stem])
                     for p in POLICIES for group, stem in p.topic_verbs.items()]
        return commands + [("namespaces", "remove-backlog-quota", self.ns)] + [
            (group, "remove-backlog-quota", name) for group, name in self.quota.items()]

    def after_removes(self) -> dict[Command, object]:
        expected: dict[Command, object] = {("namespaces", "get-backlog-quotas", self.ns): {}}
        for p in POLICIES:
            if p.ns_verb and p.ns_verb != NO_SCHEMA_REMOVE:
                expected["namespaces", f"get-{p.ns_verb}", self.ns] = UNSET.get(p.ns_verb)
            for group, stem in p.topic_verbs.items():
                expected[group, f"get-{stem}", self.own[group, stem]] = UNSET.get(p.ns_verb)
                if stem in BROKER_VALUES:
                    expected[group, f"get-{stem}", self.inherit, "-ap"] = BROKER_VALUES[stem]
        for group, name in self.quota.items():
            expected[group, QUOTA_GET[group], name] = {}
            expected[group, QUOTA_GET[group], self.inherit, "-ap"] = {"destination_storage": NO_QUOTA,
                                                                      "message_age": NO_QUOTA}
        return expected
