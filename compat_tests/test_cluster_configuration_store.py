"""configurationMetadataStoreUrl as Pulsar uses it: two clusters (one broker each) on the test
ZooKeeper + bookies, each with a local metadata store of its own (a chroot) and one shared
configuration store (a third chroot). Tenants, namespaces, their policies and partitioned
topics made on one cluster are there on the other; topics, their managed ledgers, bundle
ownership and registrations stay in each cluster's local store."""

from __future__ import annotations

import uuid

import pulsar
import pytest
from kazoo.client import KazooClient

from compat_tests.cluster_brokers import BrokerGroup, http

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(240)]


def test_two_clusters_share_tenants_namespaces_and_policies_not_topics(cluster, tmp_path):
    shared = f"pulsard-configuration-{uuid.uuid4().hex[:8]}"
    store = {"configurationMetadataStoreUrl": f"{cluster.metadata_store_url}/{shared}"}
    east = BrokerGroup(cluster, tmp_path / "east", 1, **store)
    west = BrokerGroup(cluster, tmp_path / "west", 1, **store)
    zk = KazooClient(hosts=cluster.zk_address)
    zk.start(timeout=30)
    try:
        (e,), (w,) = east.start().brokers, west.start().brokers
        tenant = {"adminRoles": [], "allowedClusters": ["pulsard-cluster"]}
        assert http("PUT", f"{e.web_url}/admin/v2/tenants/acme", tenant)[0] == 204
        assert http("PUT", f"{e.web_url}/admin/v2/namespaces/acme/orders", {})[0] == 204
        assert http("POST", f"{e.web_url}/admin/v2/namespaces/acme/orders/messageTTL", 120)[0] == 204
        assert http("PUT", f"{e.web_url}/admin/v2/persistent/acme/orders/events/partitions", 2)[0] == 204

        assert "acme" in http("GET", f"{w.web_url}/admin/v2/tenants")[1]
        assert http("GET", f"{w.web_url}/admin/v2/namespaces/acme")[1] == ["acme/orders"]
        assert http("GET", f"{w.web_url}/admin/v2/namespaces/acme/orders/messageTTL")[1] == 120
        assert http("GET", f"{w.web_url}/admin/v2/persistent/acme/orders/events/partitions")[1] \
            == {"partitions": 2}

        for broker, value in ((w, b"west"), (e, b"east")):   # each cluster stores its own copy
            client = pulsar.Client(broker.service_url, operation_timeout_seconds=60)
            try:
                consumer = client.subscribe("persistent://acme/orders/events", "audit",
                                            initial_position=pulsar.InitialPosition.Earliest)
                client.create_producer("persistent://acme/orders/events").send(value)
                assert consumer.receive(timeout_millis=30000).data() == value
            finally:
                client.close()

        assert zk.exists(f"/{shared}/admin/policies/acme/orders")
        assert zk.exists(f"/{shared}/admin/partitioned-topics/persistent/acme/orders/events")
        assert zk.exists(f"/{shared}/admin/clusters/pulsard-cluster")
        assert not zk.exists(f"/{shared}/managed-ledgers") and not zk.exists(f"/{shared}/namespace")
        for local in (east.chroot, west.chroot):
            assert not zk.exists(f"/{local}/admin/policies")
            assert not zk.exists(f"/{local}/admin/partitioned-topics")
            ledgers = zk.get_children(f"/{local}/managed-ledgers")
            assert len([name for name in ledgers if "acme" in name]) == 2   # the two partitions (and heartbeats)
            assert zk.get_children(f"/{local}/loadbalance/brokers")
            assert zk.exists(f"/{local}/namespace/acme/orders")
    finally:
        zk.stop()
        zk.close()
        east.stop()
        west.stop()
