"""Client credentials as Pulsar's tools take them: --auth-plugin (or client.conf's authPlugin) with
Pulsar's client class names and --auth-params in their formats. Parsed here once, then given to
`pulsard admin` as HTTP headers (and a client certificate) and to `pulsard client` / `pulsard perf`
as the Python client's pulsar.Authentication.

- AuthenticationToken: `token:<jwt>`, `file:///path`, a bare JWT, or JSON {"token": ...}
- AuthenticationBasic: JSON {"userId": ..., "password": ...}, or `userId:...,password:...`
- AuthenticationTls: `tlsCertFile:/path,tlsKeyFile:/path`, or that as JSON
- oauth2.AuthenticationOAuth2: JSON {"issuerUrl": ..., "privateKey": "file:///...", "audience": ...}
  (binary protocol only: the Python client fetches the token)

The class names may be given without their package (AuthenticationToken).
"""

from __future__ import annotations

import base64
import json
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

if TYPE_CHECKING:
    import pulsar

CLIENT_PACKAGE = "org.apache.pulsar.client.impl.auth."
OAUTH2_PLUGIN = CLIENT_PACKAGE + "oauth2.AuthenticationOAuth2"
#: Java's AuthenticationOAuth2 parameter names -> the Python (C++) client's.
OAUTH2_KEYS = {"issuerUrl": "issuer_url", "privateKey": "private_key", "audience": "audience", "scope": "scope"}


@dataclass(frozen=True)
class ClientCredentials:
    token: str | None = None
    basic: tuple[str, str] | None = None
    cert_file: str | None = None
    key_file: str | None = None
    #: AuthenticationOAuth2's parameters, as the Python client's JSON.
    oauth2: str | None = None

    @property
    def headers(self) -> dict[str, str]:
        """ValueError for OAuth2, whose token only the Python client knows how to fetch."""
        if self.oauth2 is not None:
            raise ValueError("AuthenticationOAuth2 is not supported by pulsard admin: pass the token with --token")
        if self.token is not None:
            return {"Authorization": f"Bearer {self.token}"}
        if self.basic is not None:
            return {"Authorization": "Basic " + base64.b64encode(":".join(self.basic).encode()).decode()}
        return {}

    def ssl_context(self, trust_file: str | None, allow_insecure: bool) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=trust_file)
        if allow_insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if self.cert_file:
            context.load_cert_chain(self.cert_file, self.key_file)
        return context

    def pulsar_authentication(self) -> pulsar.Authentication | None:
        """The Python client's Authentication for these credentials; None without any."""
        import pulsar
        if self.token is not None:
            return pulsar.AuthenticationToken(self.token)
        if self.basic is not None:
            return pulsar.AuthenticationBasic(*self.basic)
        if self.cert_file:
            return pulsar.AuthenticationTLS(self.cert_file, self.key_file)
        if self.oauth2 is not None:
            return pulsar.AuthenticationOauth2(self.oauth2)
        return None


def _params(text: str) -> dict[str, str]:
    """JSON, or Pulsar's `key:value,key:value` form."""
    text = text.strip()
    if text.startswith("{"):
        return json.loads(text)
    pairs = (part.partition(":") for part in text.split(",") if part)
    return {key.strip(): value.strip() for key, _, value in pairs}


def _token(params: str) -> str:
    params = params.strip()
    if params.startswith("token:"):
        return params[len("token:"):]
    if params.startswith("file:"):
        return Path(unquote(urlsplit(params).path)).read_text().strip()
    if params.startswith("{"):
        return json.loads(params)["token"]
    return params


def _oauth2(params: str) -> str:
    values = _params(params)
    translated = {OAUTH2_KEYS.get(key, key): value for key, value in values.items() if key != "type"}
    missing = [key for key in ("issuer_url", "private_key") if not translated.get(key)]
    if missing:
        raise ValueError(f"missing {', '.join(missing)} (issuerUrl, privateKey)")
    return json.dumps(translated)


def _plugin_name(plugin: str) -> str:
    return "AuthenticationOAuth2" if plugin == OAUTH2_PLUGIN else plugin.removeprefix(CLIENT_PACKAGE)


def credentials(plugin: str | None, params: str | None, token: str | None = None) -> ClientCredentials:
    """The credentials of a plugin and its parameters (or of a bare token, which wins);
    ValueError, in one line, for a plugin or parameters it cannot use."""
    if token:
        return ClientCredentials(token=token)
    if not plugin:
        return ClientCredentials()
    name, params = _plugin_name(plugin.strip()), params or ""
    try:
        if name == "AuthenticationToken":
            return ClientCredentials(token=_token(params))
        if name == "AuthenticationBasic":
            values = _params(params)
            return ClientCredentials(basic=(values["userId"], values["password"]))
        if name == "AuthenticationTls":
            values = _params(params)
            return ClientCredentials(cert_file=values["tlsCertFile"], key_file=values["tlsKeyFile"])
        if name == "AuthenticationOAuth2":
            return ClientCredentials(oauth2=_oauth2(params))
    except KeyError as exc:
        raise ValueError(f"--auth-params for {name}: missing {exc}") from None
    except (ValueError, OSError) as exc:
        raise ValueError(f"--auth-params for {name}: {exc}") from None
    raise ValueError(f"--auth-plugin {plugin}: not one of {CLIENT_PACKAGE}AuthenticationToken, "
                     f"AuthenticationBasic, AuthenticationTls, or {OAUTH2_PLUGIN}")
