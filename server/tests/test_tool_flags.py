"""`pulsard client` and `pulsard perf` flag parsing, without a broker."""

import json

import pulsar
import pytest

from server.admin.client_conf import ClientConf, load_client_conf
from server.cli import _parser
from server.security.client_credentials import CLIENT_PACKAGE as PLUGINS, credentials
from server.tools.connection import connection
from server.tools.client_cli import _properties
from server.tools.perf import percentiles


def test_client_produce_flags():
    args = _parser().parse_args(["client", "--url", "pulsar://h:1", "produce", "t", "-m", "a", "-m", "b", "-f", "x.bin",
                                 "-n", "3", "-k", "key", "-p", "a=1", "--properties", "b=2=3"])
    assert (args.url, args.topic, args.messages, args.files, args.num_produce, args.key) == (
        "pulsar://h:1", "t", ["a", "b"], ["x.bin"], 3, "key")
    assert _properties(args.properties) == {"a": "1", "b": "2=3"}
    with pytest.raises(ValueError):
        _properties(["novalue"])


def test_client_consume_flags():
    args = _parser().parse_args(["client", "consume", "t", "-s", "sub", "-t", "Key_Shared", "-p", "Earliest", "-n", "0"])
    assert (args.subscription_name, args.subscription_type, args.subscription_position, args.num_messages) == (
        "sub", "Key_Shared", "Earliest", 0)
    with pytest.raises(SystemExit):
        _parser().parse_args(["client", "consume", "t", "-s", "sub", "-t", "Sometimes"])


def test_perf_flags_and_percentiles():
    args = _parser().parse_args(["perf", "produce", "t", "-r", "500", "-s", "128", "-n", "1000", "--time", "10"])
    assert (args.rate, args.size, args.num_messages, args.time) == (500, 128, 1000, 10)
    assert percentiles([]) == "-"
    assert percentiles([float(n) for n in range(1, 101)]) == "p50=51.00 p95=96.00 p99=100.00 p99.9=100.00 max=100.00"


def _connection(argv: list[str], conf: ClientConf = ClientConf()):
    return connection(_parser(argv[0]).parse_args(argv), conf)


def test_connection_flags_default_to_client_conf_and_win_over_it():
    conf = ClientConf(broker_service_url="pulsar+ssl://conf:6651", auth_plugin=PLUGINS + "AuthenticationToken",
                      auth_params="token:from-conf", tls_trust_certs_file_path="/conf/ca.pem",
                      tls_allow_insecure_connection=True)
    from_conf = _connection(["client", "produce", "t"], conf)
    assert (from_conf.service_url, from_conf.credentials.token, from_conf.tls_trust_certs_file_path) == (
        "pulsar+ssl://conf:6651", "from-conf", "/conf/ca.pem")
    assert (from_conf.tls_allow_insecure_connection, from_conf.tls_enable_hostname_verification) == (True, False)
    flags = _connection(["client", "--url", "pulsar://flag:1", "--auth-params", "token:from-flag",
                         "--tls-trust-cert-path", "/flag/ca.pem", "--no-tls-allow-insecure",
                         "--tls-enable-hostname-verification", "consume", "t", "-s", "s"], conf)
    assert (flags.service_url, flags.credentials.token, flags.tls_trust_certs_file_path) == (
        "pulsar://flag:1", "from-flag", "/flag/ca.pem")
    assert (flags.tls_allow_insecure_connection, flags.tls_enable_hostname_verification) == (False, True)
    other_plugin = _connection(["client", "--auth-plugin", "AuthenticationTls", "--auth-params",
                                "tlsCertFile:/c.pem,tlsKeyFile:/k.pem", "produce", "t"], conf)
    assert (other_plugin.credentials.token, other_plugin.credentials.cert_file) == (None, "/c.pem")


def test_perf_takes_pulsar_perf_names_before_or_after_the_command():
    before = _connection(["perf", "--url", "pulsar://before:1", "--auth-plugin", "AuthenticationToken",
                          "--auth-params", "token:t", "consume", "t"])
    assert (before.service_url, before.credentials.token) == ("pulsar://before:1", "t")
    after = _connection(["perf", "--url", "pulsar://before:1", "produce", "t", "-u", "pulsar://after:2",
                         "--service-url", "pulsar://after:3", "--trust-cert-file", "/ca.pem", "--tls-allow-insecure"])
    assert (after.service_url, after.tls_trust_certs_file_path, after.tls_allow_insecure_connection) == (
        "pulsar://after:3", "/ca.pem", True)


def test_client_conf_tls_switches(tmp_path):
    conf = tmp_path / "client.conf"
    conf.write_text("tlsAllowInsecureConnection=TRUE\ntlsEnableHostnameVerification=yes\n")
    loaded = load_client_conf({"PULSAR_CLIENT_CONF": str(conf)})
    assert (loaded.tls_allow_insecure_connection, loaded.tls_enable_hostname_verification) == (True, False)


def test_plugins_become_the_python_clients_authentication(tmp_path):
    token_file = tmp_path / "token.txt"
    token_file.write_text("jwt-from-file\n")
    assert credentials("AuthenticationToken", f"file://{token_file}").token == "jwt-from-file"
    assert credentials(PLUGINS + "AuthenticationBasic", "userId:u,password:p").basic == ("u", "p")
    oauth2 = credentials(PLUGINS + "oauth2.AuthenticationOAuth2",
                         '{"type": "client_credentials", "issuerUrl": "https://idp.example", '
                         '"privateKey": "file:///creds.json", "audience": "urn:pulsar"}')
    assert json.loads(oauth2.oauth2) == {"issuer_url": "https://idp.example", "private_key": "file:///creds.json",
                                         "audience": "urn:pulsar"}
    with pytest.raises(ValueError, match="pulsard admin"):
        oauth2.headers
    assert isinstance(credentials("AuthenticationToken", "token:abc").pulsar_authentication(), pulsar.AuthenticationToken)
    assert isinstance(credentials("AuthenticationBasic", '{"userId": "u", "password": "p"}').pulsar_authentication(),
                      pulsar.AuthenticationBasic)
    assert isinstance(credentials("AuthenticationTls", "tlsCertFile:/c,tlsKeyFile:/k").pulsar_authentication(),
                      pulsar.AuthenticationTLS)
    assert credentials(None, None).pulsar_authentication() is None
    with pytest.raises(ValueError, match="missing issuer_url"):
        credentials(PLUGINS + "oauth2.AuthenticationOAuth2", '{"privateKey": "file:///c.json"}')
