"""AuthenticationProviderTls: the role is the CN of the client certificate that the TLS
handshake verified against tlsTrustCertsFilePath."""

from __future__ import annotations

from server.errors import AuthenticationError

from .authentication import Identity
from .config import SecurityConfig
from .tls import peer_common_name


class TlsProvider:
    method = "tls"

    def __init__(self, config: SecurityConfig) -> None:
        pass

    async def authenticate(self, data: bytes, peercert: dict | None) -> Identity:
        role = peer_common_name(peercert)
        if not role:
            raise AuthenticationError("Failed to get TLS Client Certificates, or they have no common name")
        return Identity(role)
