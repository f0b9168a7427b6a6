import pytest

from server.config import BrokerConfig
from server.policies.auto_topic_creation import AutoTopicCreation, auto_topic_creation, override_error


def test_auto_topic_creation_override_wins_when_valid():
    broker = BrokerConfig(allow_auto_topic_creation=False)
    assert auto_topic_creation(broker, {}) == AutoTopicCreation(False, 0)
    partitioned = {"allowAutoTopicCreation": True, "topicType": "partitioned", "defaultNumPartitions": 4}
    assert auto_topic_creation(broker, {"autoTopicCreationOverride": partitioned}) == AutoTopicCreation(True, 4)
    invalid = {"allowAutoTopicCreation": True, "topicType": "partitioned"}
    assert override_error(invalid) is not None
    assert auto_topic_creation(broker, {"autoTopicCreationOverride": invalid}) == AutoTopicCreation(False, 0)
    permissive = BrokerConfig(allow_auto_topic_creation_type="partitioned", default_num_partitions=3)
    assert auto_topic_creation(permissive, {}) == AutoTopicCreation(True, 3)
    refusing = {"autoTopicCreationOverride": {"allowAutoTopicCreation": False}}
    assert auto_topic_creation(permissive, refusing) == AutoTopicCreation(False, 0)


@pytest.mark.parametrize("override", [
    {"allowAutoTopicCreation": True, "topicType": "partitioned", "defaultNumPartitions": 0},
    {"allowAutoTopicCreation": True, "topicType": "non-partitioned", "defaultNumPartitions": 2},
    {"allowAutoTopicCreation": True, "topicType": "sharded"},
    {"allowAutoTopicCreation": "true"},
])
def test_invalid_overrides(override):
    assert override_error(override) is not None
