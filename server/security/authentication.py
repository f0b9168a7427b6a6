"""Who a client is: the configured providers (Pulsar's `authenticationProviders` class names),
tried by the method name a client announces (CONNECT.auth_method_name, the HTTP Authorization
header, or a client certificate on a TLS port)."""

from __future__ import annotations

import base64
import binascii
import importlib
import logging
from dataclasses import dataclass
from typing import Protocol

from server.errors import AuthenticationError

from .audit import SecurityAudit
from .config import SecurityConfig

log = logging.getLogger(__name__)

PROVIDER_PACKAGE = "org.apache.pulsar.broker.authentication."
#: Pulsar's provider class names -> module and class here. A provider's module (PyJWT and
#: cryptography for tokens, bcrypt for basic) is imported only when it is configured.
KNOWN_PROVIDERS = {
    "AuthenticationProviderToken": (".provider_token", "TokenProvider"),
    "AuthenticationProviderBasic": (".provider_basic", "BasicProvider"),
    "AuthenticationProviderTls": (".provider_tls", "TlsProvider"),
}


@dataclass(frozen=True)
class Identity:
    role: str
    #: Unix time after which the credentials are no longer valid (expiring tokens), else None.
    expires_at: float | None = None


class Provider(Protocol):
    method: str

    async def authenticate(self, data: bytes, peercert: dict | None) -> Identity: ...


def _providers(config: SecurityConfig) -> dict[str, Provider]:
    providers: dict[str, Provider] = {}
    for name in filter(None, (n.strip() for n in config.authentication_providers.split(","))):
        short = name.removeprefix(PROVIDER_PACKAGE)
        if short not in KNOWN_PROVIDERS:
            raise ValueError(f"authenticationProviders: {name} is not one of "
                             f"{', '.join(PROVIDER_PACKAGE + k for k in KNOWN_PROVIDERS)}")
        module, class_name = KNOWN_PROVIDERS[short]
        provider = getattr(importlib.import_module(module, __package__), class_name)(config)
        providers[provider.method] = provider
    if config.authentication_enabled and not providers:
        raise ValueError("authenticationEnabled needs authenticationProviders")
    if config.authorization_enabled and not config.authentication_enabled:
        raise ValueError("authorizationEnabled needs authenticationEnabled: roles come from authentication")
    return providers


class Authentication:
    """The broker's authentication service; `enabled` False lets everyone in with no role."""

    def __init__(self, config: SecurityConfig, audit: SecurityAudit | None = None) -> None:
        self.enabled = config.authentication_enabled
        self.providers = _providers(config)
        self.anonymous_role = config.anonymous_user_role
        self.audit = audit or SecurityAudit()

    async def authenticate(self, method: str, data: bytes, peercert: dict | None) -> Identity:
        """The identity behind credentials; AuthenticationError (logged, counted) otherwise.

        As Pulsar's ServerCnx: a method no provider is configured for ("none" from a client
        without credentials, or any other name) gets anonymousUserRole when it is set, its
        credentials unread; authorization then decides what that role may do."""
        provider = self.providers.get(method)
        try:
            if provider is None:
                if self.anonymous_role:
                    return Identity(self.anonymous_role)
                raise AuthenticationError(f"No authentication provider for method {method or '(none)'!r}"
                                          f" (configured: {', '.join(self.providers)}) and no anonymousUserRole")
            identity = await provider.authenticate(data, peercert)
        except AuthenticationError as exc:
            self.audit.authenticated(method, False)
            log.warning("authentication failed (method %r): %s", method, exc)
            raise
        self.audit.authenticated(method, True)
        return identity

    async def authenticate_http(self, authorization: str | None, peercert: dict | None) -> Identity:
        """Authorization: Bearer (token) or Basic, else the TLS client certificate."""
        scheme, _, value = (authorization or "").partition(" ")
        if scheme.lower() == "bearer":
            return await self.authenticate("token", value.strip().encode(), peercert)
        if scheme.lower() == "basic":
            try:
                return await self.authenticate("basic", base64.b64decode(value.strip(), validate=True), peercert)
            except binascii.Error:
                raise AuthenticationError("Malformed Basic authorization header") from None
        if peercert and "tls" in self.providers:
            return await self.authenticate("tls", b"", peercert)
        return await self.authenticate("", b"", peercert)
