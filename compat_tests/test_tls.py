"""TLS on the binary and web ports (brokerServicePortTls, webServicePortTls and the tls* keys)
with the official Python client and requests; certificates made by the test."""

from __future__ import annotations

import shutil
import ssl
import socket
import time

import pulsar
import pytest
import requests

from compat_tests.broker import HOST, Broker, free_port
from compat_tests.certificates import CertificateAuthority

FAIL_TIMEOUT_S = 3


@pytest.fixture
def ca(tmp_path):
    return CertificateAuthority(tmp_path)


def tls_config(ca: CertificateAuthority, **extra) -> dict:
    server = ca.issue("server", server=True)
    return {"brokerServicePortTls": free_port(), "webServicePortTls": free_port(),
            "tlsCertificateFilePath": server.cert, "tlsKeyFilePath": server.key,
            "tlsTrustCertsFilePath": ca.pem.cert, **extra}


def tls_url(config: dict) -> str:
    return f"pulsar+ssl://{HOST}:{config['brokerServicePortTls']}"


def https_url(config: dict) -> str:
    return f"https://{HOST}:{config['webServicePortTls']}"


def tls_client(config, trust, timeout=10, **kwargs) -> pulsar.Client:
    return pulsar.Client(tls_url(config), tls_trust_certs_file_path=str(trust), operation_timeout_seconds=timeout,
                         logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error), **kwargs)


def round_trip(client: pulsar.Client, topic: str) -> None:
    consumer = client.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
    client.create_producer(topic).send(b"over tls")
    assert consumer.receive(timeout_millis=10000).data() == b"over tls"


def refused(client: pulsar.Client) -> None:
    with pytest.raises(pulsar.PulsarException):
        client.create_producer(f"refused-{time.monotonic_ns()}")
    client.close()


def test_produce_consume_over_tls_and_lookup_answers_the_tls_url(make_broker, ca, connect):
    config = tls_config(ca)
    broker = make_broker(config)
    client = tls_client(config, ca.pem.cert)
    try:
        round_trip(client, "tls-topic")
    finally:
        client.close()
    answer = requests.get(f"{https_url(config)}/lookup/v2/topic/persistent/public/default/tls-topic",
                          verify=str(ca.pem.cert), timeout=10).json()
    assert answer["brokerUrlTls"] == tls_url(config)
    assert answer["brokerUrl"] == broker.service_url
    round_trip(connect(broker), "plain-topic")   # the plain port serves too
    insecure = pulsar.Client(tls_url(config), tls_allow_insecure_connection=True, operation_timeout_seconds=10,
                             logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        round_trip(insecure, "insecure-client")    # the client does not check the broker's certificate
    finally:
        insecure.close()


def test_client_certificate_required(make_broker, ca, tmp_path):
    config = tls_config(ca, tlsRequireTrustedClientCertOnConnect="true")
    broker = make_broker(config)
    alice = ca.issue("alice")
    with_cert = tls_client(config, ca.pem.cert, authentication=pulsar.AuthenticationTLS(str(alice.cert), str(alice.key)))
    try:
        round_trip(with_cert, "mtls")
    finally:
        with_cert.close()
    refused(tls_client(config, ca.pem.cert, timeout=FAIL_TIMEOUT_S))
    (tmp_path / "other").mkdir()
    stranger = CertificateAuthority(tmp_path / "other", "other-ca").issue("mallory")
    refused(tls_client(config, ca.pem.cert, timeout=FAIL_TIMEOUT_S,
                       authentication=pulsar.AuthenticationTLS(str(stranger.cert), str(stranger.key))))
    with pytest.raises((requests.exceptions.SSLError, requests.exceptions.ConnectionError)):  # TLS 1.3: after the handshake
        requests.get(f"{https_url(config)}/admin/v2/tenants", verify=str(ca.pem.cert), timeout=10)
    ok = requests.get(f"{https_url(config)}/admin/v2/tenants", verify=str(ca.pem.cert), timeout=10,
                      cert=(str(alice.cert), str(alice.key)))
    assert ok.status_code == 200 and "public" in ok.json()
    assert broker.is_running() and broker.health_ok()


def test_plain_client_and_garbage_on_the_tls_port_fail_alone(make_broker, ca, connect):
    config = tls_config(ca)
    broker = make_broker(config)
    good = tls_client(config, ca.pem.cert)
    try:
        round_trip(good, "before")
        refused(pulsar.Client(f"pulsar://{HOST}:{config['brokerServicePortTls']}",
                              operation_timeout_seconds=FAIL_TIMEOUT_S,
                              logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)))
        with socket.create_connection((HOST, config["brokerServicePortTls"]), timeout=5) as raw:
            raw.sendall(b"\x16\x03\x01\x00\x05garbage" * 10)
            raw.recv(100)
        round_trip(good, "after")
    finally:
        good.close()
    round_trip(connect(broker), "plain-after")
    assert broker.is_running()


def test_certificate_reloaded_when_the_files_change(make_broker, ca, tmp_path):
    config = tls_config(ca, tlsCertRefreshCheckDurationSec=1)
    make_broker(config)
    (tmp_path / "next").mkdir()
    next_ca = CertificateAuthority(tmp_path / "next", "next-ca")
    renewed = next_ca.issue("server", server=True)
    shutil.copy(renewed.key, config["tlsKeyFilePath"])
    shutil.copy(renewed.cert, config["tlsCertificateFilePath"])
    context = ssl.create_default_context(cafile=str(next_ca.pem.cert))
    deadline = time.monotonic() + 10
    while True:
        try:
            with socket.create_connection((HOST, config["brokerServicePortTls"]), timeout=5) as raw:
                with context.wrap_socket(raw, server_hostname=HOST):
                    break
        except ssl.SSLError:
            assert time.monotonic() < deadline, "the renewed certificate was never served"
            time.sleep(0.3)
    client = tls_client(config, next_ca.pem.cert)
    try:
        round_trip(client, "renewed")
    finally:
        client.close()


class TlsOnlyBroker(Broker):
    """Started with an empty brokerServicePort in its file and no --broker-port flag."""

    def command(self) -> list[str]:
        cmd = super().command()
        at = cmd.index("--broker-port")
        return cmd[:at] + cmd[at + 2:]


def test_tls_only_broker(tmp_path, ca):
    config = tls_config(ca, brokerServicePort="")
    broker = TlsOnlyBroker(tmp_path / "tls-only", config)
    broker.start()
    try:
        client = tls_client(config, ca.pem.cert)
        try:
            round_trip(client, "tls-only")
        finally:
            client.close()
        answer = requests.get(f"{broker.web_url}/lookup/v2/topic/persistent/public/default/tls-only", timeout=10).json()
        assert (answer["brokerUrl"], answer["brokerUrlTls"]) == ("", tls_url(config))
        with pytest.raises(OSError):
            socket.create_connection((HOST, broker.broker_port), timeout=2).close()
    finally:
        broker.stop()
