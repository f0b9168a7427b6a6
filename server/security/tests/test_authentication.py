import asyncio
import base64
import subprocess
import time

import jwt
import pytest

from server.errors import AuthenticationError
from server.security.authentication import Authentication
from server.security.client_credentials import credentials
from server.security.config import SecurityConfig
from server.security.keys import read_setting
from server.security.tokens_cli import parse_relative_time

TOKEN = "org.apache.pulsar.broker.authentication.AuthenticationProviderToken"
BASIC = "org.apache.pulsar.broker.authentication.AuthenticationProviderBasic"
KEY = b"k" * 32


def run(coro):
    return asyncio.run(coro)


def test_key_forms(tmp_path, monkeypatch):
    encoded = base64.b64encode(KEY).decode()
    (tmp_path / "raw").write_bytes(KEY)
    monkeypatch.setenv("PULSAR_KEY", encoded)
    for form in (f"data:;base64,{encoded}", f"file://{tmp_path / 'raw'}", "env:PULSAR_KEY", encoded,
                 str(tmp_path / "raw")):
        assert read_setting(form, "tokenSecretKey") == KEY
    with pytest.raises(ValueError, match="tokenSecretKey"):
        read_setting("env:NOT_SET_ANYWHERE", "tokenSecretKey")


def test_token_provider_roles_expiry_and_audience():
    config = SecurityConfig(authentication_enabled=True, authentication_providers=TOKEN,
                            token_secret_key=base64.b64encode(KEY).decode(), token_audience="pulsar")
    auth = Authentication(config)
    expires = int(time.time()) + 60
    identity = run(auth.authenticate("token", jwt.encode({"sub": "a", "aud": "pulsar", "exp": expires}, KEY).encode(),
                                     None))
    assert (identity.role, identity.expires_at) == ("a", expires)
    for bad in (jwt.encode({"sub": "a", "aud": "other"}, KEY), jwt.encode({"sub": "a", "aud": "pulsar", "exp": 1}, KEY),
                jwt.encode({"aud": "pulsar"}, KEY), "not a token"):
        with pytest.raises(AuthenticationError):
            run(auth.authenticate("token", bad.encode(), None))
    with pytest.raises(AuthenticationError):
        run(auth.authenticate("basic", b"u:p", None))
    assert auth.audit.authentications[("token", "failure")] == 4
    assert run(auth.authenticate_http("Bearer " + jwt.encode({"sub": "h", "aud": "pulsar"}, KEY), None)).role == "h"


def test_basic_provider_reads_htpasswd(tmp_path):
    apr1 = subprocess.run(["openssl", "passwd", "-apr1", "pw"], capture_output=True, text=True).stdout.strip()
    (tmp_path / "users").write_text(f"# comment\nu:{apr1}\n")
    auth = Authentication(SecurityConfig(authentication_enabled=True, authentication_providers=BASIC,
                                         basic_auth_conf=str(tmp_path / "users")))
    assert run(auth.authenticate_http("Basic " + base64.b64encode(b"u:pw").decode(), None)).role == "u"
    with pytest.raises(AuthenticationError, match="Not matching password"):
        run(auth.authenticate("basic", b"u:nope", None))
    with pytest.raises(AuthenticationError, match="User not exist"):
        run(auth.authenticate("basic", b"v:pw", None))


def test_configuration_errors():
    with pytest.raises(ValueError, match="authenticationProviders"):
        Authentication(SecurityConfig(authentication_enabled=True, authentication_providers="com.example.Custom"))
    with pytest.raises(ValueError, match="tokenSecretKey or tokenPublicKey"):
        Authentication(SecurityConfig(authentication_enabled=True, authentication_providers=TOKEN))
    with pytest.raises(ValueError, match="authorizationEnabled"):
        Authentication(SecurityConfig(authorization_enabled=True))
    anonymous = Authentication(SecurityConfig(authentication_enabled=True, authentication_providers=TOKEN,
                                              token_secret_key=base64.b64encode(KEY).decode(),
                                              anonymous_user_role="guest"))
    assert run(anonymous.authenticate_http(None, None)).role == "guest"
    # As Pulsar: any method without a provider, not only "none", is the anonymous role
    assert run(anonymous.authenticate("unknown", b"admin:123456", None)).role == "guest"


def test_admin_client_credentials_in_pulsar_formats():
    prefix = "org.apache.pulsar.client.impl.auth."
    assert credentials(prefix + "AuthenticationToken", "token:abc", None).headers == {"Authorization": "Bearer abc"}
    assert credentials(None, None, "xyz").headers == {"Authorization": "Bearer xyz"}
    basic = credentials(prefix + "AuthenticationBasic", '{"userId": "u", "password": "p"}', None)
    assert basic.headers == {"Authorization": "Basic " + base64.b64encode(b"u:p").decode()}
    tls = credentials(prefix + "AuthenticationTls", "tlsCertFile:/c.pem,tlsKeyFile:/k.pem", None)
    assert (tls.cert_file, tls.key_file) == ("/c.pem", "/k.pem")
    with pytest.raises(ValueError):
        credentials(prefix + "AuthenticationSasl", "", None)
    with pytest.raises(ValueError):
        credentials(prefix + "AuthenticationBasic", '{"userId": "u"}', None)


def test_relative_times():
    assert [parse_relative_time(t) for t in ("30", "30s", "2m", "1h", "1d", "1w", "1y")] == [
        30, 30, 120, 3600, 86400, 604800, 31536000]
    with pytest.raises(ValueError):
        parse_relative_time("1 hour")
