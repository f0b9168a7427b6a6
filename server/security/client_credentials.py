"""Credentials of `pulsard admin`, given as pulsar-admin takes them: --auth-plugin with Pulsar's
client class names and --auth-params in their formats, or --token; --tls-trust-cert-path (and
--tls-allow-insecure) for https admin URLs.

- AuthenticationToken: `token:<jwt>`, `file:///path`, or JSON {"token": ...}
- AuthenticationBasic: JSON {"userId": ..., "password": ...}
- AuthenticationTls: `tlsCertFile:/path,tlsKeyFile:/path`, or that as JSON
"""

from __future__ import annotations

import base64
import json
import ssl
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

CLIENT_PACKAGE = "org.apache.pulsar.client.impl.auth."


@dataclass(frozen=True)
class ClientCredentials:
    headers: dict[str, str] = field(default_factory=dict)
    cert_file: str | None = None
    key_file: str | None = None

    def ssl_context(self, trust_file: str | None, allow_insecure: bool) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=trust_file)
        if allow_insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if self.cert_file:
            context.load_cert_chain(self.cert_file, self.key_file)
        return context


def _params(text: str) -> dict[str, str]:
    """JSON, or Pulsar's `key:value,key:value` form."""
    text = text.strip()
    if text.startswith("{"):
        return json.loads(text)
    pairs = (part.split(":", 1) for part in text.split(",") if part)
    return {key.strip(): value.strip() for key, value in pairs}


def _token(params: str) -> str:
    params = params.strip()
    if params.startswith("token:"):
        return params[len("token:"):]
    if params.startswith("file:"):
        return Path(unquote(urlsplit(params).path)).read_text().strip()
    if params.startswith("{"):
        return json.loads(params)["token"]
    return params


def credentials(plugin: str | None, params: str | None, token: str | None) -> ClientCredentials:
    """ValueError for a plugin or parameters it cannot use."""
    if token:
        return ClientCredentials({"Authorization": f"Bearer {token}"})
    if not plugin:
        return ClientCredentials()
    name = plugin.removeprefix(CLIENT_PACKAGE)
    try:
        if name == "AuthenticationToken":
            return ClientCredentials({"Authorization": f"Bearer {_token(params or '')}"})
        if name == "AuthenticationBasic":
            values = _params(params or "")
            pair = f"{values['userId']}:{values['password']}".encode()
            return ClientCredentials({"Authorization": "Basic " + base64.b64encode(pair).decode()})
        if name == "AuthenticationTls":
            values = _params(params or "")
            return ClientCredentials(cert_file=values["tlsCertFile"], key_file=values["tlsKeyFile"])
    except (KeyError, ValueError, OSError) as exc:
        raise ValueError(f"--auth-params for {name}: {exc}") from None
    raise ValueError(f"--auth-plugin {plugin}: not one of {CLIENT_PACKAGE}AuthenticationToken, "
                     "AuthenticationBasic, AuthenticationTls")
