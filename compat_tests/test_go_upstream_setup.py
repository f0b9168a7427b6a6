"""The set-up step of compat_tests/go_upstream/run.py, without the Go suite (which takes ~15 min).

The Go client's CI broker (its standalone.conf with the module's certificates, tokens and
htpasswd; the permissions its start script grants) must come up under pulsard and serve what the
suite's TLS and authentication tests use: pulsar+ssl with a token, basic auth over HTTP, a
super user's TLS certificate on the https port, and authorization (anonymous may not produce on
private/auth).
"""

from __future__ import annotations

import base64
import shutil
import urllib.error
import urllib.request

import pulsar
import pytest

from compat_tests.go_upstream.service import IMAGE_PATHS, SuperUserAdmin, broker_config, grant_permissions, module_dir
from server.testing.broker_process import free_ports


@pytest.fixture
def module_copy(go_binaries, tmp_path):
    """The files the broker reads, copied as the runner copies the whole module (which the
    build of compat_tests/go, a user of the same client version, has put in the module cache)."""
    root = tmp_path / "pulsar-client-go"
    shutil.copytree(module_dir() / "integration-tests", root / "integration-tests")
    return root


def test_the_ci_conf_is_applied_with_local_files(module_copy):
    config = broker_config(module_copy, {})
    assert not [v for v in config.values() if any(image in str(v) for image in IMAGE_PATHS)]
    assert config["tokenSecretKey"] == f"file://{module_copy}/integration-tests/tokens/secret.key"
    assert config["basicAuthConf"] == f"{module_copy}/integration-tests/conf/.htpasswd"
    assert config["tlsCertificateFilePath"] == f"{module_copy}/integration-tests/certs/broker-cert.pem"
    assert config["authorizationEnabled"] == "true"
    assert config["superUserRoles"] == "localhost,superUser,admin"


def test_the_ci_broker_serves_tls_and_authentication(module_copy, make_broker):
    tls_port, web_tls_port = free_ports(2)
    broker = make_broker(broker_config(module_copy, {
        "bindAddress": "127.0.0.1", "brokerServicePortTls": tls_port, "webServicePortTls": web_tls_port}))
    admin = SuperUserAdmin(module_copy, web_tls_port)
    grant_permissions(admin)
    assert admin.healthy()

    files = module_copy / "integration-tests"
    token = (files / "tokens" / "token.txt").read_text().strip()
    client = pulsar.Client(f"pulsar+ssl://localhost:{tls_port}", operation_timeout_seconds=10,
                           tls_trust_certs_file_path=str(files / "certs" / "cacert.pem"),
                           tls_validate_hostname=True, authentication=pulsar.AuthenticationToken(token),
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    anonymous = pulsar.Client(broker.service_url, operation_timeout_seconds=10,
                              logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    try:
        client.create_producer("persistent://private/auth/setup-check").send(b"granted to token-principal")
        anonymous.create_producer("persistent://public/default/setup-check").send(b"granted to anonymous")
        with pytest.raises(pulsar.AuthorizationError):
            anonymous.create_producer("persistent://private/auth/setup-check")
    finally:
        client.close()
        anonymous.close()

    basic = urllib.request.Request(f"{broker.web_url}/admin/v2/tenants/private", headers={
        "Authorization": "Basic " + base64.b64encode(b"admin:123456").decode()})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(basic, timeout=10) as response:
        assert response.status == 200
    with pytest.raises(urllib.error.HTTPError) as refused:
        opener.open(f"{broker.web_url}/admin/v2/tenants/private", timeout=10)
    assert refused.value.code == 403
