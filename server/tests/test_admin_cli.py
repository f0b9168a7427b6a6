"""`pulsard admin` request building: paths, bodies and refusals, without a broker."""

import argparse

import pytest

from server.admin.cli import COMMANDS, AdminCallError, Request, topic_path


def build(group: str, action: str, **args) -> Request:
    return COMMANDS[group][action][2](argparse.Namespace(**args))


def test_topic_paths_accept_short_and_full_names():
    assert topic_path("orders") == "/admin/v2/persistent/public/default/orders"
    assert topic_path("non-persistent://t/ns/a b") == "/admin/v2/non-persistent/t/ns/a%20b"


def test_policy_commands_follow_pulsar_admin_names_and_methods():
    assert build("namespaces", "set-message-ttl", namespace="t/ns", value="60") == Request(
        "POST", "/admin/v2/namespaces/t/ns/messageTTL", 60)
    assert build("namespaces", "set-schema-compatibility-strategy", namespace="t/ns", value="FULL") == Request(
        "PUT", "/admin/v2/namespaces/t/ns/schemaCompatibilityStrategy", "FULL")
    assert build("namespaces", "remove-retention", namespace="t/ns") == Request(
        "DELETE", "/admin/v2/namespaces/t/ns/retention")


def test_subscription_positions():
    request = build("topics", "create-subscription", topic="t/ns/x", subscription="s", message_id="3:7")
    assert (request.method, request.body) == ("PUT", {"ledgerId": 3, "entryId": 7})
    assert build("topics", "create-subscription", topic="x", subscription="s", message_id="earliest").body == {
        "ledgerId": -1, "entryId": -1}
    with pytest.raises(AdminCallError):
        build("topics", "create-subscription", topic="x", subscription="s", message_id="soon")
    with pytest.raises(AdminCallError):
        build("topics", "reset-cursor", topic="x", subscription="s", time=None, message_id=None)


def test_namespace_names_are_checked():
    with pytest.raises(AdminCallError):
        build("namespaces", "create", namespace="no-slash")
