"""Server-side TLS for both ports, from Pulsar's tls* keys, with certificates reloaded live.

The standard ssl module does the work. A listening server keeps the SSLContext it was given,
so reloading works through the SNI callback (called on every ClientHello, with or without a
server name): it hands each new handshake the context built from the files as they are now;
a changed certificate, key or trust file (checked every tlsCertRefreshCheckDurationSec) gives
a new context, and connections already open keep theirs.

Differences from Pulsar's JDK/OpenSSL providers: tlsCiphers takes OpenSSL cipher names and
applies to TLS 1.2 and below; with tlsAllowInsecureConnection no client certificate is asked
for at all (ssl cannot accept an untrusted one), so TLS authentication needs it false.
"""

from __future__ import annotations

import logging
import os
import ssl
import time

from .config import SecurityConfig

log = logging.getLogger(__name__)

_PROTOCOLS = {
    "TLSv1": ssl.TLSVersion.TLSv1, "TLSv1.1": ssl.TLSVersion.TLSv1_1,
    "TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3,
}


def build_context(config: SecurityConfig) -> ssl.SSLContext:
    """A server context from the files as they are now; ValueError naming the key at fault."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(config.tls_certificate_file_path, config.tls_key_file_path)
    except (OSError, ssl.SSLError) as exc:
        raise ValueError(f"tlsCertificateFilePath/tlsKeyFilePath: cannot load {exc}") from None
    if config.tls_allow_insecure_connection:
        context.verify_mode = ssl.CERT_NONE
    elif config.tls_trust_certs_file_path:
        try:
            context.load_verify_locations(cafile=config.tls_trust_certs_file_path)
        except (OSError, ssl.SSLError) as exc:
            raise ValueError(f"tlsTrustCertsFilePath: cannot load {exc}") from None
        # Optional: a client without a certificate may still authenticate another way.
        required = config.tls_require_trusted_client_cert_on_connect
        context.verify_mode = ssl.CERT_REQUIRED if required else ssl.CERT_OPTIONAL
    elif config.tls_require_trusted_client_cert_on_connect:
        raise ValueError("tlsRequireTrustedClientCertOnConnect needs tlsTrustCertsFilePath")
    _set_protocols(context, config.tls_protocols)
    if config.tls_ciphers.strip():
        try:
            context.set_ciphers(":".join(c.strip() for c in config.tls_ciphers.split(",") if c.strip()))
        except ssl.SSLError:
            raise ValueError(f"tlsCiphers: no cipher of {config.tls_ciphers!r} is known to OpenSSL") from None
    return context


def _set_protocols(context: ssl.SSLContext, text: str) -> None:
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        return
    unknown = [name for name in names if name not in _PROTOCOLS]
    if unknown:
        raise ValueError(f"tlsProtocols: unknown {', '.join(unknown)} (known: {', '.join(_PROTOCOLS)})")
    versions = sorted(_PROTOCOLS[name] for name in names)
    context.minimum_version, context.maximum_version = versions[0], versions[-1]


class ReloadingTls:
    """The context every TLS listener uses: each handshake gets the current certificates."""

    def __init__(self, config: SecurityConfig, clock=time.monotonic) -> None:
        if not config.tls_configured:
            raise ValueError("a TLS port needs tlsCertificateFilePath and tlsKeyFilePath")
        self._config = config
        self._clock = clock
        self._stamp = self._file_stamp()
        self._next_check = clock() + config.tls_cert_refresh_check_duration_sec
        #: The listeners' context; its SNI callback hands each handshake `current()`.
        self.context = self._current = build_context(config)
        self.context.sni_callback = self._pick_context

    def _files(self) -> list[str]:
        c = self._config
        return [p for p in (c.tls_certificate_file_path, c.tls_key_file_path, c.tls_trust_certs_file_path) if p]

    def _file_stamp(self) -> tuple:
        stamp = []
        for path in self._files():
            try:
                st = os.stat(path)
                stamp.append((st.st_mtime_ns, st.st_size, st.st_ino))
            except OSError:
                stamp.append(None)
        return tuple(stamp)

    def current(self) -> ssl.SSLContext:
        """The context of the files as they are, re-read at most every refresh period."""
        now = self._clock()
        if now >= self._next_check:
            self._next_check = now + self._config.tls_cert_refresh_check_duration_sec
            stamp = self._file_stamp()
            if stamp != self._stamp:
                try:
                    self._current = build_context(self._config)
                    self._stamp = stamp
                    log.info("TLS certificates reloaded from %s", ", ".join(self._files()))
                except ValueError as exc:   # half-written files: keep serving the old ones
                    log.warning("TLS certificates not reloaded: %s", exc)
        return self._current

    def _pick_context(self, ssl_object: ssl.SSLObject, server_name: str | None, _: ssl.SSLContext) -> None:
        ssl_object.context = self.current()


def peer_common_name(peercert: dict | None) -> str | None:
    """The CN of a verified client certificate (what Pulsar's TLS provider takes as the role)."""
    for rdn in (peercert or {}).get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                return value
    return None
