"""Which brokers are alive: each registers an ephemeral ``/loadbalance/brokers/<host:webPort>``
node holding Pulsar's LocalBrokerData JSON: its URLs and listeners, and its load report
(server/loadbalance/load_report.py: owned bundles, their stats, resource usage). The node vanishes with the broker's ZooKeeper session, so a broker
killed with kill -9 leaves the registry once its session expires.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from managed_ledger.errors import MetadataBadVersionError

from server.config import BrokerConfig
from server.connection.advertised_listeners import AdvertisedListeners

log = logging.getLogger(__name__)

BROKERS_ROOT = "/loadbalance/brokers"


@dataclass(frozen=True)
class BrokerAddress:
    """Where a broker is reached: its binary and web URLs, and its named listeners."""

    native_url: str | None
    native_url_tls: str | None
    http_url: str
    listeners: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)

    @classmethod
    def of(cls, config: BrokerConfig, listeners: AdvertisedListeners) -> BrokerAddress:
        host = config.service_url.split("://", 1)[1].rsplit(":", 1)[0]
        return cls(listeners.internal.broker_url, listeners.internal.broker_url_tls,
                   f"http://{host}:{config.web_service_port}",
                   {name: (each.broker_url, each.broker_url_tls) for name, each in listeners.named.items()})

    @property
    def broker_id(self) -> str:
        """Pulsar's lookupServiceAddress: host:webPort."""
        return self.http_url.split("://", 1)[1]

    def listener_urls(self, name: str) -> tuple[str | None, str | None] | None:
        """The URLs for the client's listener; None when this broker has no such listener."""
        if not name:
            return self.native_url, self.native_url_tls
        return self.listeners.get(name)

    def ephemeral_data(self) -> dict[str, Any]:
        """NamespaceEphemeralData, the value of a bundle's ownership node."""
        return {"nativeUrl": self.native_url, "nativeUrlTls": self.native_url_tls,
                "httpUrl": self.http_url, "httpUrlTls": None, "disabled": False,
                "advertisedListeners": _listeners_json(self.listeners)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BrokerAddress:
        """From NamespaceEphemeralData or LocalBrokerData (the field names differ)."""
        listeners = {name: (urls.get("brokerServiceUrl"), urls.get("brokerServiceUrlTls"))
                     for name, urls in (data.get("advertisedListeners") or {}).items()}
        return cls(data.get("nativeUrl") or data.get("pulsarServiceUrl"),
                   data.get("nativeUrlTls") or data.get("pulsarServiceUrlTls"),
                   data.get("httpUrl") or data.get("webServiceUrl") or "", listeners)


def _listeners_json(listeners: dict[str, tuple[str | None, str | None]]) -> dict[str, Any]:
    return {name: {"brokerServiceUrl": plain, "brokerServiceUrlTls": tls}
            for name, (plain, tls) in listeners.items()}


@dataclass(frozen=True)
class RegisteredBroker:
    address: BrokerAddress
    num_bundles: int


class BrokerRegistry:
    def __init__(self, store: Any, me: BrokerAddress) -> None:
        self._store = store
        self.me = me
        self._path = f"{BROKERS_ROOT}/{me.broker_id}"
        self._load: dict[str, Any] = {}
        self._version = 0
        self._writing = asyncio.Lock()   # one versioned update at a time

    async def register(self) -> None:
        """Create this broker's node (again after a session expiry). A node of an earlier
        session of ours that ZooKeeper has not expired yet is replaced."""
        try:
            self._version = await self._store.put_ephemeral(self._path, self._data())
        except MetadataBadVersionError:
            log.info("replacing the registry node of an earlier session at %s", self._path)
            await self._store.delete(self._path)
            self._version = await self._store.put_ephemeral(self._path, self._data())
        log.info("registered broker %s", self.me.broker_id)

    async def publish(self, load: dict[str, Any]) -> None:
        """Write this broker's load report (the fields the leader places bundles by)."""
        self._load = load
        async with self._writing:
            await self._publish()

    async def _publish(self) -> None:
        try:
            # versioned: never re-creates the node (as a persistent one) after a session expiry
            self._version = await self._store.put(self._path, self._data(), self._version)
        except Exception as exc:  # noqa: BLE001 - a stale load figure only skews the placements
            log.warning("cannot update the registry node %s: %s", self._path, exc)

    async def brokers(self) -> list[RegisteredBroker]:
        return [RegisteredBroker(BrokerAddress.from_json(data), int(data.get("numBundles", 0)))
                for data in await self.reports()]

    async def reports(self) -> list[dict[str, Any]]:
        """Every registered broker's LocalBrokerData (the web console's cluster page shows them)."""
        found = []
        for child in await self._store.children(BROKERS_ROOT):
            stored = await self._store.get(f"{BROKERS_ROOT}/{child}")
            if stored is not None:
                found.append(json.loads(stored[0]))
        return found

    def _data(self) -> bytes:
        """LocalBrokerData: the fields a lookup needs, and the load report."""
        return json.dumps(self.local_broker_data(self._load)).encode()

    def local_broker_data(self, load: dict[str, Any]) -> dict[str, Any]:
        me = self.me
        return {
            "webServiceUrl": me.http_url, "webServiceUrlTls": None,
            "pulsarServiceUrl": me.native_url, "pulsarServiceUrlTls": me.native_url_tls,
            "persistentTopicsEnabled": True, "nonPersistentTopicsEnabled": True,
            "advertisedListeners": _listeners_json(me.listeners),
            "bundles": [], "numBundles": 0, "lastUpdate": int(time.time() * 1000),
            **load, "brokerVersionString": "pulsard",
        }
