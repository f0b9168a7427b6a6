"""This broker's heartbeat namespace, where Pulsar's broker health check writes and reads.

Pulsar names it after the broker (NamespaceService.getHeartbeatNamespace): pulsar/<cluster>/
<host>:<web port>, a V1 name (topicVersion V1, the default), or pulsar/<host>:<web port> (V2).
Like Pulsar's, it has no Policies document, so no namespace listing shows it; a topic in it is
created on first use whatever the auto-creation rules say, and only this broker serves it.
A V1 topic name keeps cluster and namespace together in TopicName's namespace part.
"""

from __future__ import annotations

from server.config import BrokerConfig
from server.topics.topic_name import TopicName

TENANT = "pulsar"
HEALTH_CHECK_TOPIC = "healthcheck"


def heartbeat_namespace(config: BrokerConfig, v2: bool) -> str:
    broker = f"{config.advertised_host}:{config.web_service_port or config.web_service_port_tls}"
    return f"{TENANT}/{broker}" if v2 else f"{TENANT}/{config.cluster_name}/{broker}"


def is_heartbeat_namespace(config: BrokerConfig, namespace: str) -> bool:
    return namespace in (heartbeat_namespace(config, False), heartbeat_namespace(config, True))


def health_check_topic(config: BrokerConfig, v2: bool) -> TopicName:
    """persistent://<heartbeat namespace>/healthcheck"""
    tenant, local = heartbeat_namespace(config, v2).split("/", 1)
    return TopicName("persistent", tenant, local, HEALTH_CHECK_TOPIC)
