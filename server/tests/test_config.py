from pathlib import Path

import pytest

from server.cli import _parser, build_config
from server.config import BrokerConfig, read_conf_file


def test_reads_pulsar_key_names_and_ignores_unknown(tmp_path):
    conf = tmp_path / "standalone.conf"
    conf.write_text(
        "# a comment\n"
        "brokerServicePort=7650\n"
        "maxMessageSize = 1024000\n"
        "allowAutoTopicCreationType=partitioned\n"
        "journalSyncData=false\n"
        "journalMaxSizeMB=0.5\n"
        "managedLedgerMaxEntriesPerLedger=10\n"
        "someKeyPulsardDoesNotKnow=1\n"
        "advertisedAddress=\n"
    )
    config = BrokerConfig().with_settings(read_conf_file(conf))
    assert config.broker_service_port == 7650
    assert config.max_message_size == 1024000
    assert config.allow_auto_topic_creation_type == "partitioned"
    assert config.storage.bookie.sync_data is False
    assert config.advertised_address == ""
    assert config.storage.bookie.journal_max_file_size == 512 * 1024
    assert config.storage.max_entries_per_ledger == 10


def test_bad_value_names_the_key():
    with pytest.raises(ValueError, match="brokerServicePort"):
        BrokerConfig().with_settings({"brokerServicePort": "many"})
    with pytest.raises(ValueError, match="journalSyncData"):
        BrokerConfig().with_settings({"journalSyncData": "perhaps"})


def test_flags_override_file(tmp_path):
    conf = tmp_path / "c.conf"
    conf.write_text("brokerServicePort=7650\nwebServicePort=7080\n")
    args = _parser().parse_args(["standalone", "--config", str(conf), "--broker-port", "9650"])
    config = build_config(args)
    assert (config.broker_service_port, config.web_service_port) == (9650, 7080)
    assert build_config(_parser().parse_args(["standalone", "--data-dir", "/d"])).storage.data_dir == Path("/d")


def test_service_url_uses_a_reachable_host():
    config = BrokerConfig(bind_address="0.0.0.0", broker_service_port=6650)
    assert config.service_url == "pulsar://127.0.0.1:6650"
    assert BrokerConfig(bind_address="::1", broker_service_port=1).service_url == "pulsar://[::1]:1"
    assert config.max_frame_size == 5 * 1024 * 1024 + 10 * 1024


def test_unknown_key_is_warned_with_the_nearest_known_key(caplog):
    with caplog.at_level("WARNING", logger="server.config"):
        config = BrokerConfig().with_settings({"brokerServicePrt": "7650", "zookeeperServers": "zk:2181"})
    assert config.broker_service_port == 6650
    messages = [record.getMessage() for record in caplog.records]
    assert "unknown configuration key brokerServicePrt, ignored (did you mean brokerServicePort?)" in messages
    assert "unknown configuration key zookeeperServers, ignored" in messages


@pytest.mark.parametrize("key, raw, expected", [
    ("brokerServicePort", "70000", "brokerServicePort: 70000 is not a TCP port"),
    ("webServicePort", "0", "webServicePort: 0 is not a TCP port"),
    ("allowAutoTopicCreationType", "sometimes", "allowAutoTopicCreationType: 'sometimes' is not one of"),
    ("backlogQuotaDefaultRetentionPolicy", "drop", "backlogQuotaDefaultRetentionPolicy: 'drop'"),
    ("maxMessageSize", "-1", "maxMessageSize: -1 must be greater than 0"),
    ("subscriptionTypesEnabled", "Shared,shared", "subscriptionTypesEnabled: 'shared' is not one of"),
    ("brokerServicePort", "many", "brokerServicePort: cannot read 'many' as int"),
])
def test_values_that_are_not_allowed_are_refused_with_the_key(key, raw, expected):
    with pytest.raises(ValueError) as refused:
        BrokerConfig().with_settings({key: raw})
    assert str(refused.value).startswith(expected)


def test_a_bad_port_flag_names_the_key():
    with pytest.raises(ValueError, match="^brokerServicePort: "):
        build_config(_parser().parse_args(["standalone", "--broker-port", "99999"]))


def test_topic_limits_have_pulsars_keys_and_defaults():
    config = BrokerConfig()
    assert (config.max_producers_per_topic, config.max_consumers_per_topic, config.max_consumers_per_subscription,
            config.max_subscriptions_per_topic) == (0, 0, 0, 0)   # no limit
    assert config.enabled_subscription_types == ("Exclusive", "Shared", "Failover", "Key_Shared")
    config = config.with_settings({"maxProducersPerTopic": "3", "subscriptionTypesEnabled": " Shared , Failover"})
    assert config.max_producers_per_topic == 3
    assert config.enabled_subscription_types == ("Shared", "Failover")
