import pytest

from server.errors import InvalidTopicName
from server.topics.topic_name import TopicName


def test_short_name_is_persistent_public_default():
    assert str(TopicName.parse("orders")) == "persistent://public/default/orders"


def test_tenant_namespace_form():
    assert str(TopicName.parse("acme/prod/orders")) == "persistent://acme/prod/orders"


def test_full_name_keeps_domain():
    name = TopicName.parse("non-persistent://acme/prod/orders")
    assert (name.domain, name.tenant, name.namespace_local, name.local_name) == (
        "non-persistent", "acme", "prod", "orders")
    assert not name.persistent
    assert name.namespace == "acme/prod"


def test_partitions():
    name = TopicName.parse("persistent://public/default/t-partition-7")
    assert name.partition_index == 7
    assert str(name.partitioned_parent) == "persistent://public/default/t"
    assert str(name.partitioned_parent.partition(2)) == "persistent://public/default/t-partition-2"
    assert TopicName.parse("t").partition_index == -1
    assert TopicName.parse("t").partitioned_parent == TopicName.parse("t")


@pytest.mark.parametrize("bad", [
    "", "ftp://a/b/c", "persistent://a/b", "persistent://a/b/c/d", "persistent://a//c",
    "persistent://te nant/ns/t", "a/b", "persistent://a/b/x\ny",
])
def test_invalid_names_are_refused(bad):
    with pytest.raises(InvalidTopicName):
        TopicName.parse(bad)
