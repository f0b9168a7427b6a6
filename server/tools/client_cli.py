"""`pulsard client produce|consume`: pulsar-client's two commands, on the official Python client,
so a topic can be fed and watched from a shell without writing a program.

The client library is imported when a command runs, never by `pulsard standalone`.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING, Any, Iterator

from server.tools.connection import add_connection_flags, open_client

if TYPE_CHECKING:
    import pulsar

#: pulsar-client's names for them -> the Python client's enum members.
SUBSCRIPTION_TYPES = {"Exclusive": "Exclusive", "Shared": "Shared", "Failover": "Failover", "Key_Shared": "KeyShared"}
POSITIONS = {"Latest": "Latest", "Earliest": "Earliest"}
RECEIVE_POLL_MS = 1000


def add_client_parser(commands: argparse._SubParsersAction) -> None:
    client = commands.add_parser("client", help="produce or consume messages (as pulsar-client)")
    add_connection_flags(client)
    actions = client.add_subparsers(dest="action", required=True)
    produce = actions.add_parser("produce", help="send messages: -m TEXT, -f FILE, else stdin lines")
    produce.add_argument("topic")
    produce.add_argument("-m", "--messages", action="append", default=[], help="a message (repeatable)")
    produce.add_argument("-f", "--files", action="append", default=[], help="a file sent as one message (repeatable)")
    produce.add_argument("-n", "--num-produce", type=int, default=1, help="send the messages this many times")
    produce.add_argument("-r", "--rate", type=float, default=0, help="messages per second (0: as fast as possible)")
    produce.add_argument("-k", "--key", help="the messages' key")
    produce.add_argument("-p", "--properties", action="append", default=[], metavar="K=V",
                         help="a property (repeatable)")
    produce.set_defaults(run=produce_command)
    consume = actions.add_parser("consume", help="receive, print and acknowledge messages")
    consume.add_argument("topic")
    consume.add_argument("-s", "--subscription-name", required=True)
    consume.add_argument("-t", "--subscription-type", choices=sorted(SUBSCRIPTION_TYPES), default="Exclusive")
    consume.add_argument("-p", "--subscription-position", choices=sorted(POSITIONS), default="Latest")
    consume.add_argument("-n", "--num-messages", type=int, default=1, help="messages to receive (0: forever)")
    consume.add_argument("--hex", action="store_true", help="print payloads in hex")
    consume.set_defaults(run=consume_command)


def consumer_options(args: argparse.Namespace) -> dict[str, Any]:
    """The subscription type and initial position named on the command line."""
    import pulsar
    return {"consumer_type": getattr(pulsar.ConsumerType, SUBSCRIPTION_TYPES[args.subscription_type]),
            "initial_position": getattr(pulsar.InitialPosition, POSITIONS[args.subscription_position])}


def _properties(pairs: list[str]) -> dict[str, str]:
    properties = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"expected K=V, got {pair!r}")
        properties[key] = value
    return properties


def _payloads(args: argparse.Namespace) -> list[bytes]:
    payloads = [text.encode() for text in args.messages]
    for path in args.files:
        with open(path, "rb") as handle:
            payloads.append(handle.read())
    if not payloads:
        payloads = [line.rstrip(b"\n") for line in sys.stdin.buffer]
    return payloads


def _paced(count: int, rate: float) -> Iterator[int]:
    """0..count-1, at most `rate` per second when rate > 0."""
    started = time.monotonic()
    for n in range(count):
        if rate > 0:
            time.sleep(max(0.0, started + n / rate - time.monotonic()))
        yield n


def produce_command(args: argparse.Namespace) -> int:
    payloads, properties = _payloads(args), _properties(args.properties)
    client = open_client(args)
    try:
        producer = client.create_producer(args.topic)
        sent = 0
        for _ in _paced(args.num_produce, args.rate):
            for payload in payloads:
                producer.send(payload, properties=properties or None, partition_key=args.key)
                sent += 1
        producer.flush()
    finally:
        client.close()
    print(f"{sent} messages successfully produced", file=sys.stderr)
    return 0


def _describe(message: pulsar.Message, hex_payload: bool) -> str:
    data = message.data()
    content = data.hex() if hex_payload else data.decode(errors="replace")
    key = message.partition_key() or "null"
    return f"----- got message -----\nkey:[{key}], properties:{message.properties()}, content:{content}"


def consume_command(args: argparse.Namespace) -> int:
    import pulsar
    client = open_client(args)
    received = 0
    try:
        consumer = client.subscribe(args.topic, args.subscription_name, **consumer_options(args))
        while args.num_messages <= 0 or received < args.num_messages:
            try:
                message = consumer.receive(timeout_millis=RECEIVE_POLL_MS)
            except pulsar.Timeout:
                continue
            print(_describe(message, args.hex), flush=True)
            consumer.acknowledge(message)
            received += 1
    except KeyboardInterrupt:
        pass
    finally:
        client.close()
    print(f"{received} messages successfully consumed", file=sys.stderr)
    return 0
