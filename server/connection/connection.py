"""One client connection: frames in, commands dispatched, replies coalesced out.

An asyncio Protocol on uvloop: data_received feeds the sans-IO decoder; each command goes to a
short handler that delegates to the broker service, a topic or a subscription. Outgoing frames
are gathered and written once per loop iteration. Publishing is back-pressured by pausing
reads when too many appends are in flight on the connection or in the broker (publish_buffer.py),
dispatching by the transport's write buffer (write_pressure.py); silent peers are pinged and then
dropped (keepalive.py).
"""

from __future__ import annotations

import asyncio
import logging
from functools import partial
from typing import TYPE_CHECKING, Awaitable, Callable

from log_limits.repeats import RepeatLimitedLog
from managed_ledger.errors import MetadataSessionLostError
from protocol import commands
from protocol import pulsar_api_pb2 as pb
from protocol.codec import Frame, FrameDecoder, ProtocolError, Send, encode_command
from protocol.commands import negotiate_protocol_version
from server.errors import BrokerError, NotAllowed, ServiceNotReady, server_error_of
from server.policies.topic_limits import check_consumer_room, check_producer_room, message_size_limit
from server.security.authorization import CONSUME, LOOKUP, PRODUCE
from server.security.client_auth import ClientAuth
from server.topics.message_id import position_of, seek_position
from server.topics.topic_name import TopicName

from .keepalive import Keepalive
from .send_refusal import refusal_of
from .client_queries import HANDLERS as CLIENT_QUERY_HANDLERS
from .command_context import ErrorBuilder
from .transactions import HANDLERS as TXN_HANDLERS
from .txn_buffer import HANDLERS as TXN_BUFFER_HANDLERS
from .txn_subscriptions import HANDLERS as TXN_SUBSCRIPTION_HANDLERS
from .txn_subscriptions import has_txn, on_txn_ack
from .unserved import refusal
from .write_pressure import HIGH_WATER, WriteGate

if TYPE_CHECKING:
    from server.broker_service import BrokerService
    from server.topics.producer import Producer
    from server.topics.subscriptions.consumer import Consumer

log = logging.getLogger(__name__)
_repeats = RepeatLimitedLog(log)   # a failing request retried by clients: one traceback per interval

Cmd = pb.BaseCommand
SERVER_VERSION = "pulsard-0.1.0"
#: Announced in CONNECTED: PARTITIONED_METADATA honours metadata_auto_creation_enabled (PIP-344).
FEATURES = pb.FeatureFlags(supports_get_partitioned_metadata_without_auto_creation=True)
#: Appends in flight on one connection before it stops reading (Pulsar's maxPendingPublishRequestsPerConnection).
MAX_PENDING_PUBLISHES = 1000
#: How many closed producer ids a connection remembers (for sends that were in flight).
RECENTLY_CLOSED_PRODUCERS = 1000
#: Broker-initiated CLOSE_* carry no client request; -1 is what Pulsar sends.
NO_REQUEST = -1
#: The client library that handles REACHED_END_OF_TOPIC (C++, Python and Go drop the connection).
END_OF_TOPIC_CLIENTS = ("Pulsar-Java-v",)
#: What a client may send while its CONNECT is being authenticated.
_BEFORE_AUTH = (Cmd.CONNECT, Cmd.PING, Cmd.PONG)


class Connection(asyncio.Protocol):
    def __init__(self, broker: "BrokerService") -> None:
        self.broker = broker
        self.config = broker.config
        self._decoder = FrameDecoder(self.config.max_frame_size)
        self._publish_buffer = broker.publish_buffer
        self._transport: asyncio.Transport | None = None
        self._out: list[bytes] = []
        self._out_bytes = 0
        self._flush_scheduled = False
        self._handshake_done = False
        self._producers: dict[int, "Producer"] = {}
        #: WaitForExclusive producers still queued, so CLOSE_PRODUCER can withdraw them.
        self._queued_producers: dict[int, "Producer"] = {}
        #: Producers closed lately (insertion-ordered, bounded): sends still arriving for them
        #: are dropped rather than taken for a confused client.
        self._closed_producer_ids: dict[int, None] = {}
        self._consumers: dict[int, "Consumer"] = {}
        self._tasks: set[asyncio.Task] = set()
        self._pending_publishes = 0
        #: Why the socket is not read (pending publishes, the broker's publish buffer, a publish rate).
        self._reading_blocked: set[object] = set()
        #: Closed while the transport's write buffer is above its high-water mark.
        self.write_gate = WriteGate()
        self._keepalive = Keepalive(self.config.keep_alive_interval_seconds,
                                    lambda: self.write(commands.ping()), self._drop_silent_peer)
        self.remote = "?"
        #: The client's address without its port (who a subscribe rate counts).
        self.host = "?"
        #: CONNECT's client_version, shown in publisher and consumer stats.
        self.client_version = ""
        #: Whether the client handles REACHED_END_OF_TOPIC (known from its CONNECT).
        self.handles_end_of_topic = False

    # -- transport --------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]  # uvloop's TCP transport
        peer = transport.get_extra_info("peername")
        # as Pulsar shows a client's address (stats, logs): /host:port
        self.remote = f"/{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self.host = str(peer[0]) if isinstance(peer, tuple) else self.remote
        self.auth = ClientAuth(self.broker.authentication, self.config.security.authentication_refresh_check_seconds,
                               transport.get_extra_info("peercert"), self.write, self.close, self.remote)
        WriteGate.attach(self._transport)
        self.broker.connections.add(self)
        self.broker.connections_created += 1
        self._keepalive.start()

    def data_received(self, data: bytes) -> None:
        self._keepalive.heard = True
        self._decoder.receive_data(data)
        try:
            while frames := self._decoder.next_frames():
                self._dispatch(frames)
        except ProtocolError as exc:
            log.warning("closing connection from %s: %s", self.remote, exc)
            self.abort()

    def pause_writing(self) -> None:
        self.write_gate.pause()

    def resume_writing(self) -> None:
        self.write_gate.resume(list(self._consumers.values()))

    def connection_lost(self, exc: Exception | None) -> None:
        self.broker.connections.discard(self)
        self.broker.publish_buffer.forget(self)
        self._keepalive.stop()
        self.auth.stop()
        for task in self._tasks:
            task.cancel()
        for producer in self._producers.values():
            producer.topic.remove_producer(producer)
        for consumer in self._consumers.values():
            consumer.subscription.remove_consumer(consumer)
        self._producers.clear()
        self._consumers.clear()
        self._transport = None

    @property
    def writable(self) -> bool:
        return self.write_gate.open

    def write(self, command: Cmd) -> None:
        self.write_frame(encode_command(command))

    def write_parts(self, *parts: bytes) -> None:
        """Queue bytes; everything queued in one loop iteration leaves in one write call, or
        sooner past the high-water mark, so a backed-up transport closes the write gate at once."""
        if self._transport is None:
            return
        self._out.extend(parts)
        self._out_bytes += sum(map(len, parts))
        self._written()

    def write_frame(self, frame: bytes) -> None:
        """write_parts of one whole frame (a receipt per message takes this way)."""
        if self._transport is None:
            return
        self._out.append(frame)
        self._out_bytes += len(frame)
        self._written()

    def _written(self) -> None:
        if self._out_bytes > HIGH_WATER:
            self._flush()
        elif not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        out, self._out, self._out_bytes = self._out, [], 0
        if out and self._transport is not None and not self._transport.is_closing():
            self._transport.writelines(out)

    def abort(self) -> None:
        if self._transport is not None:
            self._transport.abort()

    def close(self) -> None:
        """Flush what is queued, then close (used at shutdown)."""
        if self._transport is not None:
            self._flush()
            self._transport.close()

    # -- liveness and back-pressure ---------------------------------------------------------

    def _drop_silent_peer(self) -> None:
        log.info("closing connection from %s: no answer to ping", self.remote)
        self.abort()

    def publish_completed(self, size: int, count: int) -> None:
        self._pending_publishes -= count
        self._publish_buffer.answered(size)
        if self._pending_publishes <= MAX_PENDING_PUBLISHES // 2:
            self._allow_reading("pending publishes")

    def pause_publishing(self, reason: object) -> None:
        """The broker's publish buffer is full (publish_buffer.py), or a publish rate is
        exceeded (server/policies/publish_throttle.py): stop reading until resumed."""
        self._block_reading(reason)

    def resume_publishing(self, reason: object) -> None:
        self._allow_reading(reason)

    def _block_reading(self, reason: object) -> None:
        if not self._reading_blocked and self._transport is not None and not self._transport.is_closing():
            self._transport.pause_reading()
        self._reading_blocked.add(reason)

    def _allow_reading(self, reason: object) -> None:
        if reason in self._reading_blocked:
            self._reading_blocked.discard(reason)
            if not self._reading_blocked and self._transport is not None and not self._transport.is_closing():
                self._transport.resume_reading()

    # -- command dispatch -------------------------------------------------------------------

    def _handle(self, frame: Frame) -> None:
        command = frame.command
        self._check_allowed(command.type)
        handler = _HANDLERS.get(command.type)
        if handler is None:
            self.write(refusal(command, self.remote))
            return
        handler(self, command, frame)

    def _check_allowed(self, kind: int) -> None:
        if not self._handshake_done and kind != Cmd.CONNECT:
            raise ProtocolError(f"expected CONNECT first, got {Cmd.Type.Name(kind)}")
        if self.auth.pending and kind not in _BEFORE_AUTH:
            raise ProtocolError(f"{Cmd.Type.Name(kind)} before authentication completed")

    def respond(self, request_id: int, work: Awaitable[Cmd | None], on_error: ErrorBuilder = commands.error,
                 answered: Callable[[], None] | None = None) -> None:
        """Run a request in the background; write its answer (then call `answered`), or the
        error it raised."""
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(partial(self._answer, request_id, on_error, answered))

    def _answer(self, request_id: int, on_error: ErrorBuilder, answered: Callable[[], None] | None,
                task: asyncio.Task) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is None:
            reply = task.result()
            if reply is not None:
                self.write(reply)
            if answered is not None:
                answered()
            return
        if not isinstance(exc, (BrokerError, MetadataSessionLostError)):   # unexpected: its traceback
            _repeats.error(repr(exc), "request %d from %s failed", request_id, self.remote, exc_info=exc)
        code, message = server_error_of(exc)
        self.write(on_error(request_id, code, message))

    def _on_connect(self, command: Cmd, frame: Frame) -> None:
        if self._handshake_done:
            raise ProtocolError("CONNECT received twice")
        self._handshake_done = True
        self.client_version = command.connect.client_version
        self.handles_end_of_topic = command.connect.client_version.startswith(END_OF_TOPIC_CLIENTS)
        version = negotiate_protocol_version(command.connect.protocol_version)
        connected = commands.connected(SERVER_VERSION, version, self.config.max_message_size, FEATURES)
        if self.auth.required:
            self.auth.begin(command.connect, connected)   # CONNECTED, or ERROR(AuthenticationError) and close
        else:
            self.write(connected)

    def _on_auth_response(self, command: Cmd, frame: Frame) -> None:
        self.auth.respond(command.authResponse)

    def _on_ping(self, command: Cmd, frame: Frame) -> None:
        self.write(commands.pong())

    def _on_pong(self, command: Cmd, frame: Frame) -> None:
        self._keepalive.pong()

    def _on_lookup(self, command: Cmd, frame: Frame) -> None:
        lookup = command.lookupTopic
        self.respond(lookup.request_id, self._lookup(lookup), commands.lookup_failed)

    async def _lookup(self, lookup: pb.CommandLookupTopic) -> Cmd:
        name = TopicName.parse(lookup.topic)
        await self.broker.authorization.check(self.auth.role, name, LOOKUP)
        answer = await self.broker.lookup.answer(name, lookup.advertised_listener_name, lookup.authoritative)
        if answer.redirect:
            return commands.lookup_redirect(lookup.request_id, answer.broker_url, answer.broker_url_tls,
                                            authoritative=answer.authoritative)
        return commands.lookup_connect(lookup.request_id, answer.broker_url, answer.broker_url_tls,
                                       proxy_through_service_url=answer.proxy_through_service_url)

    def _on_partitioned_metadata(self, command: Cmd, frame: Frame) -> None:
        request = command.partitionMetadata
        self.respond(request.request_id, self._partitions(request), commands.partitioned_metadata_failed)

    async def _partitions(self, request: pb.CommandPartitionedTopicMetadata) -> Cmd:
        """Pulsar auto-creates metadata only if both the client (PIP-344) and the broker allow it."""
        name = TopicName.parse(request.topic)
        await self.broker.authorization.check(self.auth.role, name, LOOKUP,
                                              message="Client is not authorized to Get Partition Metadata")
        partitions = await self.broker.partitions_of(name, auto_create=request.metadata_auto_creation_enabled)
        return commands.partitioned_metadata(request.request_id, partitions)

    # -- producing --------------------------------------------------------------------------

    def _on_producer(self, command: Cmd, frame: Frame) -> None:
        self.respond(command.producer.request_id, self._create_producer(command.producer))

    async def _create_producer(self, request: pb.CommandProducer) -> Cmd:
        existing = self._producers.get(request.producer_id)
        if existing is None:
            name = TopicName.parse(request.topic)
            await self.broker.authorization.check(self.auth.role, name, PRODUCE)
            topic = await self.broker.get_topic(name)
            check_producer_room(topic, on_request=True)
            if request.initial_subscription_name:
                await topic.create_initial_subscription(request.initial_subscription_name)
            schema_version = None
            if request.HasField("schema"):
                schema_version = await self.broker.schemas.register(name, request.schema)
            existing = self._producers.get(request.producer_id)
            if existing is None:
                try:
                    existing = await topic.add_producer(
                        self, request, schema_version, partial(self._producer_queued, request.request_id)
                    )
                finally:
                    self._queued_producers.pop(request.producer_id, None)
                if self._transport is None:
                    topic.remove_producer(existing)
                    raise ServiceNotReady("connection closed while creating the producer")
                self._producers[request.producer_id] = existing
        return self._producer_success(request.request_id, existing)

    def _producer_success(self, request_id: int, producer: "Producer", ready: bool = True) -> Cmd:
        return commands.producer_success(
            request_id, producer.name, last_sequence_id=producer.topic.last_sequence_id(producer.name),
            schema_version=producer.schema_version, topic_epoch=producer.topic_epoch, producer_ready=ready,
        )

    def _producer_queued(self, request_id: int, producer: "Producer") -> None:
        """WaitForExclusive: the client learns it is queued; the real answer comes later."""
        self._queued_producers[producer.producer_id] = producer
        self.write(self._producer_success(request_id, producer, ready=False))

    def _dispatch(self, frames: list[Frame | Send]) -> None:
        """Handle frames in order; consecutive SENDs of one producer go to it as one run (the
        layers below then work per run, not per message)."""
        run: list[Send] = []
        producer: "Producer | None" = None
        try:
            for frame in frames:
                is_send = type(frame) is Send
                sender = self._producers.get(frame.producer_id) if is_send else None
                if run and sender is not producer:
                    producer.publish(run)
                    run = []
                producer = sender
                if not is_send:
                    self._handle(frame)
                elif self._admitted(frame, sender):
                    run.append(frame)
        finally:
            if run:
                producer.publish(run)

    def admitted_producer(self, send: Send) -> "Producer | None":
        producer = self._producers.get(send.producer_id)
        return producer if self._admitted(send, producer) else None

    def _admitted(self, send: Send, producer: "Producer | None") -> bool:
        """Every unbatched message passes here; a refused SEND is answered here."""
        if not self._handshake_done or self.auth.pending:
            self._check_allowed(Cmd.SEND)   # raises
        if producer is None:
            self._on_send_without_producer(send.producer_id)
            return False
        broker_max = self.config.max_message_size
        refusal = refusal_of(send, broker_max, message_size_limit(producer.topic.policies, broker_max))
        if refusal is not None:
            self.write(commands.send_error(send.producer_id, send.sequence_id, *refusal))
            return False
        self._pending_publishes += 1
        if self._pending_publishes >= MAX_PENDING_PUBLISHES:
            self._block_reading("pending publishes")
        self._publish_buffer.taken(self, len(send.entry))
        return True

    def _on_send_without_producer(self, producer_id: int) -> None:
        """As Pulsar: sends in flight when their producer was closed are dropped (the client
        resends them, or fails them, once it learns of the close); a send for a producer this
        connection never had means the client is confused, and the connection is closed."""
        if producer_id in self._closed_producer_ids:
            log.debug("%s: dropping a send for closed producer %d", self.remote, producer_id)
            return
        log.warning("closing connection from %s: send for producer %d, which is not ready",
                    self.remote, producer_id)
        self.close()

    def _forget_producer(self, producer_id: int) -> None:
        self._closed_producer_ids[producer_id] = None
        if len(self._closed_producer_ids) > RECENTLY_CLOSED_PRODUCERS:
            del self._closed_producer_ids[next(iter(self._closed_producer_ids))]

    def _on_close_producer(self, command: Cmd, frame: Frame) -> None:
        request = command.close_producer
        producer = self._producers.pop(request.producer_id, None)
        producer = producer or self._queued_producers.pop(request.producer_id, None)
        if producer is not None:
            producer.topic.remove_producer(producer)
            self._forget_producer(request.producer_id)
        self.write(commands.success(request.request_id))

    def detach_producer(self, producer: "Producer") -> None:
        """Take no more SENDs for producer: those still arriving are dropped (the client
        resends them once it has re-created the producer)."""
        if self._producers.get(producer.producer_id) is producer:
            del self._producers[producer.producer_id]
            self._forget_producer(producer.producer_id)

    def close_producer_by_broker(self, producer: "Producer") -> None:
        """CLOSE_PRODUCER (the client looks the topic up and reconnects), written after the
        receipts of the SENDs already taken: else the client fails messages that are stored."""
        self.detach_producer(producer)
        producer.after_receipts(lambda: self.write(commands.close_producer(producer.producer_id, NO_REQUEST)))

    # -- consuming --------------------------------------------------------------------------

    def _on_subscribe(self, command: Cmd, frame: Frame) -> None:
        request = command.subscribe
        self.respond(request.request_id, self._subscribe(request),
                      answered=partial(self._confirm_subscribed, request.consumer_id))

    def _confirm_subscribed(self, consumer_id: int) -> None:
        consumer = self._consumers.get(consumer_id)
        if consumer is not None:
            consumer.confirm_subscribed()

    async def _subscribe(self, request: pb.CommandSubscribe) -> Cmd:
        if request.consumer_id in self._consumers:
            return commands.success(request.request_id)
        name = TopicName.parse(request.topic)
        await self.broker.authorization.check(self.auth.role, name, CONSUME, request.subscription,
                                              "Client is not authorized to subscribe")
        topic = await self.broker.get_topic(name)
        check_consumer_room(topic)
        if request.HasField("schema"):
            await self.broker.schemas.check_for_consumer(name, request.schema, topic.is_idle())
        consumer = await topic.subscribe(self, request)
        if self._transport is None:
            consumer.subscription.remove_consumer(consumer)
            raise ServiceNotReady("connection closed while subscribing")
        self._consumers[request.consumer_id] = consumer
        return commands.success(request.request_id)

    def consumer(self, consumer_id: int) -> "Consumer":
        consumer = self._consumers.get(consumer_id)
        if consumer is None:
            raise NotAllowed(f"Consumer {consumer_id} is not connected")
        return consumer

    def _on_flow(self, command: Cmd, frame: Frame) -> None:
        consumer = self._consumers.get(command.flow.consumer_id)
        if consumer is not None:
            consumer.subscription.flow(consumer, command.flow.messagePermits)

    def _on_ack(self, command: Cmd, frame: Frame) -> None:
        ack = command.ack
        if has_txn(ack):
            on_txn_ack(self, ack)
            return
        try:
            consumer = self.consumer(ack.consumer_id)
            consumer.subscription.acknowledge(consumer, ack)
        except BrokerError as exc:
            log.info("acknowledgement from %s refused: %s", self.remote, exc)
            if ack.HasField("request_id"):
                self.write(commands.ack_response(ack.consumer_id, ack.request_id, exc.code, str(exc)))
            return
        if ack.HasField("request_id"):
            self.write(commands.ack_response(ack.consumer_id, ack.request_id))

    def _on_redeliver(self, command: Cmd, frame: Frame) -> None:
        request = command.redeliverUnacknowledgedMessages
        consumer = self._consumers.get(request.consumer_id)
        if consumer is None:
            return
        positions = [position_of(m) for m in request.message_ids] or None
        consumer.subscription.redeliver(consumer, positions)

    def _on_consumer_stats(self, command: Cmd, frame: Frame) -> None:
        request = command.consumerStats
        consumer = self._consumers.get(request.consumer_id)
        if consumer is None:
            self.write(commands.consumer_stats_error(request.request_id, pb.ConsumerNotFound,
                                                     f"Consumer {request.consumer_id} not found"))
            return
        self.write(commands.consumer_stats_response(request.request_id, **consumer.broker_stats()))

    def _on_close_consumer(self, command: Cmd, frame: Frame) -> None:
        request = command.close_consumer
        consumer = self._consumers.pop(request.consumer_id, None)
        if consumer is not None:
            consumer.subscription.remove_consumer(consumer)
        self.write(commands.success(request.request_id))

    def close_consumer_by_broker(self, consumer: "Consumer") -> None:
        if self._consumers.get(consumer.consumer_id) is consumer:
            del self._consumers[consumer.consumer_id]
        self.write(commands.close_consumer(consumer.consumer_id, NO_REQUEST))

    def _on_unsubscribe(self, command: Cmd, frame: Frame) -> None:
        self.respond(command.unsubscribe.request_id, self._unsubscribe(command.unsubscribe))

    async def _unsubscribe(self, request: pb.CommandUnsubscribe) -> Cmd:
        consumer = self.consumer(request.consumer_id)
        subscription = consumer.subscription
        await subscription.topic.unsubscribe(subscription, consumer)
        self._consumers.pop(request.consumer_id, None)
        return commands.success(request.request_id)

    def _on_seek(self, command: Cmd, frame: Frame) -> None:
        self.respond(command.seek.request_id, self._seek(command.seek))

    async def _seek(self, request: pb.CommandSeek) -> Cmd:
        subscription = self.consumer(request.consumer_id).subscription
        topic = subscription.topic
        if not topic.name.persistent:
            raise NotAllowed(f"Seek is not supported on non-persistent topic {topic.name}")
        if request.HasField("message_publish_time"):
            position = await topic.find_position_by_publish_time(request.message_publish_time)
        elif request.HasField("message_id"):
            position = seek_position(topic.ledger, request.message_id)
        else:
            raise NotAllowed("SEEK needs a message id or a publish time")
        await subscription.reset(position)
        return commands.success(request.request_id)

    def _on_get_last_message_id(self, command: Cmd, frame: Frame) -> None:
        request = command.getLastMessageId
        self.respond(request.request_id, self._last_message_id(request))

    async def _last_message_id(self, request: pb.CommandGetLastMessageId) -> Cmd:
        consumer = self.consumer(request.consumer_id)
        topic = consumer.subscription.topic
        last, batch_index = await topic.last_message_id()
        mark_delete = consumer.subscription.cursor.mark_delete_position
        return commands.last_message_id(
            request.request_id, last.ledger_id, last.entry_id, partition=topic.name.partition_index,
            batch_index=batch_index, mark_delete=(mark_delete.ledger_id, mark_delete.entry_id),
        )

    # -- namespaces and schemas -------------------------------------------------------------


_HANDLERS: dict[int, Callable[[Connection, Cmd, Frame], None]] = {
    Cmd.CONNECT: Connection._on_connect,
    Cmd.PING: Connection._on_ping,
    Cmd.AUTH_RESPONSE: Connection._on_auth_response,
    Cmd.PONG: Connection._on_pong,
    Cmd.LOOKUP: Connection._on_lookup,
    Cmd.PARTITIONED_METADATA: Connection._on_partitioned_metadata,
    Cmd.PRODUCER: Connection._on_producer,
    Cmd.CLOSE_PRODUCER: Connection._on_close_producer,
    Cmd.SUBSCRIBE: Connection._on_subscribe,
    Cmd.FLOW: Connection._on_flow,
    Cmd.ACK: Connection._on_ack,
    Cmd.REDELIVER_UNACKNOWLEDGED_MESSAGES: Connection._on_redeliver,
    Cmd.CLOSE_CONSUMER: Connection._on_close_consumer,
    Cmd.CONSUMER_STATS: Connection._on_consumer_stats,
    Cmd.UNSUBSCRIBE: Connection._on_unsubscribe,
    Cmd.SEEK: Connection._on_seek,
    Cmd.GET_LAST_MESSAGE_ID: Connection._on_get_last_message_id,
    **CLIENT_QUERY_HANDLERS,
    **TXN_HANDLERS,
    **TXN_BUFFER_HANDLERS,
    **TXN_SUBSCRIPTION_HANDLERS,
}
