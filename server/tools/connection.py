"""How `pulsard client` and `pulsard perf` reach a broker: the service URL, credentials and TLS
settings, with pulsar-client's and pulsar-perf's flag names, defaulting to the client.conf named by
PULSAR_CLIENT_CONF as Pulsar's tools do; a flag given wins over the file.

The client library is imported only when a client is opened.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from server.admin.client_conf import ClientConf, load_client_conf
from server.security.client_credentials import CLIENT_PACKAGE, ClientCredentials

if TYPE_CHECKING:
    import pulsar


def add_connection_flags(parser: argparse.ArgumentParser, url_aliases: tuple[str, ...] = (),
                         trust_aliases: tuple[str, ...] = (), default: Any = None) -> None:
    """The connection flags; default=argparse.SUPPRESS for a sub-command's copy, so that a flag
    given before the sub-command is kept when it is not repeated after it."""
    parser.add_argument("--url", *url_aliases, dest="url", default=default,
                        help="service URL (default: client.conf's brokerServiceUrl, else pulsar://127.0.0.1:6650)")
    parser.add_argument("--auth-plugin", default=default,
                        help=f"authentication plugin class, e.g. {CLIENT_PACKAGE}AuthenticationToken "
                             "(default: client.conf's authPlugin)")
    parser.add_argument("--auth-params", default=default,
                        help='its parameters, e.g. "token:<jwt>", "file:///path/token.txt", '
                             '"tlsCertFile:/c.pem,tlsKeyFile:/k.pem" or JSON (default: client.conf\'s authParams)')
    parser.add_argument("--tls-trust-cert-path", *trust_aliases, dest="tls_trust_cert_path", default=default,
                        help="CA certificates for a pulsar+ssl:// URL (default: client.conf's tlsTrustCertsFilePath)")
    parser.add_argument("--tls-allow-insecure", action=argparse.BooleanOptionalAction, default=default,
                        help="accept a broker certificate that is not trusted "
                             "(default: client.conf's tlsAllowInsecureConnection, else no)")
    parser.add_argument("--tls-enable-hostname-verification", action=argparse.BooleanOptionalAction,
                        default=default, help="check that the broker's certificate names its host "
                                              "(default: client.conf's tlsEnableHostnameVerification, else no)")


@dataclass(frozen=True)
class Connection:
    """What a pulsar.Client is opened with, resolved apart from opening it so that the flag and
    client.conf rules are testable without the client library's connections."""

    service_url: str
    credentials: ClientCredentials
    tls_trust_certs_file_path: str | None
    tls_allow_insecure_connection: bool
    tls_enable_hostname_verification: bool


def _given(flag: Any, conf_value: Any) -> Any:
    return conf_value if flag is None else flag


def connection(args: argparse.Namespace, conf: ClientConf) -> Connection:
    """The flags, else client.conf's values; ValueError for an unusable plugin or parameters."""
    return Connection(
        service_url=_given(args.url, conf.broker_service_url),
        credentials=conf.credentials(args.auth_plugin, args.auth_params),
        tls_trust_certs_file_path=_given(args.tls_trust_cert_path, conf.tls_trust_certs_file_path) or None,
        tls_allow_insecure_connection=_given(args.tls_allow_insecure, conf.tls_allow_insecure_connection),
        tls_enable_hostname_verification=_given(args.tls_enable_hostname_verification,
                                                conf.tls_enable_hostname_verification),
    )


def open_client(args: argparse.Namespace) -> pulsar.Client:
    """The client the flags and client.conf describe; its own log kept to warnings (stdout is for
    messages)."""
    import pulsar
    settings = connection(args, load_client_conf())
    return pulsar.Client(settings.service_url, authentication=settings.credentials.pulsar_authentication(),
                         tls_trust_certs_file_path=settings.tls_trust_certs_file_path,
                         tls_allow_insecure_connection=settings.tls_allow_insecure_connection,
                         tls_validate_hostname=settings.tls_enable_hostname_verification,
                         logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
