"""`pulsard client` and `pulsard perf` against a broker with authentication or TLS on: pulsar-client's
and pulsar-perf's flags (--auth-plugin, --auth-params, --tls-trust-cert-path / --trust-cert-file),
client.conf named by PULSAR_CLIENT_CONF as their defaults, and a one-line failure, exit code 1, for
credentials the broker refuses or the tool cannot use."""

from __future__ import annotations

import base64
import secrets

import jwt
import pytest

from compat_tests.broker import HOST, free_port
from compat_tests.certificates import CertificateAuthority
from compat_tests.conftest import _broker_fixture
from compat_tests.helpers import PulsardStarted, pulsard, unique_topic

TOKEN_PROVIDER = "org.apache.pulsar.broker.authentication.AuthenticationProviderToken"
TLS_PROVIDER = "org.apache.pulsar.broker.authentication.AuthenticationProviderTls"
PLUGINS = "org.apache.pulsar.client.impl.auth."
#: A refused client waits for the broker's answer, at worst the client's 30 s operation timeout.
REFUSED_TIMEOUT_S = 120


@pytest.fixture(scope="module")
def secret() -> bytes:
    return secrets.token_bytes(32)


@pytest.fixture(scope="module")
def token_broker(tmp_path_factory, secret):
    """One for the module: each test uses topics of its own."""
    yield from _broker_fixture(tmp_path_factory, "token", {
        "authenticationEnabled": "true", "authenticationProviders": TOKEN_PROVIDER,
        "tokenSecretKey": "data:;base64," + base64.b64encode(secret).decode()})


@pytest.fixture(scope="module")
def token_conf(token_broker, secret, tmp_path_factory) -> dict[str, str]:
    """The environment naming a client.conf with the broker's URL and a token file."""
    directory = tmp_path_factory.mktemp("client-conf")
    token_file = directory / "token.txt"
    token_file.write_text(token_for(secret) + "\n")
    conf = directory / "client.conf"
    conf.write_text(f"brokerServiceUrl={token_broker.service_url}\nauthPlugin={PLUGINS}AuthenticationToken\n"
                    f"authParams=file://{token_file}\n")
    return {"PULSAR_CLIENT_CONF": str(conf)}


@pytest.fixture(scope="module", autouse=True)
def refused_runs(token_broker, token_conf):
    """The module's two commands the broker refuses, started with its first test: each one's
    client retries until its 30 s operation timeout, while the other tests run (the two tests
    that check them come last). "client": client.conf's URL and plugin, with a token of another
    key given by --auth-params (the flag must win over the file's good token); "perf": no
    credentials at all."""
    wrong_key = token_for(b"not the broker's key" * 2)
    runs = {"client": PulsardStarted("client", "--auth-params", f"token:{wrong_key}", "produce",
                                     unique_topic("cli-refused"), "-m", "x", env=token_conf),
            "perf": PulsardStarted("perf", "produce", unique_topic("perf-refused"), "-u", token_broker.service_url,
                                   "-n", "1")}
    yield runs
    for run in runs.values():
        run.stop()


def token_for(secret: bytes, subject: str = "cli") -> str:
    return jwt.encode({"sub": subject}, secret, algorithm="HS256")


def contents(consumed) -> list[str]:
    return [line.split("content:", 1)[1] for line in consumed.stdout.splitlines() if "content:" in line]


def assert_one_line_failure(run, *expected: str) -> None:
    """Exit code 1 and the reason on stderr's last line (the client's own log may precede it)."""
    assert run.returncode == 1, (run.returncode, run.stderr)
    assert "Traceback" not in run.stderr, run.stderr
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith("pulsard "), run.stderr
    for text in expected:
        assert text in last, run.stderr


def test_client_produce_and_consume_with_token_flags(token_broker, secret):
    topic = unique_topic("cli-token")
    flags = ("--url", token_broker.service_url, "--auth-plugin", PLUGINS + "AuthenticationToken",
             "--auth-params", f"token:{token_for(secret)}")
    produced = pulsard("client", *flags, "produce", topic, "-m", "with a token")
    assert produced.returncode == 0, produced.stderr
    consumed = pulsard("client", *flags, "consume", topic, "-s", "s", "-p", "Earliest", "-n", "1")
    assert consumed.returncode == 0, consumed.stderr
    assert contents(consumed) == ["with a token"]


def test_an_unusable_plugin_or_parameters_is_a_one_line_error():
    unknown = pulsard("client", "--auth-plugin", "com.example.AuthenticationKerberos", "produce", "t", "-m", "x")
    assert_one_line_failure(unknown, "--auth-plugin com.example.AuthenticationKerberos: not one of")
    missing = pulsard("perf", "consume", "t", "--auth-plugin", PLUGINS + "AuthenticationToken",
                      "--auth-params", "file:///nonexistent/token.txt")
    assert_one_line_failure(missing, "--auth-params for AuthenticationToken", "/nonexistent/token.txt")
    basic = pulsard("client", "--auth-plugin", "AuthenticationBasic", "--auth-params", "userId:u", "consume", "t",
                    "-s", "s")
    assert_one_line_failure(basic, "--auth-params for AuthenticationBasic: missing 'password'")


def test_tls_trust_and_client_certificate_flags_and_client_conf(make_broker, tmp_path):
    ca = CertificateAuthority(tmp_path)
    server = ca.issue("server", server=True)
    port = free_port()
    make_broker({"authenticationEnabled": "true", "authenticationProviders": TLS_PROVIDER,
                 "brokerServicePortTls": port, "tlsCertificateFilePath": server.cert,
                 "tlsKeyFilePath": server.key, "tlsTrustCertsFilePath": ca.pem.cert})
    url = f"pulsar+ssl://{HOST}:{port}"
    cert = ca.issue("cli-user")
    cert_params = f"tlsCertFile:{cert.cert},tlsKeyFile:{cert.key}"
    topic = unique_topic("cli-tls")
    produced = pulsard("client", "--url", url, "--tls-trust-cert-path", str(ca.pem.cert),
                       "--tls-enable-hostname-verification", "--auth-plugin", PLUGINS + "AuthenticationTls",
                       "--auth-params", cert_params, "produce", topic, "-m", "over tls")
    assert produced.returncode == 0, produced.stderr

    conf = tmp_path / "client.conf"
    conf.write_text(f"brokerServiceUrl={url}\ntlsTrustCertsFilePath={ca.pem.cert}\n"
                    f"authPlugin={PLUGINS}AuthenticationTls\nauthParams={cert_params}\n")
    env = {"PULSAR_CLIENT_CONF": str(conf)}
    consumed = pulsard("client", "consume", topic, "-s", "s", "-p", "Earliest", "-n", "1", env=env)
    assert contents(consumed) == ["over tls"], consumed.stderr
    perf = pulsard("perf", "produce", topic, "--trust-cert-file", str(ca.pem.cert), "-n", "10", "-r", "0",
                   "-i", "1", env=env)
    assert perf.returncode == 0 and "produce total: 10 messages" in perf.stdout, perf.stderr


def test_client_conf_gives_url_and_credentials_and_flags_win(token_conf, refused_runs):
    topic = unique_topic("cli-conf")
    produced = pulsard("client", "produce", topic, "-m", "from client.conf", env=token_conf)
    assert produced.returncode == 0, produced.stderr
    consumed = pulsard("client", "consume", topic, "-s", "s", "-p", "Earliest", "-n", "1", env=token_conf)
    assert contents(consumed) == ["from client.conf"], consumed.stderr

    refused = refused_runs["client"].result(REFUSED_TIMEOUT_S)   # --auth-params with a token of another key
    assert_one_line_failure(refused, "pulsard client: ", "its log says why")


def test_perf_with_pulsar_perf_flags_after_the_command(token_broker, secret, refused_runs):
    topic = unique_topic("perf-token")
    flags = ("-u", token_broker.service_url, "--auth-plugin", PLUGINS + "AuthenticationToken",
             "--auth-params", f'{{"token": "{token_for(secret)}"}}')
    produced = pulsard("perf", "produce", topic, *flags, "-r", "0", "-s", "16", "-n", "50", "-i", "1")
    assert produced.returncode == 0, produced.stderr
    assert "produce total: 50 messages" in produced.stdout
    refused = refused_runs["perf"].result(REFUSED_TIMEOUT_S)   # no credentials
    assert_one_line_failure(refused, "pulsard perf: ", "its log says why")
