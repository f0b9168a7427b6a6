"""The security keys of Pulsar's broker.conf / standalone.conf, embedded in BrokerConfig."""

from __future__ import annotations

from dataclasses import dataclass, field

from bookkeeper.config import conf_key


@dataclass(frozen=True)
class SecurityConfig:
    tls_certificate_file_path: str = field(default="", metadata=conf_key("tlsCertificateFilePath"))
    tls_key_file_path: str = field(default="", metadata=conf_key("tlsKeyFilePath"))
    tls_trust_certs_file_path: str = field(default="", metadata=conf_key("tlsTrustCertsFilePath"))
    tls_require_trusted_client_cert_on_connect: bool = field(
        default=False, metadata=conf_key("tlsRequireTrustedClientCertOnConnect"))
    tls_allow_insecure_connection: bool = field(default=False, metadata=conf_key("tlsAllowInsecureConnection"))
    #: Comma-separated, e.g. "TLSv1.3,TLSv1.2" (empty: the ssl module's defaults).
    tls_protocols: str = field(default="", metadata=conf_key("tlsProtocols"))
    #: Comma-separated OpenSSL cipher names (TLS 1.2 and below; empty: OpenSSL's defaults).
    tls_ciphers: str = field(default="", metadata=conf_key("tlsCiphers"))
    tls_cert_refresh_check_duration_sec: float = field(
        default=300.0, metadata=conf_key("tlsCertRefreshCheckDurationSec"))

    authentication_enabled: bool = field(default=False, metadata=conf_key("authenticationEnabled"))
    #: Comma-separated Pulsar class names (server/security/authentication.py maps them).
    authentication_providers: str = field(default="", metadata=conf_key("authenticationProviders"))
    authentication_refresh_check_seconds: float = field(
        default=60.0, metadata=conf_key("authenticationRefreshCheckSeconds"))
    authenticate_metrics_endpoint: bool = field(default=False, metadata=conf_key("authenticateMetricsEndpoint"))
    token_secret_key: str = field(default="", metadata=conf_key("tokenSecretKey"))
    token_public_key: str = field(default="", metadata=conf_key("tokenPublicKey"))
    token_auth_claim: str = field(default="sub", metadata=conf_key("tokenAuthClaim"))
    token_public_alg: str = field(default="RS256", metadata=conf_key("tokenPublicAlg"))
    token_audience_claim: str = field(default="", metadata=conf_key("tokenAudienceClaim"))
    token_audience: str = field(default="", metadata=conf_key("tokenAudience"))
    #: The role of clients that present no credentials (empty: they are refused).
    anonymous_user_role: str = field(default="", metadata=conf_key("anonymousUserRole"))
    basic_auth_conf: str = field(default="", metadata=conf_key("basicAuthConf"))

    authorization_enabled: bool = field(default=False, metadata=conf_key("authorizationEnabled"))
    #: Comma-separated roles allowed everything.
    super_user_roles: str = field(default="", metadata=conf_key("superUserRoles"))

    @property
    def tls_configured(self) -> bool:
        return bool(self.tls_certificate_file_path and self.tls_key_file_path)

    @property
    def super_users(self) -> frozenset[str]:
        return frozenset(filter(None, (r.strip() for r in self.super_user_roles.split(","))))
