import ssl

import pytest

from compat_tests.certificates import CertificateAuthority
from server.config import BrokerConfig
from server.security.config import SecurityConfig
from server.security.tls import ReloadingTls, build_context, peer_common_name


@pytest.fixture
def files(tmp_path):
    ca = CertificateAuthority(tmp_path)
    server = ca.issue("server", server=True)
    return SecurityConfig(tls_certificate_file_path=str(server.cert), tls_key_file_path=str(server.key),
                          tls_trust_certs_file_path=str(ca.pem.cert))


def test_protocols_ciphers_and_client_certificates(files):
    from dataclasses import replace
    context = build_context(replace(files, tls_protocols="TLSv1.3, TLSv1.2", tls_ciphers="ECDHE-ECDSA-AES128-GCM-SHA256"))
    assert (context.minimum_version, context.maximum_version) == (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3)
    assert context.verify_mode == ssl.CERT_OPTIONAL
    assert build_context(replace(files, tls_require_trusted_client_cert_on_connect=True)).verify_mode == ssl.CERT_REQUIRED
    assert build_context(replace(files, tls_allow_insecure_connection=True)).verify_mode == ssl.CERT_NONE
    with pytest.raises(ValueError, match="tlsProtocols"):
        build_context(replace(files, tls_protocols="SSLv3"))
    with pytest.raises(ValueError, match="tlsCiphers"):
        build_context(replace(files, tls_ciphers="NOPE"))
    with pytest.raises(ValueError, match="tlsCertificateFilePath"):
        build_context(replace(files, tls_key_file_path="/nonexistent"))
    with pytest.raises(ValueError, match="tlsCertificateFilePath"):
        ReloadingTls(SecurityConfig())


def test_reload_only_after_the_period_and_a_change(files, tmp_path):
    now = [0.0]
    tls = ReloadingTls(files, clock=lambda: now[0])
    first = tls.current()
    now[0] = 1000
    assert tls.current() is first            # nothing changed
    ca = CertificateAuthority(tmp_path, "second")
    renewed = ca.issue("server2", server=True)
    with open(files.tls_certificate_file_path, "wb") as out:
        out.write(renewed.cert.read_bytes())
    with open(files.tls_key_file_path, "wb") as out:
        out.write(renewed.key.read_bytes())
    assert tls.current() is first            # not yet time to look
    now[0] = 2000
    assert tls.current() is not first


def test_common_name_and_ports_config():
    assert peer_common_name({"subject": ((("countryName", "NL"),), (("commonName", "alice"),))}) == "alice"
    assert peer_common_name(None) is None
    config = BrokerConfig().with_settings({"brokerServicePort": "", "brokerServicePortTls": "6651"})
    assert config.broker_service_port == 0
    assert config.service_url_tls == "pulsar+ssl://127.0.0.1:6651"
    assert BrokerConfig().service_url_tls is None
