"""Compatibility strategies on Avro-style definitions: Avro's resolution rules through fastavro,
and Pulsar's choice of which versions a producer's or a consumer's schema is checked against."""

from __future__ import annotations

import json

import pytest

from protocol import pulsar_api_pb2 as pb
from server.errors import IncompatibleSchema
from server.topics.schema_compatibility import Strategy, can_read, check_consumer, check_producer, effective

S = Strategy


def record(*fields: dict, name: str = "Reading") -> dict:
    return {"type": "record", "name": name, "fields": list(fields)}


def field(name: str, kind, **extra) -> dict:
    return {"name": name, "type": kind, **extra}


X = field("x", ["null", "int"])
Y_NO_DEFAULT = field("y", ["null", "string"])
Y_DEFAULT = field("y", ["null", "string"], default=None)
Z_DEFAULT = field("z", "long", default=0)

V1 = record(X)
V2_NO_DEFAULT = record(X, Y_NO_DEFAULT)
V2 = record(X, Y_DEFAULT)
V3 = record(X, Y_DEFAULT, Z_DEFAULT)


def avro(definition: dict, kind: int = pb.Schema.Avro) -> pb.Schema:
    return pb.Schema(name="t", type=kind, schema_data=json.dumps(definition).encode())


def test_added_field_needs_a_default_to_read_old_data() -> None:
    assert not can_read(V1, V2_NO_DEFAULT)
    assert can_read(V1, V2)
    assert can_read(V2_NO_DEFAULT, V1)   # a removed field is skipped


def test_promotions_enums_unions_and_names() -> None:
    assert can_read(record(field("x", "int")), record(field("x", "long")))
    assert not can_read(record(field("x", "long")), record(field("x", "int")))
    assert not can_read(record(field("x", "string")), record(field("x", "int")))
    abc = field("e", {"type": "enum", "name": "E", "symbols": ["a", "b", "c"]})
    ab = field("e", {"type": "enum", "name": "E", "symbols": ["a", "b"]})
    assert can_read(record(ab), record(abc)) and not can_read(record(abc), record(ab))
    wide = field("u", ["null", {"type": "record", "name": "I", "fields": [field("z", ["int", "string"])]}])
    narrow = field("u", ["null", {"type": "record", "name": "I", "fields": [field("z", ["int"])]}])
    assert can_read(record(narrow), record(wide)) and not can_read(record(wide), record(narrow))
    # Avro Java (Pulsar's resolver) does not compare a top-level record's name; logical types
    # take no part in resolution.
    assert can_read(V1, record(X, name="ReadingV2"))
    millis = field("t", {"type": "long", "logicalType": "timestamp-millis"})
    assert can_read(record(field("t", "long")), record(millis))


def test_recursive_definitions_are_checked_to_a_bounded_depth() -> None:
    node = record(field("v", "int"), field("next", ["null", "Node"]), name="Node")
    assert can_read(node, node)
    tree = record(field("children", {"type": "array", "items": ["Tree", "int"]}), name="Tree")
    assert can_read(tree, tree)
    endless = record(field("inner", ["Endless"]), name="Endless")   # no finite value
    assert not can_read(endless, endless)


@pytest.mark.parametrize("strategy, add_accepted, drop_accepted", [
    (S.BACKWARD, False, True), (S.FORWARD, True, False), (S.FULL, False, False),
    (S.ALWAYS_COMPATIBLE, True, True), (S.ALWAYS_INCOMPATIBLE, False, False),
])
def test_producer_strategies(strategy: Strategy, add_accepted: bool, drop_accepted: bool) -> None:
    """Adding a field without default: the new schema cannot read old data (BACKWARD refuses),
    the old one reads new data (FORWARD takes it). Dropping one: the other way round."""
    assert accepted(check_producer, [avro(V1)], avro(V2_NO_DEFAULT), strategy) is add_accepted
    assert accepted(check_producer, [avro(V2_NO_DEFAULT)], avro(V1), strategy) is drop_accepted
    with_default = strategy is not S.ALWAYS_INCOMPATIBLE
    assert accepted(check_producer, [avro(V1)], avro(V2), strategy) is with_default
    assert accepted(check_producer, [avro(V2)], avro(V1), strategy) is with_default


def test_transitive_strategies_check_every_version() -> None:
    """V1 -> V2 (y with default) -> V3 (z with default) -> V4 drops y's default: V4 cannot read
    V1's data (no y) but reads V3's."""
    v4 = avro(record(X, Y_NO_DEFAULT, Z_DEFAULT))
    history = [avro(V1), avro(V3)]
    assert accepted(check_producer, history, v4, S.BACKWARD)
    assert not accepted(check_producer, history, v4, S.BACKWARD_TRANSITIVE)
    assert accepted(check_producer, history, v4, S.FULL)
    assert not accepted(check_producer, history, v4, S.FULL_TRANSITIVE)


def test_consumers_as_pulsar_checks_them() -> None:
    """BACKWARD against the latest for BACKWARD/FORWARD/FORWARD_TRANSITIVE/FULL; ALWAYS_INCOMPATIBLE
    refuses every schema once the topic has one, even its own."""
    for strategy in (S.BACKWARD, S.FORWARD, S.FORWARD_TRANSITIVE, S.FULL):
        assert not accepted(check_consumer, [avro(V1)], avro(V2_NO_DEFAULT), strategy)
        assert accepted(check_consumer, [avro(V2_NO_DEFAULT)], avro(V1), strategy)
    assert not accepted(check_consumer, [avro(V1)], avro(V1), S.ALWAYS_INCOMPATIBLE)
    assert accepted(check_consumer, [], avro(V1), S.ALWAYS_INCOMPATIBLE)
    v4 = avro(record(X, Y_NO_DEFAULT, Z_DEFAULT))
    assert accepted(check_consumer, [avro(V1), avro(V3)], v4, S.FULL)
    assert not accepted(check_consumer, [avro(V1), avro(V3)], v4, S.FULL_TRANSITIVE)


def test_types_json_and_invalid_definitions() -> None:
    assert not accepted(check_producer, [avro(V1)], avro(V1, pb.Schema.Json), S.FULL)
    assert accepted(check_producer, [avro(V1)], avro(V1, pb.Schema.Json), S.ALWAYS_COMPATIBLE)
    assert not accepted(check_producer, [avro(V1, pb.Schema.Json)], avro(V2_NO_DEFAULT, pb.Schema.Json), S.FULL)
    legacy = pb.Schema(name="t", type=pb.Schema.Json, schema_data=b'{"type": "object", "id": "x"}')
    assert accepted(check_producer, [legacy], avro(V1, pb.Schema.Json), S.FULL)
    for kind in (pb.Schema.Avro, pb.Schema.Json):
        broken = pb.Schema(name="t", type=kind, schema_data=b"{not json")
        assert not accepted(check_producer, [avro(V1, kind)], broken, S.FULL)
    not_a_record = avro({"type": "record", "name": "R"})   # no fields
    assert not accepted(check_producer, [avro(V1)], not_a_record, S.FULL)
    strings = [pb.Schema(name="s", type=pb.Schema.String), pb.Schema(name="s", type=pb.Schema.String, schema_data=b"x")]
    assert accepted(check_producer, strings[:1], strings[1], S.FULL)
    assert not accepted(check_producer, strings[:1], strings[1], S.ALWAYS_INCOMPATIBLE)


def test_the_first_defined_level_wins() -> None:
    assert effective(None, S.UNDEFINED, S.BACKWARD) is S.BACKWARD
    assert effective(S.FORWARD, S.BACKWARD, S.FULL) is S.FORWARD
    assert effective(None, None, S.UNDEFINED) is S.FULL


def accepted(check, versions: list[pb.Schema], schema: pb.Schema, strategy: Strategy) -> bool:
    try:
        check(versions, schema, strategy)
    except IncompatibleSchema:
        return False
    return True
