"""Advertised listeners (advertisedListeners=name:url,...): a lookup answers the URLs of the
listener the client names (listener_name), the internal listener's when it names none, and
fails for a name the broker does not have; a bad configuration stops the broker at start.

Every address here is a loopback one, so the answers also tell the client to stay on its service
URL (proxy_through_service_url, as Pulsar standalone does); the client then names the listener's
address in CONNECT.proxy_to_broker_url, which a relay in front of the broker records.
"""

from __future__ import annotations

import socket
import threading

import pulsar
import pytest

from compat_tests.admin_http import AdminHttp
from compat_tests.broker import Broker, BrokerError, write_config
from compat_tests.helpers import assert_round_trip, unique_topic
from compat_tests.raw_requests import replies
from protocol import pulsar_api_pb2 as pb
from protocol.codec import FrameDecoder

Cmd = pb.BaseCommand
LOOKUP_PATH = "/lookup/v2/topic/persistent/public/default/t"
#: Only announced, never connected to: a TLS URL (this broker has no TLS port) and a
#: documentation address (TEST-NET-1).
TLS_URL, WAN_URL = "pulsar+ssl://localhost:6651", "pulsar://192.0.2.1:6650"


@pytest.fixture(scope="module")
def listener_broker(tmp_path_factory):
    """internal = 127.0.0.1 (the first, so the default), external = localhost (plain and TLS),
    wan = a non-loopback address."""
    broker = Broker(tmp_path_factory.mktemp("listeners"), {})
    listeners = [f"internal:pulsar://127.0.0.1:{broker.broker_port}",
                 f"external:pulsar://localhost:{broker.broker_port}", f"external:{TLS_URL}", f"wan:{WAN_URL}"]
    broker.config_path = write_config(broker.work_dir / "standalone.conf",
                                      {"advertisedListeners": ",".join(listeners)})
    try:
        broker.start()
    except BrokerError as exc:
        pytest.fail(f"pulsard did not come up: {exc}", pytrace=False)
    yield broker
    broker.stop()


def lookup(broker, listener: str | None) -> pb.CommandLookupTopicResponse:
    request = pb.CommandLookupTopic(topic=f"persistent://public/default/{unique_topic()}", request_id=1)
    if listener is not None:
        request.advertised_listener_name = listener
    [reply] = replies(broker, Cmd(type=Cmd.LOOKUP, lookupTopic=request))
    return reply.lookupTopicResponse


def test_lookup_answers_the_named_listener(listener_broker):
    port = listener_broker.broker_port
    internal, external, wan = lookup(listener_broker, None), lookup(listener_broker, "external"), \
        lookup(listener_broker, "wan")
    assert (internal.response, internal.brokerServiceUrl, internal.HasField("brokerServiceUrlTls")) == \
        (internal.Connect, f"pulsar://127.0.0.1:{port}", False)
    assert (external.response, external.brokerServiceUrl, external.brokerServiceUrlTls) == \
        (external.Connect, f"pulsar://localhost:{port}", TLS_URL)
    assert internal.proxy_through_service_url and external.proxy_through_service_url
    assert (wan.brokerServiceUrl, wan.proxy_through_service_url) == (WAN_URL, False)
    assert lookup(listener_broker, "").brokerServiceUrl == internal.brokerServiceUrl


def test_lookup_for_a_listener_the_broker_does_not_have_fails(listener_broker):
    failed = lookup(listener_broker, "nosuch")
    assert (failed.response, failed.error) == (failed.Failed, pb.ServiceNotReady)
    assert "nosuch" in failed.message
    client = pulsar.Client(listener_broker.service_url, listener_name="nosuch", operation_timeout_seconds=2,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        with pytest.raises(pulsar.Timeout):     # ServiceNotReady is retried until the timeout
            client.create_producer(unique_topic())
    finally:
        client.close()


def test_http_lookup_takes_the_listener_from_the_query_or_the_header(listener_broker):
    http = AdminHttp(listener_broker.web_url)
    port = listener_broker.broker_port
    assert http.get(LOOKUP_PATH).json()["brokerUrl"] == f"pulsar://127.0.0.1:{port}"
    named = http.get(LOOKUP_PATH, listenerName="external").json()
    assert (named["brokerUrl"], named["nativeUrl"]) == (f"pulsar://localhost:{port}",) * 2
    header = http.request("GET", LOOKUP_PATH, headers={"X-Pulsar-ListenerName": "wan"}).json()
    assert header["brokerUrl"] == WAN_URL
    assert http.get(LOOKUP_PATH, listenerName="nosuch").status_code == 500


class ConnectRecorder:
    """A TCP relay in front of the broker keeping the first command (CONNECT) of every
    connection a client opens through it."""

    def __init__(self, broker) -> None:
        self._upstream = ("127.0.0.1", broker.broker_port)
        self._server = socket.create_server(("127.0.0.1", 0))
        self._sockets: list[socket.socket] = [self._server]
        self.connects: list[pb.CommandConnect] = []
        self.service_url = f"pulsar://127.0.0.1:{self._server.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return   # closed
            upstream = socket.create_connection(self._upstream)
            self._sockets += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream, FrameDecoder(1 << 20)), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, None), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket, decoder: FrameDecoder | None) -> None:
        try:
            while data := source.recv(65536):
                target.sendall(data)
                if decoder is not None:
                    decoder.receive_data(data)
                    if (frame := decoder.next_frame()) is not None:
                        self.connects.append(frame.command.connect)
                        decoder = None
        except OSError:
            pass
        finally:
            target.close()

    def close(self) -> None:
        for sock in self._sockets:
            sock.close()


@pytest.mark.parametrize("listener, host", [("external", "localhost"), (None, "127.0.0.1")])
def test_the_client_reaches_its_listener_through_its_service_url(listener_broker, listener, host):
    relay = ConnectRecorder(listener_broker)
    client = pulsar.Client(relay.service_url, listener_name=listener, operation_timeout_seconds=10,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    try:
        assert_round_trip(client, unique_topic("via-listener"))
    finally:
        client.close()
        relay.close()
    proxied = {connect.proxy_to_broker_url for connect in relay.connects if connect.proxy_to_broker_url}
    assert proxied == {f"{host}:{listener_broker.broker_port}"}


BAD_LISTENERS = [
    ({"advertisedListeners": "pulsar://127.0.0.1:6650"}, "advertisedListeners"),
    ({"advertisedListeners": "a:pulsar://127.0.0.1:6650", "internalListenerName": "b"}, "internalListenerName"),
    ({"advertisedListeners": "a:pulsar://127.0.0.1:6650,a:pulsar://127.0.0.2:6650"}, "advertisedListeners"),
    ({"advertisedListeners": "a:pulsar://127.0.0.1:6650,b:pulsar://127.0.0.1:6650"}, "advertisedListeners"),
    ({"advertisedListeners": "a:http://127.0.0.1:8080"}, "advertisedListeners"),
]


@pytest.mark.parametrize("config, key", BAD_LISTENERS)
def test_a_bad_listener_configuration_stops_the_broker(tmp_path, config, key):
    broker = Broker(tmp_path, config)
    try:
        with pytest.raises(BrokerError, match=f"exited with code 1(.|\\n)*pulsard: {key}: "):
            broker.start()
    finally:
        broker.stop()
