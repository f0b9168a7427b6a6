"""GET /admin/v2/brokers/health (pulsar-admin brokers healthcheck), as Pulsar's
BrokersBase.healthCheck: a fresh message written to this broker's heartbeat topic
(server/heartbeat.py) and read back from storage. "ok" once it came back the same; a 500 with
the reason when any step fails, logged in one line per interval (probes repeat)."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid

from log_limits.repeats import RepeatLimitedLog
from managed_ledger.position import Position
from protocol import pulsar_api_pb2 as pb
from protocol.entry import make_entry
from server import web
from server.broker_service import BrokerService
from server.heartbeat import health_check_topic

from .errors import NOT_FOUND, RestError, require, rest_handler

log = logging.getLogger(__name__)
_repeats = RepeatLimitedLog(log)

#: A round trip stuck this long (storage not answering) fails the check.
TIMEOUT_S = 30
TOPIC_VERSIONS = ("V1", "V2")


async def round_trip(broker: BrokerService, v2: bool) -> None:
    """Write a message no one else could have written to the heartbeat topic; read it back."""
    topic = await broker.get_topic(health_check_topic(broker.config, v2))
    entry = make_entry(pb.MessageMetadata(producer_name="health-check", sequence_id=0,
                                          publish_time=time.time_ns() // 1_000_000), uuid.uuid4().hex.encode())
    stored: asyncio.Future[Position] = asyncio.get_running_loop().create_future()

    def done(position: Position | None, error: BaseException | None) -> None:
        if not stored.done():
            stored.set_exception(error) if error is not None else stored.set_result(position)

    topic.publish([entry], 1, done)
    read = await topic.ledger.read_entry(await stored)
    if read is None or read.data != entry:
        raise RuntimeError(f"the message written to {topic.name} did not read back the same")


def routes(broker: BrokerService) -> list[web.RouteDef]:
    @rest_handler
    async def health(request: web.Request) -> web.Response:
        version = request.query.get("topicVersion", "V1")
        require(version in TOPIC_VERSIONS, NOT_FOUND, f"Unknown topicVersion {version}")
        try:
            await asyncio.wait_for(round_trip(broker, version == "V2"), TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001 - whatever failed is the answer
            reason = str(exc) or type(exc).__name__
            _repeats.warning(type(exc), "health check failed: %s", reason)
            raise RestError(500, f"Health check failed: {reason}") from None
        return web.Response(text="ok")

    return [web.get("/admin/v2/brokers/health", health)]
