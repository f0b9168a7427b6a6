"""Schema compatibility strategies, as Pulsar applies them to a topic's schema versions.

A producer's new schema is checked against the latest version (BACKWARD, FORWARD, FULL) or
against every version since the last delete (the _TRANSITIVE forms); ALWAYS_COMPATIBLE accepts
anything, ALWAYS_INCOMPATIBLE refuses any schema that is not already a version. A consumer's
schema is checked the way Pulsar checks it: BACKWARD against the latest version for BACKWARD,
FORWARD, FORWARD_TRANSITIVE and FULL, else the strategy against every version (so under
ALWAYS_INCOMPATIBLE no consumer with a schema is taken once the topic has one).
BACKWARD means the new schema can read data written with the old one; FORWARD that the old
schema can read data written with the new one.

AVRO and JSON definitions (Pulsar's JSON schemas are Avro records too) are compared by field;
JSON definitions that are not Avro (old clients' Jackson JSON Schema) are not checked, as
Pulsar lets them through. Other types must keep the topic's type, nothing more.

Why fastavro and not hand-written rules: Avro resolution has many corners (promotions, unions,
enum symbols, aliases, defaults, named types) and an own implementation would drift from what
clients do. So "can `reader` read data written with `writer`" is asked of fastavro's own
resolving reader: values of the writer schema, taking between them every union branch and
every enum symbol, are written and read back with the reader schema; a SchemaResolutionError
means incompatible. Two adjustments bring it to Avro Java's resolver, which Pulsar runs:
logical types take no part in resolution, and a top-level record's name is not compared.
"""

from __future__ import annotations

import enum
import io
import json
from typing import Any, Iterator


from protocol import pulsar_api_pb2 as pb
from server.errors import IncompatibleSchema


class Strategy(enum.Enum):
    UNDEFINED = "UNDEFINED"
    ALWAYS_INCOMPATIBLE = "ALWAYS_INCOMPATIBLE"
    ALWAYS_COMPATIBLE = "ALWAYS_COMPATIBLE"
    BACKWARD = "BACKWARD"
    FORWARD = "FORWARD"
    FULL = "FULL"
    BACKWARD_TRANSITIVE = "BACKWARD_TRANSITIVE"
    FORWARD_TRANSITIVE = "FORWARD_TRANSITIVE"
    FULL_TRANSITIVE = "FULL_TRANSITIVE"

    @property
    def transitive(self) -> bool:
        return self.name.endswith("_TRANSITIVE")


#: What applies when neither topic, namespace nor broker sets a strategy (Pulsar's default).
DEFAULT_STRATEGY = Strategy.FULL


def effective(*levels: Strategy | None) -> Strategy:
    """The first level (topic, namespace, broker) that defines a strategy."""
    for level in levels:
        if level is not None and level is not Strategy.UNDEFINED:
            return level
    return DEFAULT_STRATEGY


def check_producer(versions: list[pb.Schema], schema: pb.Schema, strategy: Strategy) -> None:
    """May `schema` become a new version after `versions` (oldest first, since the last delete)?"""
    if not versions or strategy is Strategy.ALWAYS_COMPATIBLE:
        return
    if strategy.transitive:
        _check(versions, schema, strategy)
    else:
        _check_latest(versions[-1], schema, strategy)


def check_consumer(versions: list[pb.Schema], schema: pb.Schema, strategy: Strategy) -> None:
    """May a consumer read the topic with `schema`? Never adds a version."""
    if not versions or strategy is Strategy.ALWAYS_COMPATIBLE:
        return
    if strategy in (Strategy.BACKWARD, Strategy.FORWARD, Strategy.FORWARD_TRANSITIVE, Strategy.FULL):
        _check_latest(versions[-1], schema, Strategy.BACKWARD)
    else:
        _check(versions, schema, strategy)


def _check_latest(latest: pb.Schema, schema: pb.Schema, strategy: Strategy) -> None:
    """Against the latest version alone an identical definition passes unchecked (Pulsar
    compares hashes first there, not when it checks every version)."""
    if latest.type == schema.type and latest.schema_data == schema.schema_data:
        return
    _check([latest], schema, strategy)


def _check(existing: list[pb.Schema], schema: pb.Schema, strategy: Strategy) -> None:
    for known in existing:
        if known.type != schema.type:
            raise IncompatibleSchema(
                f"Incompatible schema: existing schema type {pb.Schema.Type.Name(known.type)}, "
                f"new schema type {pb.Schema.Type.Name(schema.type)}")
    if strategy is Strategy.ALWAYS_INCOMPATIBLE:
        raise IncompatibleSchema("Schema compatibility strategy is ALWAYS_INCOMPATIBLE")
    if schema.type not in _RECORD_TYPES:
        return
    new = _definition(schema)
    for known in existing:
        old = _definition(known)
        if new is None or old is None:
            continue   # a legacy (non-Avro) JSON definition: not checked, as Pulsar
        if strategy in _READS_OLD and not can_read(old, new):
            raise IncompatibleSchema(f"{strategy.value}: the new schema cannot read data written with "
                                     f"an existing one")
        if strategy in _READ_BY_OLD and not can_read(new, old):
            raise IncompatibleSchema(f"{strategy.value}: an existing schema cannot read data written "
                                     f"with the new one")


_RECORD_TYPES = {pb.Schema.Avro, pb.Schema.Json}
_READS_OLD = {Strategy.BACKWARD, Strategy.BACKWARD_TRANSITIVE, Strategy.FULL, Strategy.FULL_TRANSITIVE}
_READ_BY_OLD = {Strategy.FORWARD, Strategy.FORWARD_TRANSITIVE, Strategy.FULL, Strategy.FULL_TRANSITIVE}


def _definition(schema: pb.Schema) -> Any:
    """The Avro definition of a schema, with logical types dropped; None for a JSON schema
    whose JSON is not an Avro definition. Anything else that does not parse is incompatible."""
    kind = pb.Schema.Type.Name(schema.type).upper()
    try:
        definition = _without_logical_types(json.loads(schema.schema_data))
    except ValueError:
        raise IncompatibleSchema(f"Invalid {kind} schema definition: not JSON") from None
    import fastavro   # here, not at start-up: only schema checks need it (4 MiB, ~10 ms to load)
    from fastavro.schema import SchemaParseException

    try:
        fastavro.parse_schema(definition)
    except (ValueError, TypeError, KeyError, AttributeError, SchemaParseException) as exc:
        if schema.type == pb.Schema.Json:
            return None
        raise IncompatibleSchema(f"Invalid {kind} schema definition: {exc}") from None
    return definition


def _without_logical_types(node: Any) -> Any:
    if isinstance(node, list):
        return [_without_logical_types(n) for n in node]
    if not isinstance(node, dict):
        return node
    stripped = {k: v for k, v in node.items() if k != "logicalType"}
    for key in ("type", "items", "values"):
        if key in stripped:
            stripped[key] = _without_logical_types(stripped[key])
    if isinstance(stripped.get("fields"), list):
        stripped["fields"] = [_without_logical_types(f) for f in stripped["fields"]]
    return stripped


def can_read(writer: Any, reader: Any) -> bool:
    """Can data written with the Avro definition `writer` be read with `reader`?"""
    import fastavro
    from fastavro.read import SchemaResolutionError

    if _is_record(writer) and _is_record(reader):
        prefix = reader["name"].rpartition(".")[0]
        unqualified = writer["name"].rpartition(".")[2]
        reader = {**reader, "name": f"{prefix}.{unqualified}" if prefix else unqualified}
    named: dict[str, Any] = {}
    parsed_writer = fastavro.parse_schema(writer, named_schemas=named)
    parsed_reader = fastavro.parse_schema(reader, named_schemas={})
    try:
        for datum in _Samples(named).of(parsed_writer):
            buffer = io.BytesIO()
            fastavro.schemaless_writer(buffer, parsed_writer, datum)
            buffer.seek(0)
            fastavro.schemaless_reader(buffer, parsed_writer, parsed_reader)
    except SchemaResolutionError:
        return False
    except RecursionError:
        return False   # a type that only nests itself has no finite value to read
    return True


def _is_record(definition: Any) -> bool:
    return isinstance(definition, dict) and definition.get("type") == "record"


class _Samples:
    """Values of a parsed schema that take, between them, every branch of every union and every
    enum symbol (each choice point cycles through its options, one per value), so that reading
    them back meets every resolution rule the schema can meet. Past MAX_DEPTH arrays and maps
    are empty and unions take a primitive branch, so recursive types end."""

    MAX_DEPTH = 8
    MAX_VALUES = 256
    _PRIMITIVES = {"null": None, "boolean": False, "int": 0, "long": 0, "float": 0.0, "double": 0.0,
                   "bytes": b"", "string": ""}

    def __init__(self, named: dict[str, Any]) -> None:
        self._named = named
        self._turns: dict[str, tuple[int, int]] = {}   # choice point -> (times taken, options)

    def of(self, schema: Any) -> Iterator[Any]:
        for _ in range(self.MAX_VALUES):
            yield self._value(schema, "", 0)
            if all(taken >= options for taken, options in self._turns.values()):
                return

    def _choose(self, path: str, options: int) -> int:
        taken, _ = self._turns.get(path, (0, options))
        self._turns[path] = (taken + 1, options)
        return taken % options

    def _value(self, schema: Any, path: str, depth: int) -> Any:
        if isinstance(schema, list):
            return self._union(schema, path, depth)
        if isinstance(schema, str):
            if schema in self._PRIMITIVES:
                return self._PRIMITIVES[schema]
            return self._value(self._named[schema], path, depth)
        kind = schema["type"]
        deep = depth >= self.MAX_DEPTH
        if kind == "record":
            return {f["name"]: self._value(f["type"], f"{path}.{f['name']}", depth + 1) for f in schema["fields"]}
        if kind == "enum":
            return schema["symbols"][self._choose(path, len(schema["symbols"]))]
        if kind == "array":
            return [] if deep else [self._value(schema["items"], path + "[]", depth + 1)]
        if kind == "map":
            return {} if deep else {"k": self._value(schema["values"], path + "{}", depth + 1)}
        if kind == "fixed":
            return bytes(schema["size"])
        return self._value(kind, path, depth)

    def _union(self, branches: list[Any], path: str, depth: int) -> Any:
        leaves = [i for i, branch in enumerate(branches) if isinstance(branch, str) and branch in self._PRIMITIVES]
        if depth >= self.MAX_DEPTH and leaves:
            index = leaves[0]
        else:
            index = self._choose(path, len(branches))
        branch = branches[index]
        if isinstance(branch, dict):
            name = branch["name"] if branch["type"] in ("record", "enum", "fixed") else branch["type"]
        else:
            name = branch
        return (name, self._value(branch, f"{path}|{index}", depth + 1))
