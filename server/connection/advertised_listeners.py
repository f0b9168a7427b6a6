"""Advertised listeners: the broker URLs a lookup answers, chosen by the client's listener name.

Pulsar's `advertisedListeners` key lists `name:url` entries, comma-separated; a name may have one
pulsar:// and one pulsar+ssl:// URL, e.g. `internal:pulsar://10.0.0.5:6650,external:pulsar://
broker.example.com:6650`. A client names its listener (`listener_name`, sent in LOOKUP); a lookup
without a name gets `internalListenerName` (by default the first name). Without the key, a lookup
gets the broker's own service URL, and one naming a listener fails, as in Pulsar.

The configuration is checked as Pulsar checks it at start, so a bad one stops the broker with an
error naming the key instead of sending clients to a wrong address later.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from server.config import BrokerConfig
from server.errors import ServiceNotReady

SCHEMES = ("pulsar", "pulsar+ssl")
KEY = "advertisedListeners"


@dataclass(frozen=True)
class Listener:
    """A listener's URLs; either may be absent (a listener may be TLS only, or plain only)."""

    broker_url: str | None
    broker_url_tls: str | None = None


class AdvertisedListeners:
    def __init__(self, named: dict[str, Listener], internal: Listener) -> None:
        self.named = named
        self.internal = internal

    @classmethod
    def from_config(cls, config: BrokerConfig) -> "AdvertisedListeners":
        """The configured listeners; ValueError naming the key when the configuration is bad."""
        urls = _entries(config.advertised_listeners)
        if not urls:
            plain = config.service_url if config.broker_service_port else None   # a TLS-only broker
            return cls({}, Listener(plain, config.service_url_tls))
        internal = config.internal_listener_name.strip() or next(iter(urls))
        if internal not in urls:
            raise ValueError(f"internalListenerName: {internal!r} is not a listener of {KEY} "
                             f"(it has {', '.join(urls)})")
        named = {name: _listener(name, entries) for name, entries in urls.items()}
        _check_distinct_addresses(urls)
        return cls(named, named[internal])

    def listener(self, name: str) -> Listener:
        """The internal listener for no name; ServiceNotReady for a name not configured (the
        error Pulsar's lookup answers)."""
        if not name:
            return self.internal
        found = self.named.get(name)
        if found is None:
            raise ServiceNotReady(f"the broker does not have the {name} listener")
        return found


def _entries(text: str) -> dict[str, list[str]]:
    """Listener name -> its URLs, in the order first named."""
    urls: dict[str, list[str]] = {}
    for entry in filter(None, (part.strip() for part in text.split(","))):
        name, sep, url = entry.partition(":")
        if not sep or not name.strip() or url.startswith("//"):
            raise ValueError(f"{KEY}: {entry!r} has no listener name (entries are name:url)")
        urls.setdefault(name.strip(), []).append(url.strip())
    return urls


def _listener(name: str, urls: list[str]) -> Listener:
    """At most one pulsar:// and one pulsar+ssl:// URL a listener."""
    by_scheme: dict[str, str] = {}
    for url in urls:
        scheme = _checked_url(name, url)[0]
        if scheme in by_scheme:
            raise ValueError(f"{KEY}: listener {name!r} has more than one {scheme}:// URL")
        by_scheme[scheme] = url
    return Listener(by_scheme.get("pulsar"), by_scheme.get("pulsar+ssl"))


def _checked_url(name: str, url: str) -> tuple[str, str]:
    """(scheme, host:port) of a listener URL."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        parts, port = None, None
    if parts is None or parts.scheme.lower() not in SCHEMES or not parts.hostname:
        raise ValueError(f"{KEY}: listener {name!r} has {url!r}, not a pulsar:// or pulsar+ssl:// URL "
                         f"with a host")
    return parts.scheme.lower(), f"{parts.hostname}:{port}"


def _check_distinct_addresses(urls: dict[str, list[str]]) -> None:
    """One host:port belongs to one listener (else a client could not be told apart)."""
    owners: dict[str, str] = {}
    for name, entries in urls.items():
        for url in entries:
            address = _checked_url(name, url)[1]
            other = owners.setdefault(address, name)
            if other != name:
                raise ValueError(f"{KEY}: {address} is given to two listeners, {other!r} and {name!r}")
