"""Two (or more) pulsard brokers of one cluster on the test ZooKeeper + bookies, each started as
a user would: ``python -m server broker --config broker.conf``. Each group of brokers keeps its
metadata under a ZooKeeper chroot of its own, so groups never see each other's bundles."""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path

import requests
from kazoo.client import KazooClient

from bookkeeper.bk.ledger_metadata import LedgerMetadata, ledger_path

from compat_tests.broker import HOST, Broker
from server.topics.topic_name import TopicName


def cluster_config(cluster, chroot: str, **extra: object) -> dict[str, object]:
    return {
        "clusterName": "pulsard-cluster",
        "advertisedAddress": HOST,
        "metadataStoreUrl": f"{cluster.metadata_store_url}/{chroot}",
        "bookkeeperMetadataServiceUri": cluster.metadata_service_uri,
        "managedLedgerDefaultEnsembleSize": 3,
        "managedLedgerDefaultWriteQuorum": 2,
        "managedLedgerDefaultAckQuorum": 2,
        "metadataStoreSessionTimeoutMillis": 4000,
        **extra,
    }


class BrokerGroup:
    def __init__(self, cluster, work_dir: Path, count: int, **extra: object) -> None:
        self.chroot = chroot = f"pulsard-{uuid.uuid4().hex[:8]}"
        self.brokers = [Broker(work_dir / f"broker-{i}", None, mode="broker") for i in range(count)]
        for broker in self.brokers:
            broker.work_dir.mkdir(parents=True, exist_ok=True)
            broker.config_path = broker.work_dir / "broker.conf"
            broker.config_path.write_text("".join(
                f"{k}={v}\n" for k, v in cluster_config(cluster, chroot, **extra).items()))

    def start(self) -> "BrokerGroup":
        for broker in self.brokers:   # one after the other: the first creates the defaults
            broker.start(timeout=60)
        return self

    def stop(self) -> None:
        for broker in self.brokers:
            broker.stop()
            shutil.rmtree(broker.data_dir, ignore_errors=True)


def http(method: str, url: str, body: object = None, follow: bool = True) -> tuple[int, object]:
    """(status, JSON or text, or the Location of a 307 not followed); requests follows 307s for
    every method, keeping the body, as Pulsar's admin clients do."""
    response = requests.request(method, url, json=body, allow_redirects=follow, timeout=30,
                                proxies={"http": None, "https": None})
    if response.status_code == 307:
        return 307, response.headers["Location"]
    try:
        return response.status_code, response.json() if response.content else None
    except ValueError:
        return response.status_code, response.text


def zk_json(cluster, path: str) -> object:
    """The JSON value of a ZooKeeper node (None when absent)."""
    zk = KazooClient(hosts=cluster.zk_address)
    zk.start(timeout=30)
    try:
        return json.loads(zk.get(path)[0]) if zk.exists(path) else None
    finally:
        zk.stop()
        zk.close()


def ledger_ensemble(cluster, broker, topic: str) -> list[str]:
    """The bookies of the ledger the topic writes now (its last ensemble), in ensemble order."""
    return list(ledger_metadata(cluster, broker, topic).last_ensemble)


def ledger_metadata(cluster, broker, topic: str, index: int = -1) -> LedgerMetadata:
    """The BookKeeper metadata (in ZooKeeper) of one of the topic's ledgers (default: the one it
    writes now), found through its internal stats."""
    name = TopicName.parse(topic)
    status, stats = http("GET", f"{broker.web_url}/admin/v2/persistent/{name.namespace}/{name.local_name}/internalStats")
    assert status == 200, stats
    ledger_id = stats["ledgers"][index]["ledgerId"]
    zk = KazooClient(hosts=cluster.zk_address)
    zk.start(timeout=30)
    try:
        raw, _ = zk.get(ledger_path("/ledgers", ledger_id))
    finally:
        zk.stop()
        zk.close()
    return LedgerMetadata.decode(raw)
