"""Many connections at once, each with a producer: connect time and broker memory.

    python benchmarks/connections.py [--connections 1000] [--topics 100] [--idle 5]

Starts pulsard on free loopback ports with a temporary data dir, then opens --connections TCP
connections at once (asyncio, raw protocol frames from this repository's codec: 1,000 official
clients would be 1,000 processes' worth of threads). Each sends CONNECT, then PRODUCER on one of
--topics topics, then one message, and waits for its receipt. Prints the time until every
connection was CONNECTED, until every producer was ready and until every receipt arrived, and the
broker's RSS before, with everything open, after --idle seconds, and after they all closed.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from compat_tests.broker import Broker  # noqa: E402
from open_files import raise_open_files  # noqa: E402
from protocol import pulsar_api_pb2 as pb  # noqa: E402
from protocol.codec import FrameDecoder, encode_command, encode_payload_frame  # noqa: E402
from protocol.entry import make_entry  # noqa: E402

Cmd = pb.BaseCommand


class Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.decoder = FrameDecoder(8 << 20)

    async def expect(self, kind: int) -> Cmd:
        while (frame := self.decoder.next_frame()) is None:
            data = await self.reader.read(65536)
            if not data:
                raise ConnectionError("closed by the broker")
            self.decoder.receive_data(data)
        if frame.command.type != kind:
            raise AssertionError(f"expected {Cmd.Type.Name(kind)}, got {frame.command}")
        return frame.command


async def one(port: int, index: int, topics: int, marks: dict[str, list[float]],
              all_open: asyncio.Event, release: asyncio.Event) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    connection = Connection(reader, writer)
    try:
        writer.write(encode_command(Cmd(type=Cmd.CONNECT, connect=pb.CommandConnect(
            client_version="pulsard-connections", protocol_version=21))))
        await connection.expect(Cmd.CONNECTED)
        marks["connected"].append(time.monotonic())
        writer.write(encode_command(Cmd(type=Cmd.PRODUCER, producer=pb.CommandProducer(
            topic=f"persistent://public/default/connections-{index % topics}", producer_id=1, request_id=1))))
        await connection.expect(Cmd.PRODUCER_SUCCESS)
        marks["producer"].append(time.monotonic())
        entry = make_entry(pb.MessageMetadata(producer_name=f"c{index}", sequence_id=0,
                                              publish_time=int(time.time() * 1000)), b"hello")
        writer.write(b"".join(encode_payload_frame(
            Cmd(type=Cmd.SEND, send=pb.CommandSend(producer_id=1, sequence_id=0)), entry)))
        await connection.expect(Cmd.SEND_RECEIPT)
        marks["receipt"].append(time.monotonic())
        if len(marks["receipt"]) == marks["total"][0]:
            all_open.set()
        await release.wait()
    finally:
        writer.close()


async def run(broker: Broker, count: int, topics: int, idle_s: float) -> None:
    rss_before = broker.rss_kib()
    marks: dict[str, list[float]] = {"connected": [], "producer": [], "receipt": [], "total": [count]}
    all_open, release = asyncio.Event(), asyncio.Event()
    started = time.monotonic()
    tasks = [asyncio.create_task(one(broker.broker_port, i, topics, marks, all_open, release)) for i in range(count)]
    await asyncio.wait_for(all_open.wait(), timeout=300)
    rss_open = broker.rss_kib()
    await asyncio.sleep(idle_s)
    rss_idle = broker.rss_kib()
    release.set()
    outcomes = await asyncio.gather(*tasks, return_exceptions=True)
    failures = [o for o in outcomes if isinstance(o, BaseException)]
    await asyncio.sleep(2.0)
    rss_closed = broker.rss_kib()

    def after(kind: str) -> str:
        return f"{max(marks[kind]) - started:.2f} s" if marks[kind] else "-"

    print(f"{count} connections, a producer each on {topics} topics; failures: {len(failures)}")
    print(f"all CONNECTED after {after('connected')}, all producers ready after {after('producer')}, "
          f"all first receipts after {after('receipt')}")
    print(f"broker RSS MiB: before {rss_before / 1024:.1f}, all open {rss_open / 1024:.1f} "
          f"({(rss_open - rss_before) / count:.1f} KiB per connection), after {idle_s:.0f} s idle "
          f"{rss_idle / 1024:.1f}, all closed {rss_closed / 1024:.1f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--connections", type=int, default=1000)
    parser.add_argument("--topics", type=int, default=100)
    parser.add_argument("--idle", type=float, default=5.0)
    args = parser.parse_args()
    raise_open_files(args.connections + 200)
    work = Path(tempfile.mkdtemp(prefix="pulsard-connections-"))
    broker = Broker(work).start()
    try:
        asyncio.run(run(broker, args.connections, args.topics, args.idle))
    finally:
        broker.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
