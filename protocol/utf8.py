"""UTF-8 checking of parsed proto2 messages.

The protobuf runtime accepts invalid UTF-8 in proto2 ``string`` fields and hands it
out as ``bytes`` where ``str`` is promised; that would fail later, far from the
socket. Decoders call ``check_utf8`` so such input becomes a ``ProtocolError``.
Only message types that can hold a string at all are walked.
"""

from __future__ import annotations

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from protocol import pulsar_api_pb2 as pb
from protocol.errors import ProtocolError


def _holds_text(descriptor: Descriptor, ancestors: frozenset[str] = frozenset()) -> bool:
    """Whether a message type can contain a string field, at any depth."""
    inside = ancestors | {descriptor.full_name}
    for field in descriptor.fields:
        if field.type == FieldDescriptor.TYPE_STRING:
            return True
        sub = field.message_type
        if sub is not None and sub.full_name not in inside and _holds_text(sub, inside):
            return True
    return False


TEXT_TYPES = frozenset(
    descriptor.full_name for descriptor in pb.DESCRIPTOR.message_types_by_name.values() if _holds_text(descriptor)
)
"""Full names of the message types that can carry text."""


_SKIP, _TEXT, _MESSAGE = range(3)
#: What each field needs checking, by descriptor: decided once, as every SEND's metadata
#: passes through here (the descriptor's attributes cost more than the check itself).
_KINDS: dict[FieldDescriptor, int] = {}
#: Values that need no look at their field: valid text, numbers, booleans, enum values.
_PLAIN = frozenset({str, int, float, bool})


def _kind(field: FieldDescriptor) -> int:
    if field.type == FieldDescriptor.TYPE_STRING:
        kind = _TEXT
    elif field.type == FieldDescriptor.TYPE_MESSAGE and field.message_type.full_name in TEXT_TYPES:
        kind = _MESSAGE
    else:
        kind = _SKIP
    _KINDS[field] = kind
    return kind


def check_utf8(message: Message) -> None:
    """Raise ProtocolError if any string inside ``message`` is not valid UTF-8."""
    for field, value in message.ListFields():
        if type(value) in _PLAIN:
            continue
        kind = _KINDS.get(field)
        if kind is None:
            kind = _kind(field)
        if kind == _SKIP:
            continue
        values = value if field.is_repeated else (value,)
        if kind == _TEXT:
            if any(type(text) is bytes for text in values):
                raise ProtocolError(f"{field.full_name} is not valid UTF-8")
        else:
            for sub in values:
                check_utf8(sub)
