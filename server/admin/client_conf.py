"""client.conf, as Pulsar's tools read it: `PULSAR_CLIENT_CONF` names the file; its
webServiceUrl, brokerServiceUrl, authPlugin, authParams, tlsTrustCertsFilePath,
tlsAllowInsecureConnection and tlsEnableHostnameVerification are the defaults of `pulsard admin`,
`pulsard client` and `pulsard perf` (flags still win)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from server.config import read_conf_file
from server.security.client_credentials import ClientCredentials, credentials

CLIENT_CONF_ENV = "PULSAR_CLIENT_CONF"
DEFAULT_WEB_SERVICE_URL = "http://127.0.0.1:8080"
DEFAULT_BROKER_SERVICE_URL = "pulsar://127.0.0.1:6650"


@dataclass(frozen=True)
class ClientConf:
    web_service_url: str = DEFAULT_WEB_SERVICE_URL
    broker_service_url: str = DEFAULT_BROKER_SERVICE_URL
    auth_plugin: str = ""
    auth_params: str = ""
    tls_trust_certs_file_path: str = ""
    tls_allow_insecure_connection: bool = False
    tls_enable_hostname_verification: bool = False

    def credentials(self, plugin: str | None, params: str | None, token: str | None = None) -> ClientCredentials:
        """--auth-plugin / --auth-params (or --token), else this file's authPlugin / authParams.
        A plugin named on the command line takes its parameters from there only: the file's are
        for the file's plugin. ValueError for an unusable plugin or parameters."""
        if plugin is None:
            plugin, params = self.auth_plugin, self.auth_params if params is None else params
        return credentials(plugin, params, token)


def load_client_conf(environ: Mapping[str, str] = os.environ) -> ClientConf:
    """The file named by PULSAR_CLIENT_CONF, else the defaults (a local pulsard). A named file
    that cannot be read raises OSError: silently using the defaults would reach another broker."""
    path = environ.get(CLIENT_CONF_ENV)
    if not path:
        return ClientConf()
    settings = read_conf_file(Path(path))
    defaults = ClientConf()
    return ClientConf(
        web_service_url=settings.get("webServiceUrl") or defaults.web_service_url,
        broker_service_url=settings.get("brokerServiceUrl") or defaults.broker_service_url,
        auth_plugin=settings.get("authPlugin", ""),
        auth_params=settings.get("authParams", ""),
        tls_trust_certs_file_path=settings.get("tlsTrustCertsFilePath", ""),
        tls_allow_insecure_connection=_true(settings.get("tlsAllowInsecureConnection")),
        tls_enable_hostname_verification=_true(settings.get("tlsEnableHostnameVerification")),
    )


def _true(value: str | None) -> bool:
    """As Java's Boolean.parseBoolean, which Pulsar's tools use: "true" in any case, else false."""
    return (value or "").strip().lower() == "true"
