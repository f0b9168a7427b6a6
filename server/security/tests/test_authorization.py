import asyncio
import json

import pytest

from server.errors import AuthorizationError

from server.security.audit import SecurityAudit
from server.security.authorization import CONSUME, LOOKUP, PRODUCE, Authorization
from server.security.config import SecurityConfig
from server.topics.topic_name import TopicName

POLICIES = {"auth_policies": {
    "namespace_auth": {"ns-producer": ["produce"]},
    "destination_auth": {"persistent://t/ns/p": {"topic-consumer": ["consume"]}},
    "subscription_auth_roles": {"private": ["topic-consumer"]},
}}


class Policies:
    async def shared(self, namespace):
        return POLICIES if namespace == "t/ns" else None


class Store:
    async def get(self, path):
        return (json.dumps({"adminRoles": ["tenant-admin"]}).encode(), 0) if path == "/admin/policies/t" else None


def authorization(enabled=True):
    return Authorization(SecurityConfig(authorization_enabled=enabled, super_user_roles="root, ops"),
                         Policies(), Store(), "/admin/policies", SecurityAudit())


def may(role, topic, action, subscription=None, enabled=True):
    return asyncio.run(authorization(enabled).may(role, TopicName.parse(topic), action, subscription))


def test_rules():
    assert may("root", "persistent://other/ns/x", PRODUCE)
    assert may("tenant-admin", "persistent://t/ns/x", CONSUME)
    assert not may("tenant-admin", "persistent://other/ns/x", CONSUME)
    assert may("ns-producer", "persistent://t/ns/x", PRODUCE) and may("ns-producer", "persistent://t/ns/x", LOOKUP)
    assert not may("ns-producer", "persistent://t/ns/x", CONSUME)
    assert may("topic-consumer", "persistent://t/ns/p-partition-2", CONSUME, "private")   # the partitioned topic's grant
    assert not may("topic-consumer", "persistent://t/ns/q", CONSUME)
    assert not may("ns-producer", "persistent://t/ns/p", CONSUME, "private")
    assert not may(None, "persistent://t/ns/x", LOOKUP)
    assert may(None, "persistent://t/ns/x", PRODUCE, enabled=False)


def test_refusals_are_counted():
    auth = authorization()
    with pytest.raises(AuthorizationError, match="not authorized to Produce"):
        asyncio.run(auth.check("nobody", TopicName.parse("persistent://t/ns/x"), PRODUCE))
    assert auth.audit.refusals == {"produce": 1}
    assert 'pulsard_authorization_failures_total{operation="produce",cluster="c"} 1' in auth.audit.metric_lines("c")
