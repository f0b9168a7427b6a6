"""Every SEND the connection counts as pending is completed once, whatever its outcome, so a
connection never stays paused for publishes that will not complete."""

import asyncio

from managed_ledger.position import Position
from protocol import pulsar_api_pb2 as pb
from server.topics.producer import Producer


class RecordingConnection:
    def __init__(self) -> None:
        self.completed = 0
        self.written: list[pb.BaseCommand] = []

    def publish_completed(self, size: int) -> None:
        self.completed += 1

    def write(self, command: pb.BaseCommand) -> None:
        self.written.append(command)


class FailingThenWorkingTopic:
    """The first append fails (a disk error); later ones would succeed."""

    name = "persistent://public/default/t"
    deduplication = None

    def __init__(self) -> None:
        self.appends = 0

    def publish(self, entry: bytes, num_messages: int, on_done) -> None:
        self.appends += 1
        if self.appends == 1:
            asyncio.get_running_loop().call_soon(on_done, None, OSError(28, "No space left on device"))
        else:
            asyncio.get_running_loop().call_soon(on_done, Position(1, self.appends), None)


def test_sends_refused_after_a_persistence_failure_still_complete():
    async def scenario() -> tuple[RecordingConnection, FailingThenWorkingTopic]:
        connection, topic = RecordingConnection(), FailingThenWorkingTopic()
        producer = Producer(producer_id=1, name="p", topic=topic, connection=connection, user_provided_name=True)
        for sequence_id in range(3):
            producer.publish(sequence_id, sequence_id, b"entry", 1)
            await asyncio.sleep(0)
        return connection, topic

    connection, topic = asyncio.run(scenario())
    assert topic.appends == 1, "nothing may be appended after a failed append until the client reconnects"
    assert connection.completed == 3
    errors = [c.send_error for c in connection.written if c.type == pb.BaseCommand.SEND_ERROR]
    assert [(e.sequence_id, e.error) for e in errors] == [(0, pb.PersistenceError), (1, pb.PersistenceError),
                                                         (2, pb.PersistenceError)]
