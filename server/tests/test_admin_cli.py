"""`pulsard admin` request building: paths, bodies and refusals, without a broker."""

import argparse

import pytest

from server.admin.cli import COMMANDS, AdminCallError, Request, topic_path
from server.admin.client_conf import ClientConf, load_client_conf
from server.admin.units import parse_relative_time, parse_size
from server.cli import _parser


def build(group: str, action: str, **args) -> Request:
    return COMMANDS[group][action][2](argparse.Namespace(**args))


def test_topic_paths_accept_short_and_full_names():
    assert topic_path("orders") == "/admin/v2/persistent/public/default/orders"
    assert topic_path("non-persistent://t/ns/a b") == "/admin/v2/non-persistent/t/ns/a%20b"


def parsed(*argv: str):
    args = _parser().parse_args(["admin", *argv])
    return args.build(args)


def test_policy_commands_follow_pulsar_admin_names_and_methods():
    assert parsed("namespaces", "set-message-ttl", "t/ns", "60") == Request(
        "POST", "/admin/v2/namespaces/t/ns/messageTTL", 60)
    assert parsed("namespaces", "set-schema-compatibility-strategy", "t/ns", "FULL") == Request(
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


def test_pulsar_admin_units():
    assert [parse_size(t) for t in ("4096", "10M", "16g", "1k", "3T", "-1")] == [
        4096, 10 * 2**20, 16 * 2**30, 1024, 3 * 2**40, -1]
    assert [parse_relative_time(t) for t in ("120", "100m", "3h", "2d", "5w", "-1", "30s")] == [
        120, 6000, 10800, 172800, 3024000, -1, 30]
    for bad in ("ten", "1.5h", "3x", ""):
        with pytest.raises(ValueError):
            parse_relative_time(bad)


def test_pulsar_admin_policy_flags():
    assert parsed("namespaces", "set-retention", "t/ns", "--size", "100M", "--time", "1h").body == {
        "retentionTimeInMinutes": 60, "retentionSizeInMB": 100}
    assert parsed("namespaces", "set-retention", "t/ns", "-s", "-1", "-t", "-1").body == {
        "retentionTimeInMinutes": -1, "retentionSizeInMB": -1}
    assert parsed("namespaces", "set-message-ttl", "t/ns", "--ttl", "1h").body == 3600
    assert parsed("namespaces", "set-message-ttl", "t/ns", "-ttl", "90").body == 90
    assert parsed("namespaces", "set-deduplication", "t/ns", "--enable").body is True
    assert parsed("namespaces", "set-deduplication", "t/ns", "-d").body is False
    assert parsed("namespaces", "set-auto-topic-creation", "t/ns", "-e", "-t", "partitioned", "-n", "3").body == {
        "allowAutoTopicCreation": True, "topicType": "partitioned", "defaultNumPartitions": 3}
    assert parsed("namespaces", "set-max-producers-per-topic", "t/ns", "-p", "5").body == 5
    assert parsed("namespaces", "set-schema-compatibility-strategy", "t/ns", "-c", "BACKWARD").body == "BACKWARD"
    assert parsed("namespaces", "set-inactive-topic-policies", "t/ns", "-e", "-t", "1h").body == {
        "deleteWhileInactive": True, "maxInactiveDurationSeconds": 3600,
        "inactiveTopicDeleteMode": "delete_when_no_subscriptions"}
    with pytest.raises(AdminCallError):
        parsed("namespaces", "set-retention", "t/ns")
    with pytest.raises(ValueError):
        parsed("namespaces", "set-retention", "t/ns", "--size", "100M")


def test_peek_count_asks_each_position():
    requests = parsed("topics", "peek-messages", "t/ns/x", "-s", "sub", "-n", "3")
    assert [r.path.rsplit("/", 1)[1] for r in requests] == ["1", "2", "3"]
    assert [r.optional for r in requests] == [False, True, True]


def test_usage_errors_exit_1_with_the_sub_command_usage(capsys):
    with pytest.raises(SystemExit) as exited:
        _parser().parse_args(["admin", "namespaces", "set-retention", "t/ns", "--bogus"])
    assert exited.value.code == 1
    assert "usage: pulsard admin namespaces set-retention" in capsys.readouterr().err


def test_client_conf_from_pulsar_client_conf(tmp_path):
    conf = tmp_path / "client.conf"
    conf.write_text("webServiceUrl=https://pulsar.example:8443/\nbrokerServiceUrl=pulsar+ssl://pulsar.example:6651\n"
                    "authPlugin=org.apache.pulsar.client.impl.auth.AuthenticationToken\nauthParams=token:abc\n"
                    "tlsTrustCertsFilePath=/etc/ca.pem\n")
    assert load_client_conf({"PULSAR_CLIENT_CONF": str(conf)}) == ClientConf(
        "https://pulsar.example:8443/", "pulsar+ssl://pulsar.example:6651",
        "org.apache.pulsar.client.impl.auth.AuthenticationToken", "token:abc", "/etc/ca.pem")
    assert load_client_conf({}) == ClientConf()
    with pytest.raises(OSError):
        load_client_conf({"PULSAR_CLIENT_CONF": str(tmp_path / "missing.conf")})


def test_a_backlog_quota_carries_the_limit_of_its_type_as_pulsar_admin_sends_it():
    """pulsar-admin 3.x: destination_storage takes --limit, message_age --limitTime, the other is not sent."""
    by_size = parsed("namespaces", "set-backlog-quota", "t/ns", "--limit", "10G", "--limitTime", "1d",
                     "--policy", "producer_exception")
    assert (by_size.body, by_size.query) == ({"limitSize": 10 * 2**30, "policy": "producer_exception"},
                                             {"backlogQuotaType": "destination_storage"})
    assert by_size.notice == ("--limitTime ignored: a destination_storage quota has no time limit; "
                              "set one with --type message_age")
    by_age = parsed("namespaces", "set-backlog-quota", "t/ns", "-t", "message_age", "-lt", "1d", "-p",
                    "producer_exception")
    assert (by_age.body, by_age.notice) == ({"limitTime": 86400, "policy": "producer_exception"}, None)
    with pytest.raises(AdminCallError, match="Quota type of 'message_age' needs a time limit"):
        parsed("namespaces", "set-backlog-quota", "t/ns", "-t", "message_age", "-l", "1G", "-p", "producer_exception")
