"""Authentication with Pulsar's providers (token, basic, TLS) against a real pulsard, with the
official Python client's AuthenticationToken / AuthenticationBasic / AuthenticationTLS and
requests on the admin API."""

from __future__ import annotations

import base64
import os
import secrets
import ssl
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import bcrypt
import jwt
import pulsar
import pytest
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from compat_tests.broker import HOST, free_port
from compat_tests.certificates import CertificateAuthority
from compat_tests.helpers import pulsard
from compat_tests.raw_requests import Cmd, RawConnection
from compat_tests.toolchains import go_scenarios
from protocol import pulsar_api_pb2 as pb

TOKEN = "org.apache.pulsar.broker.authentication.AuthenticationProviderToken"
BASIC = "org.apache.pulsar.broker.authentication.AuthenticationProviderBasic"
TLS = "org.apache.pulsar.broker.authentication.AuthenticationProviderTls"
FAIL_TIMEOUT_S = 3


def client_for(url: str, timeout: float = 10, **kwargs) -> pulsar.Client:
    return pulsar.Client(url, operation_timeout_seconds=timeout,
                         logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error), **kwargs)


def round_trip(client: pulsar.Client, topic: str) -> None:
    try:
        consumer = client.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
        client.create_producer(topic).send(b"authenticated")
        assert consumer.receive(timeout_millis=10000).data() == b"authenticated"
    finally:
        client.close()


def refused(*clients: pulsar.Client) -> None:
    """No client gets a producer. A refused client retries until its operation timeout, so
    several wait it out side by side."""
    def one(client: pulsar.Client) -> None:
        try:
            with pytest.raises(pulsar.PulsarException):
                client.create_producer(f"refused-{time.monotonic_ns()}")
        finally:
            client.close()

    with ThreadPoolExecutor(len(clients)) as pool:
        list(pool.map(one, clients))   # re-raises a client's failure


@pytest.fixture(scope="module")
def secret() -> bytes:
    return secrets.token_bytes(32)


def hs256(secret: bytes, subject: str, expires_in: float | None = None) -> str:
    claims = {"sub": subject}
    if expires_in is not None:
        claims["exp"] = int(time.time() + expires_in)
    return jwt.encode(claims, secret, algorithm="HS256")


def admin_get(broker, path: str, **kwargs) -> requests.Response:
    return requests.get(f"{broker.web_url}{path}", timeout=10, **kwargs)


def test_token_secret_key(make_broker, secret):
    broker = make_broker({"authenticationEnabled": "true", "authenticationProviders": TOKEN,
                          "tokenSecretKey": "data:;base64," + base64.b64encode(secret).decode()})
    round_trip(client_for(broker.service_url, authentication=pulsar.AuthenticationToken(hs256(secret, "alice"))),
               "token-topic")
    refused(client_for(broker.service_url, FAIL_TIMEOUT_S),
            client_for(broker.service_url, FAIL_TIMEOUT_S,
                       authentication=pulsar.AuthenticationToken(hs256(b"another key" * 3, "alice"))),
            client_for(broker.service_url, FAIL_TIMEOUT_S,
                       authentication=pulsar.AuthenticationToken(hs256(secret, "alice", expires_in=-10))))
    assert admin_get(broker, "/admin/v2/tenants").status_code == 401
    assert admin_get(broker, "/admin/v2/tenants",
                     headers={"Authorization": "Bearer " + hs256(b"x" * 32, "alice")}).status_code == 401
    ok = admin_get(broker, "/admin/v2/tenants", headers={"Authorization": "Bearer " + hs256(secret, "alice")})
    assert ok.status_code == 200 and "public" in ok.json()
    assert admin_get(broker, "/metrics").status_code == 200      # open unless authenticateMetricsEndpoint
    metrics = admin_get(broker, "/metrics").text
    assert 'pulsar_authentication_failures_total{auth_method="token"' in metrics


def test_metrics_endpoint_authenticated_when_configured(make_broker, secret, tmp_path):
    key_file = tmp_path / "secret.key"
    key_file.write_bytes(secret)
    broker = make_broker({"authenticationEnabled": "true", "authenticationProviders": TOKEN,
                          "tokenSecretKey": f"file://{key_file}", "authenticateMetricsEndpoint": "true"})
    assert admin_get(broker, "/metrics").status_code == 401
    assert admin_get(broker, "/metrics", headers={"Authorization": "Bearer " + hs256(secret, "ops")}).status_code == 200


def test_anonymous_user_role(make_broker, secret):
    broker = make_broker({"authenticationEnabled": "true", "authenticationProviders": TOKEN,
                          "tokenSecretKey": base64.b64encode(secret).decode(), "anonymousUserRole": "guest",
                          "authorizationEnabled": "true", "superUserRoles": "ops"})
    refused(client_for(broker.service_url, FAIL_TIMEOUT_S))     # let in as guest, who may do nothing
    assert "role 'guest' may not lookup" in broker.log_tail()
    assert admin_get(broker, "/admin/v2/tenants").status_code == 403
    requests.post(f"{broker.web_url}/admin/v2/namespaces/public/default/permissions/guest", json=["produce"],
                  headers={"Authorization": "Bearer " + hs256(secret, "ops")}, timeout=10)
    client = client_for(broker.service_url)
    try:
        client.create_producer("guest-topic").send(b"anonymous")
    finally:
        client.close()


@pytest.mark.parametrize("algorithm", ["RS256", "ES256"])
def test_token_public_key(make_broker, tmp_path, algorithm):
    private = rsa.generate_private_key(65537, 2048) if algorithm == "RS256" else ec.generate_private_key(ec.SECP256R1())
    public_file = tmp_path / "public.key"
    public_file.write_bytes(private.public_key().public_bytes(serialization.Encoding.DER,
                                                             serialization.PublicFormat.SubjectPublicKeyInfo))
    broker = make_broker({"authenticationEnabled": "true", "authenticationProviders": TOKEN,
                          "tokenPublicKey": f"file://{public_file}", "tokenPublicAlg": algorithm})
    token = jwt.encode({"sub": "bob"}, private, algorithm=algorithm)
    round_trip(client_for(broker.service_url, authentication=pulsar.AuthenticationToken(token)), "rsa-topic")
    other = rsa.generate_private_key(65537, 2048) if algorithm == "RS256" else ec.generate_private_key(ec.SECP256R1())
    refused(client_for(broker.service_url, FAIL_TIMEOUT_S,
                       authentication=pulsar.AuthenticationToken(jwt.encode({"sub": "bob"}, other, algorithm=algorithm))))


def test_custom_role_claim_and_expiring_token_refreshed(make_broker, secret):
    broker = make_broker({"authenticationEnabled": "true", "authenticationProviders": TOKEN,
                          "tokenSecretKey": base64.b64encode(secret).decode(), "tokenAuthClaim": "role",
                          "authenticationRefreshCheckSeconds": 1})
    issued: list[str] = []

    def fresh_token() -> str:
        issued.append(jwt.encode({"role": "carol", "exp": int(time.time() + 2)}, secret, algorithm="HS256"))
        return issued[-1]

    client = client_for(broker.service_url, authentication=pulsar.AuthenticationToken(fresh_token))
    try:
        producer = client.create_producer("refreshed")
        deadline = time.monotonic() + 6
        while time.monotonic() < deadline:     # the first token expires after 2 s; the connection stays
            producer.send(b"still here")
            time.sleep(0.5)
        assert len(issued) >= 2, "the broker never asked for fresh credentials"
    finally:
        client.close()
    refused(client_for(broker.service_url, FAIL_TIMEOUT_S,
                       authentication=pulsar.AuthenticationToken(hs256(secret, "carol"))))   # no "role" claim


def test_basic(make_broker, tmp_path):
    apr1 = subprocess.run(["openssl", "passwd", "-apr1", "apr-secret"], capture_output=True, text=True,
                          check=True).stdout.strip()
    crypted = subprocess.run(["openssl", "passwd", "-6", "crypt-secret"], capture_output=True, text=True,
                             check=True).stdout.strip()
    hashed = bcrypt.hashpw(b"bcrypt-secret", bcrypt.gensalt(rounds=4)).decode()
    htpasswd = tmp_path / ".htpasswd"
    htpasswd.write_text(f"apr:{apr1}\ncrypt:{crypted}\nbc:{hashed}\n")
    broker = make_broker({"authenticationEnabled": "true", "authenticationProviders": BASIC,
                          "basicAuthConf": str(htpasswd)})
    for user, password in (("apr", "apr-secret"), ("crypt", "crypt-secret"), ("bc", "bcrypt-secret")):
        round_trip(client_for(broker.service_url, authentication=pulsar.AuthenticationBasic(user, password)),
                   f"basic-{user}")
        assert admin_get(broker, "/admin/v2/tenants", auth=(user, password)).status_code == 200
    refused(client_for(broker.service_url, FAIL_TIMEOUT_S, authentication=pulsar.AuthenticationBasic("apr", "wrong")),
            client_for(broker.service_url, FAIL_TIMEOUT_S, authentication=pulsar.AuthenticationBasic("nobody", "x")))
    assert admin_get(broker, "/admin/v2/tenants", auth=("apr", "wrong")).status_code == 401


def test_tls_client_certificate(make_broker, tmp_path, secret):
    ca = CertificateAuthority(tmp_path)
    server = ca.issue("server", server=True)
    port = free_port()
    web_tls = free_port()
    broker = make_broker({"authenticationEnabled": "true", "authenticationProviders": f"{TLS},{TOKEN}",
                          "tokenSecretKey": base64.b64encode(secret).decode(),
                          "brokerServicePortTls": port, "webServicePortTls": web_tls,
                          "tlsCertificateFilePath": server.cert, "tlsKeyFilePath": server.key,
                          "tlsTrustCertsFilePath": ca.pem.cert})
    dave = ca.issue("dave")
    url = f"pulsar+ssl://{HOST}:{port}"
    round_trip(client_for(url, tls_trust_certs_file_path=str(ca.pem.cert),
                          authentication=pulsar.AuthenticationTLS(str(dave.cert), str(dave.key))), "tls-auth")
    refused(client_for(url, FAIL_TIMEOUT_S, tls_trust_certs_file_path=str(ca.pem.cert)))
    https = f"https://{HOST}:{web_tls}/admin/v2/tenants"
    assert requests.get(https, verify=str(ca.pem.cert), timeout=10).status_code == 401
    assert requests.get(https, verify=str(ca.pem.cert), cert=(str(dave.cert), str(dave.key)), timeout=10).status_code == 200
    # the token provider beside it, on the plain port
    round_trip(client_for(broker.service_url, authentication=pulsar.AuthenticationToken(hs256(secret, "erin"))),
               "token-beside-tls")


def test_pulsard_tokens_and_admin_cli_credentials(make_broker, tmp_path):
    """Keys and tokens from `pulsard tokens`, used by the client and by `pulsard admin` over https."""
    secret_file, public_file, private_file = tmp_path / "secret.key", tmp_path / "public.key", tmp_path / "private.key"
    assert pulsard("tokens", "create-secret-key", "--output", str(secret_file)).returncode == 0
    assert pulsard("tokens", "create-key-pair", "--output-private-key", str(private_file),
                   "--output-public-key", str(public_file)).returncode == 0
    token = pulsard("tokens", "create", "--private-key", f"file://{private_file}", "--subject", "frank",
                    "--expiry-time", "1h").stdout.strip()
    assert '"sub": "frank"' in pulsard("tokens", "show", token).stdout
    assert pulsard("tokens", "validate", "--public-key", f"file://{public_file}", token).returncode == 0
    assert pulsard("tokens", "validate", "--secret-key", f"file://{secret_file}", token).returncode == 1

    ca = CertificateAuthority(tmp_path)
    server = ca.issue("server", server=True)
    web_tls = free_port()
    broker = make_broker({"authenticationEnabled": "true", "authenticationProviders": f"{TOKEN},{TLS}",
                          "tokenPublicKey": f"file://{public_file}", "webServicePortTls": web_tls,
                          "tlsCertificateFilePath": server.cert, "tlsKeyFilePath": server.key,
                          "tlsTrustCertsFilePath": ca.pem.cert})
    round_trip(client_for(broker.service_url, authentication=pulsar.AuthenticationToken(token)), "cli-token")
    https = f"https://{HOST}:{web_tls}"
    trust = ["--tls-trust-cert-path", str(ca.pem.cert)]
    listed = pulsard("admin", "--admin-url", https, *trust, "--auth-plugin",
                     "org.apache.pulsar.client.impl.auth.AuthenticationToken", "--auth-params", f"token:{token}",
                     "tenants", "list")
    assert listed.returncode == 0 and "public" in listed.stdout.split(), listed.stderr
    assert pulsard("admin", "--admin-url", broker.web_url, "--token", token, "tenants", "list").returncode == 0
    refused_call = pulsard("admin", "--admin-url", https, *trust, "tenants", "list")
    assert refused_call.returncode == 1 and "401" in refused_call.stderr
    grace = ca.issue("grace")
    with_cert = pulsard("admin", "--admin-url", https, *trust, "--auth-plugin",
                        "org.apache.pulsar.client.impl.auth.AuthenticationTls",
                        "--auth-params", f"tlsCertFile:{grace.cert},tlsKeyFile:{grace.key}", "tenants", "list")
    assert with_cert.returncode == 0, with_cert.stderr


def test_java_client_token_and_certificate_over_tls(make_broker, tmp_path, secret, java_command):
    """The official Java client: AuthenticationToken and AuthenticationTls over pulsar+ssl://,
    a wrong token refused, and authorization's refusal of a role without permission."""
    ca = CertificateAuthority(tmp_path)
    server = ca.issue("server", server=True)
    port = free_port()
    make_broker({"authenticationEnabled": "true", "authenticationProviders": f"{TOKEN},{TLS}",
                 "tokenSecretKey": base64.b64encode(secret).decode(), "brokerServicePortTls": port,
                 "tlsCertificateFilePath": server.cert, "tlsKeyFilePath": server.key,
                 "tlsTrustCertsFilePath": ca.pem.cert, "authorizationEnabled": "true",
                 "superUserRoles": "java-admin,java-cert"})
    cert = ca.issue("java-cert")
    plugins = "org.apache.pulsar.client.impl.auth."
    cases = [("token", plugins + "AuthenticationToken", "token:" + hs256(secret, "java-admin"), "java-token"),
             ("cert", plugins + "AuthenticationTls", f"tlsCertFile:{cert.cert},tlsKeyFile:{cert.key}", "java-cert"),
             ("wrong-token", plugins + "AuthenticationToken", "token:" + hs256(b"z" * 32, "java-admin"), "java-w"),
             ("no-permission", plugins + "AuthenticationToken", "token:" + hs256(secret, "nobody"), "java-n")]
    done = subprocess.run([*java_command, "pulsard.compat.SecurityClient", f"pulsar+ssl://{HOST}:{port}",
                           str(ca.pem.cert), *[part for case in cases for part in case]],
                          capture_output=True, text=True, timeout=180)
    outcomes = dict(line.split(" ", 2)[1:] for line in done.stdout.splitlines() if line.startswith("OUTCOME "))
    assert outcomes.get("token") == "ok", done.stdout + done.stderr[-3000:]
    assert outcomes.get("cert") == "ok", done.stdout
    assert outcomes.get("wrong-token", "").startswith("AuthenticationException"), done.stdout
    assert outcomes.get("no-permission", "").startswith("AuthorizationException"), done.stdout


@pytest.mark.parametrize("scenario", go_scenarios("TestSecured"))
def test_go_client_token_basic_and_certificate_over_tls(scenario, make_broker, tmp_path, secret, go_binaries):
    """The official Go client over pulsar+ssl:// with a token, basic credentials and a client
    certificate (compat_tests/go/secured_test.go), a wrong token and wrong basic refused."""
    ca = CertificateAuthority(tmp_path)
    server, client_cert = ca.issue("server", server=True), ca.issue("gopher")
    hashed = bcrypt.hashpw(b"go-secret", bcrypt.gensalt(rounds=4)).decode()
    htpasswd = tmp_path / ".htpasswd"
    htpasswd.write_text(f"gopher:{hashed}\n")
    port = free_port()
    make_broker({"authenticationEnabled": "true", "authenticationProviders": f"{TOKEN},{BASIC},{TLS}",
                 "tokenSecretKey": base64.b64encode(secret).decode(), "basicAuthConf": str(htpasswd),
                 "brokerServicePortTls": port, "tlsCertificateFilePath": server.cert,
                 "tlsKeyFilePath": server.key, "tlsTrustCertsFilePath": ca.pem.cert})
    env = {**os.environ, "PULSAR_SECURED_SERVICE_URL": f"pulsar+ssl://{HOST}:{port}",
           "PULSAR_CA_FILE": str(ca.pem.cert), "PULSAR_TOKEN": hs256(secret, "gopher"),
           "PULSAR_BASIC_USER": "gopher", "PULSAR_BASIC_PASSWORD": "go-secret",
           "PULSAR_CLIENT_CERT": str(client_cert.cert), "PULSAR_CLIENT_KEY": str(client_cert.key)}
    go_binary = go_binaries[0]
    done = subprocess.run([str(go_binary), "-test.run", f"^{scenario}$", "-test.v", "-test.count=1",
                           "-test.timeout=60s"], cwd=go_binary.parent.parent, env=env,
                          capture_output=True, text=True, timeout=90)
    assert done.returncode == 0 and f"--- PASS: {scenario}" in done.stdout, f"{done.stdout}\n{done.stderr[-3000:]}"


def apr1(password: str) -> str:
    return subprocess.run(["openssl", "passwd", "-apr1", password], capture_output=True, text=True,
                          check=True).stdout.strip()


def connect_command(method: str, data: bytes, refreshable: bool = False) -> pb.CommandConnect:
    connect = pb.CommandConnect(client_version="compat", protocol_version=21, auth_method_name=method,
                                auth_data=data)
    connect.feature_flags.supports_auth_refresh = refreshable
    return connect


def assert_refused(raw: RawConnection, answer: Cmd | None) -> None:
    """Apache Pulsar 3.0.7's refusal of credentials, whatever the reason: ERROR(request_id -1,
    AuthenticationError, "Failed to authenticate"), then the close."""
    assert answer is not None and answer.type == Cmd.ERROR, answer
    error = answer.error
    assert (error.request_id, error.error, error.message) == (2**64 - 1, pb.AuthenticationError,
                                                             "Failed to authenticate")
    assert raw.receive() is None


def test_refused_connect_answers_as_pulsar(make_broker, secret, tmp_path):
    """Bad credentials at CONNECT, as Pulsar 3.0.7 answers them (checked against it). The reason
    is in one line of the broker's log, not in the answer. The Python client (C++ inside) takes
    any first answer but CONNECTED for a broken connection and retries: TimeOut, on Pulsar too."""
    ca = CertificateAuthority(tmp_path)
    server = ca.issue("server", server=True)
    (tmp_path / ".htpasswd").write_text(f"admin:{apr1('123456')}\n")
    tls_port = free_port()
    broker = make_broker({"authenticationEnabled": "true", "authenticationProviders": f"{TOKEN},{BASIC},{TLS}",
                          "tokenSecretKey": base64.b64encode(secret).decode(),
                          "basicAuthConf": str(tmp_path / ".htpasswd"), "brokerServicePortTls": tls_port,
                          "tlsCertificateFilePath": server.cert, "tlsKeyFilePath": server.key,
                          "tlsTrustCertsFilePath": ca.pem.cert})
    without_certificate = ssl.create_default_context(cafile=str(ca.pem.cert))
    cases = [("token", hs256(b"another key" * 3, "alice").encode(), None),
             ("token", hs256(secret, "alice", expires_in=-10).encode(), None),
             ("none", b"", None),
             ("basic", b"admin:wrong", None),
             ("tls", b"", without_certificate)]
    for method, data, tls in cases:
        with RawConnection(tls_port if tls else broker.broker_port, tls) as raw:
            assert_refused(raw, raw.connect(connect_command(method, data)))
    client = client_for(broker.service_url, FAIL_TIMEOUT_S,
                        authentication=pulsar.AuthenticationToken(hs256(b"another key" * 3, "alice")))
    try:
        with pytest.raises(pulsar.Timeout):
            client.create_producer("refused")
    finally:
        client.close()
    log = broker.log_tail()
    assert log.count("authentication failed") >= len(cases) + 1 and "Traceback" not in log


def test_refused_refresh_answers_as_pulsar(make_broker, secret):
    """Fresh credentials that fail at an AUTH_CHALLENGE get the same answer as at CONNECT."""
    broker = make_broker({"authenticationEnabled": "true", "authenticationProviders": TOKEN,
                          "tokenSecretKey": base64.b64encode(secret).decode(),
                          "authenticationRefreshCheckSeconds": 1})
    with RawConnection(broker.broker_port) as raw:
        token = hs256(secret, "alice", expires_in=1).encode()
        assert raw.connect(connect_command("token", token, refreshable=True)).type == Cmd.CONNECTED
        while (challenge := raw.receive()) is not None and challenge.type == Cmd.PING:
            raw.send(Cmd(type=Cmd.PONG, pong=pb.CommandPong()))
        assert challenge is not None and challenge.type == Cmd.AUTH_CHALLENGE, challenge
        wrong = pb.AuthData(auth_method_name="token", auth_data=hs256(b"another key" * 3, "alice").encode())
        raw.send(Cmd(type=Cmd.AUTH_RESPONSE, authResponse=pb.CommandAuthResponse(
            response=wrong, protocol_version=challenge.authChallenge.protocol_version)))
        assert_refused(raw, raw.receive())
    assert "Traceback" not in broker.log_tail()


def test_unknown_method_connects_as_anonymous(make_broker, tmp_path, secret):
    """pulsar-client-python's own test_basic_auth_method on its CI broker's setup
    (tests/test-conf/standalone-ssl.conf; the private/auth namespace of
    build-support/start-test-service-inside-container.sh). Lookups go over HTTP with the Basic
    header; on the binary protocol, a method no provider serves connects as anonymousUserRole
    (Pulsar's ServerCnx), which may not use private/auth: AuthorizationError, as on Pulsar."""
    ca = CertificateAuthority(tmp_path)
    server = ca.issue("server", server=True)
    (tmp_path / ".htpasswd").write_text(f"admin:{apr1('123456')}\n")
    broker = make_broker({"brokerServicePortTls": free_port(), "webServicePortTls": free_port(),
                          "tlsCertificateFilePath": server.cert, "tlsKeyFilePath": server.key,
                          "tlsTrustCertsFilePath": ca.pem.cert, "tlsAllowInsecureConnection": "false",
                          "anonymousUserRole": "anonymous", "authenticationEnabled": "true",
                          "authenticationProviders": f"{TLS},{TOKEN},{BASIC}",
                          "tokenSecretKey": base64.b64encode(secret).decode(),
                          "basicAuthConf": str(tmp_path / ".htpasswd"), "authorizationEnabled": "true",
                          "superUserRoles": "localhost,superUser,admin",
                          # as there: else Pulsar's own reader of topic policies is anonymous, refused
                          "topicLevelPoliciesEnabled": "false"})
    super_user = {"Authorization": "Bearer " + hs256(secret, "superUser")}
    requests.put(f"{broker.web_url}/admin/v2/clusters/standalone", headers=super_user, timeout=10,
                 json={"serviceUrl": broker.web_url, "brokerServiceUrl": broker.service_url})   # if missing
    for path, body in (("tenants/private", {"adminRoles": [], "allowedClusters": ["standalone"]}),
                       ("namespaces/private/auth", {"auth_policies": {"namespace_auth": {
                           "token-principal": ["produce", "consume"]}}, "replication_clusters": ["standalone"]})):
        done = requests.put(f"{broker.web_url}/admin/v2/{path}", json=body, headers=super_user, timeout=10)
        assert done.status_code == 204, done.text

    def basic_round_trip(topic_id: int, auth: pulsar.AuthenticationBasic) -> None:
        client = pulsar.Client(broker.web_url, authentication=auth)
        try:
            topic = f"persistent://private/auth/my-python-topic-basic-auth-{topic_id}"
            consumer = client.subscribe(topic, "my-sub", consumer_type=pulsar.ConsumerType.Shared)
            client.create_producer(topic).send(b"hello")
            assert consumer.receive(10000).data() == b"hello"
        finally:
            client.close()

    basic_round_trip(2, pulsar.AuthenticationBasic("admin", "123456", "basic"))
    with pytest.raises(pulsar.AuthorizationError):
        basic_round_trip(3, pulsar.AuthenticationBasic("admin", "123456", "unknown"))
    basic_round_trip(4, pulsar.AuthenticationBasic(
        auth_params_string='{"username": "admin","password": "123456", "method": "basic"}'))
    with pytest.raises(pulsar.AuthorizationError):
        basic_round_trip(5, pulsar.AuthenticationBasic(
            auth_params_string='{"username": "admin","password": "123456", "method": "unknown"}'))
