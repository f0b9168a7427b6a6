"""The broker the Go client's own suite expects, set up as its CI sets one up.

The client's Dockerfile copies the module's integration-tests/{certs,tokens,conf} to
/pulsar/{certs,tokens,conf} in its test image and passes the basic-auth file as a JVM property
(`PULSAR_EXTRA_OPTS=-Dpulsar.auth.basic.conf=/pulsar/conf/.htpasswd`); the broker runs with
integration-tests/conf/standalone.conf (TLS on 6651/8443; token, basic and TLS authentication;
authorization); scripts/pulsar-test-service-start.sh then grants permissions with pulsar-admin,
which reads integration-tests/conf/client.conf (https, TLS client certificate of a super user).

Here nothing is written to /pulsar: the conf's /pulsar/... paths are rewritten to the files of a
copy of the module (the runner's temporary directory), and the grants are made over the same
https port with the same client certificate. No key, token or certificate is generated: the
module ships them.
"""

from __future__ import annotations

import dataclasses
import json
import ssl
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

from server.config import BrokerConfig, read_conf_file

MODULE = "github.com/apache/pulsar-client-go"
VERSION = "v0.19.0"
CONF_DIR = Path("integration-tests/conf")
#: The Dockerfile's COPY lines: where the test image has the module's files.
IMAGE_PATHS = {"/pulsar/certs/": "integration-tests/certs/", "/pulsar/tokens/": "integration-tests/tokens/",
               "/pulsar/conf/": "integration-tests/conf/"}
#: The Dockerfile's PULSAR_EXTRA_OPTS (-Dpulsar.auth.basic.conf), as the broker key pulsard reads.
IMAGE_SETTINGS = {"basicAuthConf": "/pulsar/conf/.htpasswd"}
#: What scripts/pulsar-test-service-start.sh grants: (namespace, role, actions).
GRANTS = [("public/default", "anonymous", ["produce", "consume"]),
          ("private/auth", "token-principal", ["produce", "consume"])]


def module_dir() -> Path:
    """The module in the Go module cache (read-only); FileNotFoundError when it is not there."""
    try:
        cache = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        raise FileNotFoundError(f"no Go toolchain: {exc}") from None
    path = Path(cache.strip()) / f"{MODULE}@{VERSION}"
    if not path.is_dir():
        raise FileNotFoundError(f"{path} not found: run `go mod download {MODULE}@{VERSION}` first")
    return path


def config_keys(config: object) -> set[str]:
    """The configuration-file keys a config dataclass reads, its embedded configurations' included."""
    keys: set[str] = set()
    for spec in dataclasses.fields(config):
        value = getattr(config, spec.name)
        if "key" in spec.metadata:
            keys.add(spec.metadata["key"])
        elif dataclasses.is_dataclass(value):
            keys |= config_keys(value)
    return keys


def local_path(value: str, module: Path) -> str:
    """`value` with the test image's /pulsar/... paths pointing into the module copy at `module`."""
    for image, relative in IMAGE_PATHS.items():
        value = value.replace(image, f"{module / relative}/")
    return value


def broker_config(module: Path, overrides: dict[str, object]) -> dict[str, object]:
    """The CI broker's settings that pulsard understands, its files in `module`, then `overrides`."""
    known = config_keys(BrokerConfig())
    upstream = {**read_conf_file(module / CONF_DIR / "standalone.conf"), **IMAGE_SETTINGS}
    settings: dict[str, object] = {k: local_path(v, module) for k, v in upstream.items() if k in known and v != ""}
    settings.update(overrides)
    return settings


class SuperUserAdmin:
    """REST calls as pulsar-admin makes them in the test image: client.conf's TLS client certificate."""

    def __init__(self, module: Path, web_port_tls: int) -> None:
        client = {k: local_path(v, module) for k, v in read_conf_file(module / CONF_DIR / "client.conf").items()}
        params = dict(item.split(":", 1) for item in client["authParams"].split(","))
        context = ssl.create_default_context(cafile=client["tlsTrustCertsFilePath"])
        context.load_cert_chain(params["tlsCertFile"], params["tlsKeyFile"])
        self._url = f"https://localhost:{web_port_tls}"
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}),
                                                   urllib.request.HTTPSHandler(context=context))

    def request(self, method: str, path: str, body: object = None) -> bytes:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self._url + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        with self._opener.open(request, timeout=10) as response:
            return response.read()

    def call(self, method: str, path: str, body: object = None) -> object:
        text = self.request(method, path, body)
        return json.loads(text) if text else None

    def healthy(self) -> bool:
        """The broker's health check, as a super user (anonymous probes are refused and logged)."""
        try:
            return self.request("GET", "/admin/v2/brokers/health").strip() == b"ok"
        except OSError:
            return False

    def create(self, path: str, body: object) -> None:
        try:
            self.call("PUT", path, body)
        except urllib.error.HTTPError as exc:
            if exc.code != 409:          # already exists (a restart keeps the data dir)
                raise


def grant_permissions(admin: SuperUserAdmin) -> None:
    """What scripts/pulsar-test-service-start.sh does after the broker is up."""
    clusters = admin.call("GET", "/admin/v2/clusters")
    # tenants update public -r anonymous (the tenant's clusters kept)
    public = admin.call("GET", "/admin/v2/tenants/public")
    admin.call("POST", "/admin/v2/tenants/public", {**public, "adminRoles": ["anonymous"]})
    # tenants create private (no -c: every cluster); namespaces create private/auth
    admin.create("/admin/v2/tenants/private", {"adminRoles": [], "allowedClusters": clusters})
    admin.create("/admin/v2/namespaces/private/auth", {})
    for namespace, role, actions in GRANTS:
        admin.call("POST", f"/admin/v2/namespaces/{namespace}/permissions/{role}", actions)
