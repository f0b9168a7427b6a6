"""Hostile clients against a real pulsard, while an official producer/consumer pair must stay intact.

    python benchmarks/fuzz.py [--connections 20] [--seconds 60] [--seed N] [--keep-log PATH]

Starts pulsard on free loopback ports with a temporary data dir. --connections threads each open
connection after connection for --seconds, and on each do one of these mutation kinds:
  bad-checksum      SENDs whose CRC32C does not match (each must get SEND_ERROR)
  bad-metadata      checksummed SENDs whose MessageMetadata does not parse
  malformed-frame   random bytes, bit-flipped valid frames, truncated frames, lying sizes
  oversized-frame   a length prefix far above the maximum, or a real frame above it
  random-commands   valid commands with random ids, names and values (incl. invalid names)
  stalled-consumer  a Shared consumer with huge permits that does not read for a while
  vanish            requests (SUBSCRIBE, SEEK, PRODUCER) followed at once by a reset
  flood             valid 100 KB messages as fast as the broker takes them (food for the stalled)
Meanwhile the official Python client produces numbered messages on its own topic (Shared
subscription, acknowledging each one) and checks order and loss. Broker RSS is sampled every
second. At the end: the broker must still run, its log must hold no traceback of pulsard's own
code, and every receipted message must have arrived once, in order. Prints the figures; exit
status 1 if any check failed.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import socket
import struct
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import crc32c
import pulsar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from compat_tests.broker import Broker  # noqa: E402
from protocol import pulsar_api_pb2 as pb  # noqa: E402
from protocol.codec import FrameDecoder, ProtocolError, encode_command, encode_payload_frame  # noqa: E402
from protocol.entry import make_entry  # noqa: E402

Cmd = pb.BaseCommand
KINDS = ("bad-checksum", "bad-metadata", "malformed-frame", "oversized-frame", "random-commands",
         "stalled-consumer", "vanish", "flood")
FUZZ_TOPICS = [f"persistent://public/default/fuzz-{i}" for i in range(12)] + [
    "non-persistent://public/default/fuzz-np", "fuzz-short", "persistent://public/default/fuzz-p-partition-1"]
BAD_NAMES = ["", "persistent://", "x://a/b/c", "persistent://./../t", "persistent://a//b", "a" * 400,
             "persistent://public/default/a<b;c", "persistent://é/x/y"]
PACKAGE_ROOTS = ("server/", "protocol/", "managed_ledger/", "bookkeeper/")
LEGIT_TOPIC = "persistent://public/default/fuzz-legit"


# -- hostile connections ----------------------------------------------------------------------------
class Hostile:
    """One raw connection; everything it does may be refused or cut by the broker."""

    def __init__(self, port: int, rng: random.Random) -> None:
        self.rng = rng
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def connect(self) -> None:
        self.send(encode_command(Cmd(type=Cmd.CONNECT, connect=pb.CommandConnect(
            client_version="pulsard-fuzz", protocol_version=self.rng.choice([6, 12, 19, 21, 99])))))

    def answer(self, seconds: float = 2.0) -> int | None:
        """The type of the first frame back after CONNECTED (None: nothing, or not parsable)."""
        decoder, deadline = FrameDecoder(64 << 20), time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                return None
            if not data:
                return None
            decoder.receive_data(data)
            try:
                while (frame := decoder.next_frame()) is not None:
                    if frame.command.type != Cmd.CONNECTED:
                        return frame.command.type
            except ProtocolError:
                return None
        return None

    def drain(self, seconds: float) -> int:
        """Read what comes back for a while; returns the bytes read."""
        total, deadline = 0, time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                break
            if not data:
                break
            total += len(data)
        return total

    def reset(self) -> None:
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.sock.close()

    def close(self) -> None:
        self.sock.close()

    # -- building blocks --------------------------------------------------------------------------
    def topic(self) -> str:
        return self.rng.choice(BAD_NAMES) if self.rng.random() < 0.1 else self.rng.choice(FUZZ_TOPICS)

    def producer(self, producer_id: int = 1) -> bytes:
        return encode_command(Cmd(type=Cmd.PRODUCER, producer=pb.CommandProducer(
            topic=self.topic(), producer_id=producer_id, request_id=self.rng.randrange(1 << 20),
            initial_subscription_name=self.rng.choice(["", "init"]))))

    def subscribe(self, sub_type: int | None = None) -> bytes:
        return encode_command(Cmd(type=Cmd.SUBSCRIBE, subscribe=pb.CommandSubscribe(
            topic=self.topic(), subscription=self.rng.choice(["s", "t", "u/v", "w://x"]),
            subType=self.rng.randrange(4) if sub_type is None else sub_type, consumer_id=1,
            request_id=self.rng.randrange(1 << 20), initialPosition=self.rng.randrange(2),
            durable=self.rng.random() < 0.8)))

    def entry(self, size: int | None = None) -> bytes:
        metadata = pb.MessageMetadata(producer_name="fuzz", sequence_id=self.rng.randrange(1 << 30),
                                      publish_time=int(time.time() * 1000))
        if self.rng.random() < 0.3:
            metadata.partition_key = self.rng.choice(["k1", "k2", "k3"])
        return make_entry(metadata, os.urandom(self.rng.randrange(1, 2000) if size is None else size))

    def send_frame(self, entry: bytes, producer_id: int = 1) -> bytes:
        send = Cmd(type=Cmd.SEND, send=pb.CommandSend(producer_id=producer_id,
                                                      sequence_id=self.rng.randrange(1 << 30)))
        return b"".join(encode_payload_frame(send, entry))

    def random_command(self) -> bytes:
        rng, ids = self.rng, lambda: rng.choice([0, 1, 2, -1 % (1 << 64), rng.randrange(1 << 64)])
        message_id = pb.MessageIdData(ledgerId=ids(), entryId=ids())
        builders = [
            lambda: Cmd(type=Cmd.FLOW, flow=pb.CommandFlow(consumer_id=ids(), messagePermits=rng.randrange(1 << 32))),
            lambda: Cmd(type=Cmd.ACK, ack=pb.CommandAck(consumer_id=ids(), ack_type=rng.randrange(2),
                                                        message_id=[message_id] * rng.randrange(4))),
            lambda: Cmd(type=Cmd.SEEK, seek=pb.CommandSeek(consumer_id=ids(), request_id=ids(), message_id=message_id)),
            lambda: Cmd(type=Cmd.SEEK, seek=pb.CommandSeek(consumer_id=ids(), request_id=ids(),
                                                           message_publish_time=ids())),
            lambda: Cmd(type=Cmd.LOOKUP, lookupTopic=pb.CommandLookupTopic(topic=self.topic(), request_id=ids())),
            lambda: Cmd(type=Cmd.PARTITIONED_METADATA, partitionMetadata=pb.CommandPartitionedTopicMetadata(
                topic=self.topic(), request_id=ids())),
            lambda: Cmd(type=Cmd.GET_TOPICS_OF_NAMESPACE, getTopicsOfNamespace=pb.CommandGetTopicsOfNamespace(
                request_id=ids(), namespace=rng.choice(["public/default", "public//x", "", "/", "a/b/c", "é/x"]),
                mode=rng.randrange(3))),
            lambda: Cmd(type=Cmd.GET_SCHEMA, getSchema=pb.CommandGetSchema(request_id=ids(), topic=self.topic())),
            lambda: Cmd(type=Cmd.GET_LAST_MESSAGE_ID, getLastMessageId=pb.CommandGetLastMessageId(
                consumer_id=ids(), request_id=ids())),
            lambda: Cmd(type=Cmd.REDELIVER_UNACKNOWLEDGED_MESSAGES,
                        redeliverUnacknowledgedMessages=pb.CommandRedeliverUnacknowledgedMessages(
                            consumer_id=ids(), message_ids=[message_id] * rng.randrange(3))),
            lambda: Cmd(type=Cmd.UNSUBSCRIBE, unsubscribe=pb.CommandUnsubscribe(consumer_id=ids(), request_id=ids())),
            lambda: Cmd(type=Cmd.CLOSE_PRODUCER, close_producer=pb.CommandCloseProducer(producer_id=ids(),
                                                                                         request_id=ids())),
            lambda: Cmd(type=Cmd.CLOSE_CONSUMER, close_consumer=pb.CommandCloseConsumer(consumer_id=ids(),
                                                                                         request_id=ids())),
            lambda: Cmd(type=Cmd.PING, ping=pb.CommandPing()),
            lambda: Cmd(type=rng.choice(list(Cmd.Type.values()))),   # a type without its body
        ]
        command = rng.choice(builders)()
        body = command.SerializePartialToString()
        return struct.pack(">II", 4 + len(body), len(body)) + body

    # -- the mutation kinds -----------------------------------------------------------------------
    def bad_checksum(self) -> None:
        self.connect()
        self.send(self.producer())
        self.answer()
        for _ in range(self.rng.randrange(1, 10)):
            entry = bytearray(self.entry())
            entry[2 + self.rng.randrange(4)] ^= 0xFF   # the stored CRC32C
            self.send(self.send_frame(bytes(entry)))
        self.drain(0.2)

    def bad_metadata(self) -> None:
        self.connect()
        self.send(self.producer())
        self.answer()
        for _ in range(self.rng.randrange(1, 10)):
            metadata = self.rng.choice([b"\xff" * 5, os.urandom(self.rng.randrange(1, 40)), b"\x08\x01",
                                        pb.MessageMetadata(producer_name="p").SerializePartialToString()])
            body = struct.pack(">I", len(metadata)) + metadata + os.urandom(self.rng.randrange(0, 100))
            entry = struct.pack(">HI", 0x0E01, crc32c.crc32c(body)) + body
            self.send(self.send_frame(entry))
        self.drain(0.2)

    def malformed_frame(self) -> None:
        if self.rng.random() < 0.7:
            self.connect()
        choice = self.rng.randrange(5)
        if choice == 0:
            self.send(os.urandom(self.rng.randrange(1, 300)))
        elif choice == 1:
            frame = bytearray(self.rng.choice([self.random_command(), self.subscribe(), self.producer(),
                                               self.send_frame(self.entry())]))
            for _ in range(self.rng.randrange(1, 6)):
                frame[self.rng.randrange(len(frame))] ^= 1 << self.rng.randrange(8)
            self.send(bytes(frame))
        elif choice == 2:
            frame = self.send_frame(self.entry())
            self.send(frame[:self.rng.randrange(1, len(frame))])
            self.sock.shutdown(socket.SHUT_WR)
        elif choice == 3:
            body = self.random_command()[8:]
            self.send(struct.pack(">II", len(body) + 4, len(body) + self.rng.randrange(1, 1000)) + body)
        else:
            self.send(struct.pack(">II", 0, 0) + os.urandom(8))
        self.drain(0.2)

    def oversized_frame(self) -> None:
        self.connect()
        if self.rng.random() < 0.5:
            self.send(struct.pack(">II", self.rng.randrange(6 << 20, 1 << 31), 16))
        else:
            self.send(self.producer())
            self.answer()
            self.send(self.send_frame(self.entry(6 << 20)))
        self.drain(0.3)

    def random_commands(self) -> None:
        self.connect()
        if self.rng.random() < 0.5:
            self.send(self.invalid_utf8(self.subscribe()))
        for _ in range(self.rng.randrange(1, 20)):
            self.send(self.invalid_utf8(self.random_command()))
        self.drain(0.3)

    def invalid_utf8(self, frame: bytes) -> bytes:
        """Sometimes turn the names in a frame into invalid UTF-8 (same length, still parses)."""
        return frame.replace(b"fuzz", b"\xff\xfe\xc3(") if self.rng.random() < 0.2 else frame

    def stalled_consumer(self) -> None:
        self.connect()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * 1024)
        self.send(self.subscribe(pb.CommandSubscribe.Shared))
        self.send(encode_command(Cmd(type=Cmd.FLOW, flow=pb.CommandFlow(consumer_id=1, messagePermits=1 << 30))))
        time.sleep(self.rng.uniform(0.5, 3.0))   # reads nothing meanwhile
        self.drain(0.2)

    def flood(self) -> None:
        self.connect()
        self.send(self.producer())
        if self.answer() != Cmd.PRODUCER_SUCCESS:
            return
        for _ in range(self.rng.randrange(10, 100)):
            self.send(self.send_frame(self.entry(100_000)))
        self.drain(0.5)

    def vanish(self) -> None:
        self.connect()
        self.send(self.rng.choice([self.subscribe(), self.producer()]))
        if self.rng.random() < 0.5:
            self.drain(self.rng.uniform(0.0, 0.05))
            self.send(encode_command(Cmd(type=Cmd.SEEK, seek=pb.CommandSeek(
                consumer_id=1, request_id=2, message_publish_time=1))))
        time.sleep(self.rng.uniform(0, 0.005))
        self.reset()


def hostile_worker(port: int, seed: int, deadline: float, kinds: list[str], counts: Counter,
                   lock: threading.Lock) -> None:
    rng = random.Random(seed)
    while time.monotonic() < deadline:
        kind = rng.choice(kinds)
        try:
            hostile = Hostile(port, rng)
        except OSError:
            with lock:
                counts["connect-failed"] += 1
            time.sleep(0.1)
            continue
        try:
            getattr(hostile, kind.replace("-", "_"))()
        except OSError:
            pass   # the broker closed or reset the connection: expected for most kinds
        except Exception as exc:  # noqa: BLE001 - a fuzzer bug must not stop the run
            with lock:
                counts[f"fuzzer-error {type(exc).__name__}"] += 1
        finally:
            try:
                hostile.close()
            except OSError:
                pass
        with lock:
            counts[kind] += 1


# -- the legitimate pair -------------------------------------------------------------------------
class LegitPair:
    """An official producer numbering its messages and a Shared consumer checking them."""

    def __init__(self, service_url: str) -> None:
        self.client = pulsar.Client(service_url, operation_timeout_seconds=30,
                                    logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
        self.consumer = self.client.subscribe(LEGIT_TOPIC, "legit", consumer_type=pulsar.ConsumerType.Shared)
        self.producer = self.client.create_producer(LEGIT_TOPIC, batching_enabled=True,
                                                    batching_max_publish_delay_ms=5)
        self.receipted = 0
        self.send_failures = 0
        self.received: list[int] = []
        self.stop = threading.Event()
        self.produced = threading.Event()

    def produce(self) -> None:
        index = 0
        try:
            while not self.stop.is_set():
                try:
                    self.producer.send(str(index).encode())
                except pulsar.PulsarException:
                    self.send_failures += 1
                    return   # a failed send would be resent as a new number: stop here instead
                self.receipted = index = index + 1
                time.sleep(0.002)
        finally:
            self.produced.set()

    def consume(self, until: float) -> None:
        while time.monotonic() < until and (not self.produced.is_set() or len(self.received) < self.receipted):
            try:
                message = self.consumer.receive(timeout_millis=1000)
            except pulsar.Timeout:
                continue
            self.received.append(int(message.data()))
            self.consumer.acknowledge(message)

    def verdict(self) -> tuple[int, int, int]:
        """(lost, duplicated, out of order) among the receipted messages."""
        seen = Counter(self.received)
        lost = sum(1 for i in range(self.receipted) if i not in seen)
        duplicated = sum(n - 1 for n in seen.values() if n > 1)
        out_of_order = sum(1 for a, b in zip(self.received, self.received[1:]) if b < a)
        return lost, duplicated, out_of_order


# -- the run ---------------------------------------------------------------------------------------
def own_tracebacks(log_text: str) -> list[str]:
    """Tracebacks whose frames include a file of pulsard's packages."""
    blocks = re.split(r"\n(?=\S)", log_text)
    return [b for b in blocks if b.startswith("Traceback") and any(
        re.search(rf'File ".*/{root}', b) for root in PACKAGE_ROOTS)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--connections", type=int, default=20, help="concurrent hostile connections")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--kinds", default=",".join(KINDS), help="comma-separated mutation kinds to use")
    parser.add_argument("--keep-log", type=Path, help="copy the broker log here")
    args = parser.parse_args()
    kinds = args.kinds.split(",")
    if not kinds or not set(kinds) <= set(KINDS):
        parser.error(f"--kinds: choose among {', '.join(KINDS)}")

    work = Path(tempfile.mkdtemp(prefix="pulsard-fuzz-"))
    broker = Broker(work).start()
    rss: list[int] = []
    counts: Counter = Counter()
    lock = threading.Lock()
    try:
        legit = LegitPair(broker.service_url)
        rss.append(broker.rss_kib())
        started = time.monotonic()
        deadline = started + args.seconds
        threads = [threading.Thread(target=legit.produce, daemon=True),
                   *[threading.Thread(target=hostile_worker, args=(broker.broker_port, args.seed * 1000 + i,
                                                                   deadline, kinds, counts, lock), daemon=True)
                     for i in range(args.connections)]]
        consumer = threading.Thread(target=legit.consume, args=(deadline + 60,), daemon=True)
        for thread in [*threads, consumer]:
            thread.start()
        while time.monotonic() < deadline and broker.is_running():
            time.sleep(1.0)
            rss.append(broker.rss_kib())
        legit.stop.set()
        for thread in threads:
            thread.join(timeout=30)
        consumer.join(timeout=90)
        elapsed = time.monotonic() - started
        alive = broker.is_running()
        if alive:
            rss.append(broker.rss_kib())
        legit.client.close()
    finally:
        broker.stop()
        log_text = broker.log_path.read_text(errors="replace")
        if args.keep_log:
            shutil.copy(broker.log_path, args.keep_log)
        shutil.rmtree(work, ignore_errors=True)

    lost, duplicated, out_of_order = legit.verdict()
    own = own_tracebacks(log_text)
    print(f"duration {elapsed:.0f} s, {args.connections} hostile connections at a time, seed {args.seed}")
    print(f"hostile connections: {sum(v for k, v in counts.items() if k in KINDS)} "
          + " ".join(f"{k}={counts[k]}" for k in KINDS) + f" connect-failed={counts['connect-failed']}"
          + "".join(f" {k}={v}" for k, v in counts.items() if k.startswith("fuzzer-error")))
    print(f"broker alive at the end: {alive}; crashes: {0 if alive else 1}")
    print(f"tracebacks in the broker log: {log_text.count('Traceback')}, of pulsard's own code: {len(own)}")
    print(f"broker RSS MiB: start {rss[0] / 1024:.0f}, max {max(rss) / 1024:.0f}, end {rss[-1] / 1024:.0f}")
    print(f"legit pair: {legit.receipted} receipted, {len(legit.received)} received, lost {lost}, "
          f"duplicated {duplicated}, out of order {out_of_order}, send failures {legit.send_failures}")
    for block in own[:3]:
        print("---\n" + block[:2000])
    ok = alive and not own and lost == 0 and out_of_order == 0 and legit.send_failures == 0 and legit.receipted > 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
