"""Authorization against a real pulsard (token authentication, authorizationEnabled): super
users, tenant admins, namespace, topic and subscription permissions granted and revoked through
the admin API at Pulsar's paths; the Python client and requests."""

from __future__ import annotations

import base64
import secrets
import subprocess

import jwt
import pulsar
import pytest
import requests

from compat_tests.broker import HOST, free_port
from compat_tests.certificates import CertificateAuthority
from compat_tests.toolchains import JAVA

TOKEN = "org.apache.pulsar.broker.authentication.AuthenticationProviderToken"
SECRET = secrets.token_bytes(32)
FAIL_TIMEOUT_S = 3


def token(role: str) -> str:
    return jwt.encode({"sub": role}, SECRET, algorithm="HS256")


class Admin:
    def __init__(self, broker, role: str) -> None:
        self.url, self.headers = broker.web_url, {"Authorization": "Bearer " + token(role)}

    def call(self, method: str, path: str, body=None) -> requests.Response:
        return requests.request(method, self.url + path, json=body, headers=self.headers, timeout=10)


@pytest.fixture
def secured(make_broker):
    return make_broker({"authenticationEnabled": "true", "authenticationProviders": TOKEN,
                        "tokenSecretKey": base64.b64encode(SECRET).decode(),
                        "authorizationEnabled": "true", "superUserRoles": "admin,ops"})


@pytest.fixture
def client_as(secured):
    clients: list[pulsar.Client] = []

    def _client(role: str, timeout: float = 10) -> pulsar.Client:
        clients.append(pulsar.Client(secured.service_url, authentication=pulsar.AuthenticationToken(token(role)),
                                     operation_timeout_seconds=timeout,
                                     logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)))
        return clients[-1]

    yield _client
    for client in clients:
        client.close()


def refused(action) -> None:
    with pytest.raises(pulsar.PulsarException):
        action()


def test_namespace_and_topic_permissions_granted_and_revoked(secured, client_as):
    admin, alice = Admin(secured, "admin"), Admin(secured, "alice")
    topic = "persistent://public/default/guarded"
    assert alice.call("GET", "/admin/v2/namespaces/public/default/permissions").status_code == 403
    refused(lambda: client_as("alice", FAIL_TIMEOUT_S).create_producer(topic))

    assert admin.call("POST", "/admin/v2/namespaces/public/default/permissions/alice", ["produce"]).status_code == 204
    assert admin.call("GET", "/admin/v2/namespaces/public/default/permissions").json() == {"alice": ["produce"]}
    client = client_as("alice")
    client.create_producer(topic).send(b"allowed")
    refused(lambda: client_as("alice", FAIL_TIMEOUT_S).subscribe(topic, "sub"))   # produce only

    assert admin.call("POST", "/admin/v2/persistent/public/default/guarded/permissions/alice",
                      ["consume"]).status_code == 204
    assert admin.call("GET", "/admin/v2/persistent/public/default/guarded/permissions").json() == {
        "alice": ["consume", "produce"]}
    consumer = client.subscribe(topic, "sub", initial_position=pulsar.InitialPosition.Earliest)
    assert consumer.receive(timeout_millis=10000).data() == b"allowed"
    assert alice.call("GET", "/lookup/v2/topic/persistent/public/default/guarded").status_code == 200

    assert admin.call("DELETE", "/admin/v2/namespaces/public/default/permissions/alice").status_code == 204
    assert admin.call("DELETE", "/admin/v2/persistent/public/default/guarded/permissions/alice").status_code == 204
    assert admin.call("DELETE", "/admin/v2/persistent/public/default/guarded/permissions/alice").status_code == 412
    refused(lambda: client.create_producer(topic))          # the revoked role's next request
    refused(lambda: client.subscribe(topic, "sub-2"))
    assert alice.call("GET", "/lookup/v2/topic/persistent/public/default/guarded").status_code == 403
    metrics = requests.get(secured.web_url + "/metrics", timeout=10).text
    assert 'pulsard_authorization_failures_total{operation="lookup"' in metrics
    assert 'pulsard_authorization_failures_total{operation="admin GET"' in metrics
    assert "unauthorized: role 'alice' may not lookup on persistent://public/default/guarded" in secured.log_tail()


def test_tenant_admin_and_super_user(secured, client_as):
    admin, bob = Admin(secured, "ops"), Admin(secured, "bob")
    assert bob.call("PUT", "/admin/v2/tenants/acme", {"adminRoles": ["bob"], "allowedClusters": ["standalone"]}
                    ).status_code == 403
    assert admin.call("PUT", "/admin/v2/tenants/acme", {"adminRoles": ["bob"], "allowedClusters": ["standalone"]}
                      ).status_code == 204
    assert bob.call("GET", "/admin/v2/tenants/acme").status_code == 200
    assert bob.call("PUT", "/admin/v2/namespaces/acme/ns").status_code == 204
    assert bob.call("GET", "/admin/v2/namespaces/acme").json() == ["acme/ns"]
    assert bob.call("GET", "/admin/v2/namespaces/public").status_code == 403
    assert bob.call("GET", "/admin/v2/clusters").status_code == 403
    assert bob.call("DELETE", "/admin/v2/tenants/acme").status_code == 403
    assert Admin(secured, "nobody").call("GET", "/admin/v2/tenants/acme").status_code == 403
    assert requests.get(secured.web_url + "/admin/v2/tenants/acme", timeout=10).status_code == 401
    client = client_as("bob")
    consumer = client.subscribe("persistent://acme/ns/t", "s")
    client.create_producer("persistent://acme/ns/t").send(b"tenant admin")
    assert consumer.receive(timeout_millis=10000).data() == b"tenant admin"
    refused(lambda: client_as("bob", FAIL_TIMEOUT_S).create_producer("persistent://public/default/not-bobs"))


def test_subscription_permission(secured, client_as):
    admin = Admin(secured, "admin")
    for role in ("alice", "carol"):
        admin.call("POST", f"/admin/v2/namespaces/public/default/permissions/{role}", ["consume"])
    assert admin.call("POST", "/admin/v2/namespaces/public/default/permissions/subscription/only-carol",
                      ["carol"]).status_code == 204
    assert admin.call("GET", "/admin/v2/namespaces/public/default/permissions/subscription").json() == {
        "only-carol": ["carol"]}
    shared = {"consumer_type": pulsar.ConsumerType.Shared}
    client_as("carol").subscribe("sub-guarded", "only-carol", **shared)
    refused(lambda: client_as("alice", FAIL_TIMEOUT_S).subscribe("sub-guarded", "only-carol", **shared))
    client_as("alice").subscribe("sub-guarded", "anyone", **shared)
    assert admin.call("DELETE", "/admin/v2/namespaces/public/default/permissions/only-carol/carol").status_code == 204
    client_as("alice").subscribe("sub-guarded", "only-carol", **shared)   # no role list left: open again


def test_http_service_url_client_with_permissions(secured):
    """A client on the web port (HTTP lookups, partitions) needs the same permissions."""
    admin = Admin(secured, "admin")
    http_client = pulsar.Client(secured.web_url, authentication=pulsar.AuthenticationToken(token("henry")),
                                operation_timeout_seconds=FAIL_TIMEOUT_S,
                                logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        refused(lambda: http_client.create_producer("over-http"))
        admin.call("POST", "/admin/v2/namespaces/public/default/permissions/henry", ["produce"])
        http_client.create_producer("over-http").send(b"via http lookup")
    finally:
        http_client.close()


@pytest.mark.timeout(150)
def test_java_admin_client_over_https_with_a_token(make_broker, tmp_path, admin_java_classpath):
    ca = CertificateAuthority(tmp_path)
    server = ca.issue("server", server=True)
    web_tls = free_port()
    make_broker({"authenticationEnabled": "true", "authenticationProviders": TOKEN,
                 "tokenSecretKey": base64.b64encode(SECRET).decode(), "authorizationEnabled": "true",
                 "superUserRoles": "admin", "webServicePortTls": web_tls,
                 "tlsCertificateFilePath": server.cert, "tlsKeyFilePath": server.key})
    run = subprocess.run([*JAVA, "-cp", admin_java_classpath, "pulsard.SecureAdminDriver",
                          f"https://{HOST}:{web_tls}", str(ca.pem.cert), token("admin"), token("ivy"), "ivy"],
                         capture_output=True, text=True, timeout=90)
    assert run.returncode == 0, run.stdout + run.stderr[-5000:]
    assert run.stdout.splitlines() == [
        "namespace [produce]", "topic [produce, consume]", "subscription [ivy]",
        "user refused 403", "anonymous refused 401", "revoked null"]
