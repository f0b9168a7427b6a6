"""The heartbeat namespace is named after the broker, as Pulsar names it."""

from __future__ import annotations

from server.config import BrokerConfig
from server.heartbeat import health_check_topic, heartbeat_namespace, is_heartbeat_namespace
from server.policies.namespace_policies import policies_path


def test_v1_and_v2_names_carry_cluster_advertised_host_and_web_port():
    config = BrokerConfig(cluster_name="east", advertised_address="broker-1.example", web_service_port=8081)
    assert heartbeat_namespace(config, v2=False) == "pulsar/east/broker-1.example:8081"
    assert heartbeat_namespace(config, v2=True) == "pulsar/broker-1.example:8081"
    assert str(health_check_topic(config, v2=False)) == "persistent://pulsar/east/broker-1.example:8081/healthcheck"
    assert health_check_topic(config, v2=False).namespace == "pulsar/east/broker-1.example:8081"


def test_a_tls_only_broker_is_named_by_its_tls_web_port():
    config = BrokerConfig(web_service_port=0, web_service_port_tls=8443)
    assert heartbeat_namespace(config, v2=True) == "pulsar/127.0.0.1:8443"


def test_only_this_brokers_heartbeat_namespaces_are_recognised():
    config = BrokerConfig(web_service_port=8080)
    assert is_heartbeat_namespace(config, "pulsar/standalone/127.0.0.1:8080")
    assert is_heartbeat_namespace(config, "pulsar/127.0.0.1:8080")
    assert not is_heartbeat_namespace(config, "pulsar/127.0.0.1:9090")
    assert not is_heartbeat_namespace(config, "pulsar/system")


def test_v1_namespaces_have_policies_where_pulsar_keeps_them():
    assert policies_path("pulsar/standalone/127.0.0.1:8080") == "/admin/policies/pulsar/standalone/127.0.0.1:8080"
    assert policies_path("public/default") == "/admin/policies/public/default"
