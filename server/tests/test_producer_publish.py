"""Every SEND the connection counts as pending is completed once, whatever its outcome, so a
connection never stays paused for publishes that will not complete; SENDs read together go as
one run, receipted at consecutive positions."""

import asyncio

from managed_ledger.position import Position
from protocol import pulsar_api_pb2 as pb
from protocol.codec import Send
from server.topics.producer import Producer


def send(sequence_id: int) -> Send:
    return Send(1, sequence_id, sequence_id, 1, False, b"entry %d" % sequence_id, True, None)


class RecordingConnection:
    def __init__(self) -> None:
        self.completed = 0
        self.written: list[pb.BaseCommand] = []

    def publish_completed(self, size: int, count: int) -> None:
        self.completed += count

    def write(self, command: pb.BaseCommand) -> None:
        self.written.append(command)

    def write_frame(self, frame: bytes) -> None:   # [total size][command size][command]
        self.written.append(pb.BaseCommand.FromString(frame[8:]))


class FailingThenWorkingTopic:
    """The first append fails (a disk error); later ones would succeed."""

    name = "persistent://public/default/t"
    deduplication = None
    positions_are_consecutive = True

    def __init__(self) -> None:
        self.appends = 0
        self.runs: list[list[bytes]] = []

    def publish(self, entries: list[bytes], num_messages: int, on_done) -> None:
        self.appends += 1
        self.runs.append(entries)
        if self.appends == 1:
            asyncio.get_running_loop().call_soon(on_done, None, OSError(28, "No space left on device"))
        else:
            asyncio.get_running_loop().call_soon(on_done, Position(1, self.appends), None)


def test_sends_refused_after_a_persistence_failure_still_complete():
    async def scenario() -> tuple[RecordingConnection, FailingThenWorkingTopic]:
        connection, topic = RecordingConnection(), FailingThenWorkingTopic()
        producer = Producer(producer_id=1, name="p", topic=topic, connection=connection, user_provided_name=True)
        for sequence_id in range(3):
            producer.publish([send(sequence_id)])
            await asyncio.sleep(0)
        return connection, topic

    connection, topic = asyncio.run(scenario())
    assert topic.appends == 1, "nothing may be appended after a failed append until the client reconnects"
    assert connection.completed == 3
    errors = [c.send_error for c in connection.written if c.type == pb.BaseCommand.SEND_ERROR]
    assert [(e.sequence_id, e.error) for e in errors] == [(0, pb.PersistenceError), (1, pb.PersistenceError),
                                                         (2, pb.PersistenceError)]


def test_a_run_is_receipted_at_consecutive_positions_and_fails_whole():
    async def scenario() -> tuple[RecordingConnection, FailingThenWorkingTopic]:
        connection, topic = RecordingConnection(), FailingThenWorkingTopic()
        producer = Producer(producer_id=1, name="p", topic=topic, connection=connection, user_provided_name=True)
        topic.appends = 1   # the first run works
        producer.publish([send(0), send(1), send(2)])
        await asyncio.sleep(0)
        topic.appends = 0   # the next fails
        producer.publish([send(3), send(4)])
        await asyncio.sleep(0)
        return connection, topic

    connection, topic = asyncio.run(scenario())
    assert topic.runs == [[b"entry 0", b"entry 1", b"entry 2"], [b"entry 3", b"entry 4"]]
    assert connection.completed == 5
    receipts = [(c.send_receipt.sequence_id, c.send_receipt.message_id.ledgerId, c.send_receipt.message_id.entryId)
                for c in connection.written if c.type == pb.BaseCommand.SEND_RECEIPT]
    assert receipts == [(0, 1, 2), (1, 1, 3), (2, 1, 4)]
    errors = [(c.send_error.sequence_id, c.send_error.error) for c in connection.written
              if c.type == pb.BaseCommand.SEND_ERROR]
    assert errors == [(3, pb.PersistenceError), (4, pb.PersistenceError)]
