"""`pulsard admin namespaces|topics|topicPolicies get-|set-|remove-<policy>`, generated from the policy
catalog (server/policies/catalog.py) with pulsar-admin's verb names and flags (policy_flags.py).

pulsar-admin has the topic-level verbs twice, in `topics` and in `topicPolicies`, calling the same
REST paths; here both groups get one table, where each verb answers to either group's name
(`set-max-subscriptions` / `set-max-subscriptions-per-topic`, `get-backlog-quotas` /
`get-backlog-quota`). Topic gets take `-ap/--applied`: the value in force (topic, else namespace,
else broker). A policy's value may also be given as JSON instead of flags.
"""

from __future__ import annotations

import argparse
import json
from typing import Any, Callable

from server.policies.fields import BACKLOG_QUOTA_POLICIES, SIZE_QUOTA, TIME_QUOTA
from server.policies.catalog import NAMESPACE_SPECS, TOPIC_SPECS
from server.policies.policy_values import BACKLOG_QUOTA_TYPES

from .cli_requests import AdminCallError, Arguments, CommandTable, Request, namespace_path, topic_path
from .policy_flags import NAMESPACE_FLAGS, TOPIC_FLAGS, FlagSet
from .units import parse_relative_time, parse_size

#: REST path of a topic policy -> pulsar-admin's verb names, where its kebab case is not one
_TOPIC_VERBS = {
    "deduplicationEnabled": ("deduplication",),
    "maxUnackedMessagesOnConsumer": ("max-unacked-messages-per-consumer",),
    "maxUnackedMessagesOnSubscription": ("max-unacked-messages-per-subscription",),
    "maxSubscriptionsPerTopic": ("max-subscriptions-per-topic", "max-subscriptions"),
}
_APPLIED: Arguments = [(("-ap", "--applied"), {"action": "store_true", "help": "the value in force"})]


class _Target:
    """What a policy belongs to: the positional argument's name and its REST path."""

    def __init__(self, argument: str, path: Callable[[str], str], applied: bool) -> None:
        self.argument, self.path, self.applied = argument, path, applied

    def of(self, a: argparse.Namespace, policy_path: str) -> str:
        return f"{self.path(getattr(a, self.argument))}/{policy_path}"

    def get(self, a: argparse.Namespace, policy_path: str) -> Request:
        return Request("GET", self.of(a, policy_path), query={"applied": "true"} if getattr(a, "applied", False) else None)


NAMESPACE = _Target("namespace", namespace_path, applied=False)
TOPIC = _Target("topic", topic_path, applied=True)


def kebab(name: str) -> str:
    return "".join(f"-{c.lower()}" if c.isupper() else c for c in name).replace("t-t-l", "ttl")


def _json_value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text  # a bare word, e.g. FULL for a strategy


def policy_value(a: argparse.Namespace, flags: FlagSet | None) -> Any:
    """The JSON value given, else what the flags say."""
    if a.value is not None:
        return _json_value(a.value)
    value = None if flags is None else flags.body(a)
    if value is None:
        raise AdminCallError("give the policy's flags (see -h) or its value as JSON")
    return value


def _verbs(stem: str, what: str, target: _Target, path: str, set_method: str, flags: FlagSet | None) -> CommandTable:
    own: Arguments = [((target.argument,), {})]
    return {
        f"get-{stem}": (f"show {what}", own + (_APPLIED if target.applied else []), lambda a: target.get(a, path)),
        f"set-{stem}": (f"set {what} (pulsar-admin's flags, or a JSON value)",
                        own + [(("value",), {"nargs": "?", "help": "the policy as JSON"})] + (flags.flags if flags else []),
                        lambda a: Request(set_method, target.of(a, path), policy_value(a, flags))),
        f"remove-{stem}": (f"remove {what}", own, lambda a: Request("DELETE", target.of(a, path))),
    }


def _backlog_quota(a: argparse.Namespace, target: _Target) -> Request:
    """As pulsar-admin 3.x: a quota of --type destination_storage (the default) is a size (--limit),
    one of message_age a time (--limitTime); the limit of the other type is not sent (nothing would
    enforce it), and saying so beats pulsar-admin's silence."""
    by_size = a.type == SIZE_QUOTA
    limit, other, flag = (a.limit, a.limit_time, "--limitTime") if by_size else (a.limit_time, a.limit, "--limit")
    if limit is None:
        raise AdminCallError(f"Quota type of '{a.type}' needs a {'size' if by_size else 'time'} limit")
    body = {"limitSize": parse_size(limit)} if by_size else {"limitTime": parse_relative_time(limit)}
    notice = None if other is None else (
        f"{flag} ignored: a {a.type} quota has no {'time' if by_size else 'size'} limit; "
        f"set one with --type {TIME_QUOTA if by_size else SIZE_QUOTA}")
    return Request("POST", target.of(a, "backlogQuota"), {**body, "policy": a.policy}, {"backlogQuotaType": a.type},
                   notice=notice)


def _backlog_quota_verbs(target: _Target, get_names: tuple[str, ...]) -> CommandTable:
    own: Arguments = [((target.argument,), {})]
    get = ("show backlog quotas", own + (_APPLIED if target.applied else []),
           lambda a: target.get(a, "backlogQuotaMap"))
    return {
        **{name: get for name in get_names},
        "set-backlog-quota": (
            "set a backlog quota: a size (-l 10G) for -t destination_storage, a time (-lt 1d) for -t message_age",
            own + [(("-l", "--limit", "--limit-size"), {"dest": "limit"}),
                   (("-lt", "--limitTime", "--limit-time"), {"dest": "limit_time"}),
                   (("-p", "--policy"), {"required": True, "choices": BACKLOG_QUOTA_POLICIES}),
                   (("-t", "--type"), {"default": SIZE_QUOTA, "choices": BACKLOG_QUOTA_TYPES})],
            lambda a: _backlog_quota(a, target)),
        "remove-backlog-quota": (
            "remove a backlog quota", own + [(("-t", "--type"), {"default": SIZE_QUOTA, "choices": BACKLOG_QUOTA_TYPES})],
            lambda a: Request("DELETE", target.of(a, "backlogQuota"), query={"backlogQuotaType": a.type})),
    }


def _deduplication_switch(enabled: bool) -> tuple[str, Arguments, Callable[[argparse.Namespace], Request]]:
    return (f"{'enable' if enabled else 'disable'} deduplication on a topic", [(("topic",), {})],
            lambda a: Request("POST", TOPIC.of(a, "deduplicationEnabled"), enabled))


def _namespace_verbs() -> CommandTable:
    table: CommandTable = _backlog_quota_verbs(NAMESPACE, ("get-backlog-quotas",))
    for spec in NAMESPACE_SPECS:
        table.update(_verbs(kebab(spec.namespace_path), spec.field, NAMESPACE, spec.namespace_path,
                            spec.namespace_set_method, NAMESPACE_FLAGS.get(spec.field)))
    return table


def _topic_verbs() -> CommandTable:
    table: CommandTable = _backlog_quota_verbs(TOPIC, ("get-backlog-quotas", "get-backlog-quota"))
    table["enable-deduplication"] = _deduplication_switch(True)
    table["disable-deduplication"] = _deduplication_switch(False)
    for spec in TOPIC_SPECS:
        for stem in _TOPIC_VERBS.get(spec.topic_path, (kebab(spec.topic_path),)):
            table.update(_verbs(stem, spec.field, TOPIC, spec.topic_path, spec.topic_set_method,
                                TOPIC_FLAGS.get(spec.field)))
    return table


#: `namespaces` policy verbs
NAMESPACE_POLICY_COMMANDS = _namespace_verbs()
#: the policy verbs of `topics`, and all of `topicPolicies`
TOPIC_POLICY_COMMANDS = _topic_verbs()
