"""Schema compatibility strategies with the official Python client's Avro and JSON Records:
each strategy takes a compatible evolution and refuses an incompatible one (IncompatibleSchema),
transitive forms check every version, the namespace and topic levels override the broker's
default, a refused consumer leaves nothing behind, isAllowAutoUpdateSchema, and the admin
schema upload / compatibility test."""

from __future__ import annotations

import uuid

import pulsar
import pytest
from pulsar.schema import AvroSchema, Integer, JsonSchema, Long, Record, String

from compat_tests.admin_http import AdminHttp
from compat_tests.helpers import receive_n, subscribe_earliest


def reading(**fields) -> type:
    """A Record class named "Reading" (the Avro record name stays the same across versions)."""
    return type("Reading", (Record,), {"x": Integer(), **fields})


V1 = reading()
ADD_Y_NO_DEFAULT = reading(y=String())                        # {"name": "y", "type": ["null", "string"]}
ADD_Y_DEFAULT = reading(y=String(required_default=True))     # ... "default": null
ADD_Z_NO_DEFAULT = reading(y=String(), z=Long())
ADD_Y_Z_DEFAULT = reading(y=String(required_default=True), z=Long(required_default=True))
Y_NO_DEFAULT_Z_DEFAULT = reading(y=String(), z=Long(required_default=True))
DROP_Y = reading(z=Long())
X_AS_STRING = type("Reading", (Record,), {"x": String()})


@pytest.fixture(scope="module")
def http(broker) -> AdminHttp:
    return AdminHttp(broker.web_url)


def new_namespace(http: AdminHttp, strategy: str | None = None) -> str:
    namespace = f"public/compat-{uuid.uuid4().hex[:8]}"
    assert http.put(f"/admin/v2/namespaces/{namespace}").status_code == 204
    if strategy is not None:
        assert http.put(f"/admin/v2/namespaces/{namespace}/schemaCompatibilityStrategy",
                        json=strategy).status_code == 204
    return namespace


def new_topic(namespace: str = "public/default") -> str:
    return f"persistent://{namespace}/schema-{uuid.uuid4().hex[:8]}"


def accepts(client: pulsar.Client, topic: str, record: type, kind=AvroSchema) -> bool:
    """Does the broker take a producer with this Record's schema (of that kind)? Closed at once."""
    try:
        client.create_producer(topic, schema=kind(record)).close()
    except pulsar.IncompatibleSchema:
        return False
    return True


def versions(http: AdminHttp, topic: str) -> int:
    local = topic.removeprefix("persistent://")
    return len(http.get(f"/admin/v2/schemas/{local}/schemas").json()["getSchemaResponses"])


#: strategy -> (versions already on the topic, an evolution it refuses first, one it then takes)
EVOLUTIONS = {
    "BACKWARD": ([V1], ADD_Y_NO_DEFAULT, ADD_Y_DEFAULT),
    "FORWARD": ([ADD_Y_NO_DEFAULT], V1, ADD_Z_NO_DEFAULT),   # dropping y (no default) is refused
    "FULL": ([V1], ADD_Y_NO_DEFAULT, ADD_Y_DEFAULT),
    "ALWAYS_INCOMPATIBLE": ([V1], ADD_Y_DEFAULT, V1),          # only a version it already has
}


@pytest.mark.parametrize("strategy", sorted(EVOLUTIONS))
def test_each_strategy_takes_a_compatible_evolution_and_refuses_an_incompatible_one(http, client, strategy):
    history, incompatible, compatible = EVOLUTIONS[strategy]
    topic = new_topic(new_namespace(http, strategy))
    for record in history:
        assert accepts(client, topic, record)
    assert not accepts(client, topic, incompatible)
    assert accepts(client, topic, compatible)
    assert versions(http, topic) == len(history) + (compatible is not history[-1])


def test_always_compatible_takes_any_change_even_of_schema_type(http, client):
    topic = new_topic(new_namespace(http, "ALWAYS_COMPATIBLE"))
    assert accepts(client, topic, V1)
    assert accepts(client, topic, X_AS_STRING)
    assert accepts(client, topic, ADD_Y_NO_DEFAULT, JsonSchema)
    assert versions(http, topic) == 3


def test_json_schemas_are_checked_field_by_field(http, client):
    topic = new_topic(new_namespace(http, "BACKWARD"))
    assert accepts(client, topic, V1, JsonSchema)
    assert not accepts(client, topic, ADD_Y_NO_DEFAULT, JsonSchema)
    assert accepts(client, topic, ADD_Y_DEFAULT, JsonSchema)
    assert not accepts(client, topic, X_AS_STRING, JsonSchema)


@pytest.mark.parametrize("strategy", ["BACKWARD", "FULL"])
def test_transitive_strategies_check_every_version(http, client, strategy):
    """V1 {x} -> V2 {x, y=null, z=null} -> V3 {x, y (no default), z=null}: V3 reads V2's data but
    not V1's (no y there, and no default): the plain strategy takes it, the transitive one not."""
    for checked, takes_v3 in ((strategy, True), (f"{strategy}_TRANSITIVE", False)):
        topic = new_topic(new_namespace(http, checked))
        assert accepts(client, topic, V1)
        assert accepts(client, topic, ADD_Y_Z_DEFAULT)
        assert accepts(client, topic, Y_NO_DEFAULT_Z_DEFAULT) is takes_v3, checked


def test_namespace_and_topic_levels_override_the_broker_default(http, client):
    """Broker default FULL refuses adding a field without default; a FORWARD namespace takes it;
    a BACKWARD topic in that namespace refuses it again."""
    in_default = new_topic()
    assert accepts(client, in_default, V1)
    assert not accepts(client, in_default, ADD_Y_NO_DEFAULT)

    namespace = new_namespace(http, "FORWARD")
    forward, backward = new_topic(namespace), new_topic(namespace)
    for topic in (forward, backward):
        assert accepts(client, topic, V1)
    policy = f"/admin/v2/persistent/{backward.removeprefix('persistent://')}/schemaCompatibilityStrategy"
    unset = http.get(policy)   # as Pulsar: 200 with no body
    assert (unset.status_code, unset.content) == (200, b"")
    assert http.get(policy, applied="true").json() == "FORWARD"
    assert http.put(policy, json="BACKWARD").status_code == 204
    assert http.get(policy).json() == "BACKWARD"
    assert accepts(client, forward, ADD_Y_NO_DEFAULT)
    assert not accepts(client, backward, ADD_Y_NO_DEFAULT)

    assert http.delete(policy).status_code == 204
    assert http.get(policy, applied="true").json() == "FORWARD"
    assert accepts(client, backward, ADD_Y_NO_DEFAULT)


def test_the_broker_key_sets_the_default(make_broker, connect):
    broker = make_broker({"schemaCompatibilityStrategy": "FORWARD"})
    client, http = connect(broker), AdminHttp(broker.web_url)
    topic = new_topic()
    assert accepts(client, topic, V1)
    assert accepts(client, topic, ADD_Y_NO_DEFAULT)
    assert not accepts(client, topic, DROP_Y)   # the old schema cannot read data without y
    full = new_topic(new_namespace(http, "FULL"))
    assert accepts(client, full, V1)
    assert not accepts(client, full, ADD_Y_NO_DEFAULT)


def test_a_refused_consumer_leaves_no_consumer_or_subscription(http, client):
    topic = new_topic()
    producer = client.create_producer(topic, schema=AvroSchema(V1))
    producer.send(V1(x=7))
    with pytest.raises(pulsar.IncompatibleSchema):
        subscribe_earliest(client, topic, "refused", schema=AvroSchema(ADD_Y_NO_DEFAULT))
    stats = http.get(f"/admin/v2/persistent/{topic.removeprefix('persistent://')}/stats").json()
    assert "refused" not in stats["subscriptions"]

    reader_view = subscribe_earliest(client, topic, "taken", schema=AvroSchema(ADD_Y_DEFAULT))
    [message] = receive_n(reader_view, 1)
    assert (message.value().x, message.value().y) == (7, None)
    assert versions(http, topic) == 1   # a consumer's schema is checked, never registered


def test_without_auto_update_only_the_admin_adds_versions(http, client):
    namespace = new_namespace(http)
    assert http.post(f"/admin/v2/namespaces/{namespace}/isAllowAutoUpdateSchema", json=False).status_code == 204
    assert http.get(f"/admin/v2/namespaces/{namespace}/isAllowAutoUpdateSchema").json() is False
    topic = new_topic(namespace)
    assert not accepts(client, topic, V1)
    upload = {"type": "AVRO", "schema": AvroSchema(V1).schema_info().schema(), "properties": {}}
    assert http.post(f"/admin/v2/schemas/{topic.removeprefix('persistent://')}/schema", json=upload).ok
    assert accepts(client, topic, V1)
    assert not accepts(client, topic, ADD_Y_DEFAULT)


def test_admin_upload_and_compatibility_test_follow_the_strategy(http, client):
    topic = new_topic()
    local = topic.removeprefix("persistent://")
    assert accepts(client, topic, V1)

    def payload(record: type) -> dict:
        return {"type": "AVRO", "schema": AvroSchema(record).schema_info().schema(), "properties": {}}

    check = http.post(f"/admin/v2/schemas/{local}/compatibility", json=payload(ADD_Y_NO_DEFAULT))
    assert check.json() == {"isCompatibility": False, "schemaCompatibilityStrategy": "FULL"}
    assert http.post(f"/admin/v2/schemas/{local}/schema", json=payload(ADD_Y_NO_DEFAULT)).status_code == 409
    check = http.post(f"/admin/v2/schemas/{local}/compatibility", json=payload(ADD_Y_DEFAULT))
    assert check.json()["isCompatibility"] is True
    assert http.post(f"/admin/v2/schemas/{local}/schema", json=payload(ADD_Y_DEFAULT)).ok
    assert versions(http, topic) == 2
