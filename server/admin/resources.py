"""The admin REST API's resources: `admin_routes` assembles the route tables of the resource
modules and `bootstrap` creates what Pulsar standalone creates at its first start."""

from __future__ import annotations

from server.broker_service import BrokerService
from server.transactions.coordinator.service import CLUSTER_COORDINATORS, STANDALONE_COORDINATORS
from server.web import RouteDef

from . import (brokers, clusters, health_check, namespaces, permissions, resource_groups, schemas, subscriptions,
               tenants, topic_policies, topics, transactions)
from .topic_access import TopicAccess


class AdminResources:
    """The stores behind the REST resources, shared by their route tables."""

    def __init__(self, broker: BrokerService) -> None:
        self.broker = broker
        self.clusters = clusters.Clusters(broker)
        self.tenants = tenants.Tenants(self.clusters)
        self.namespaces = namespaces.Namespaces(broker, self.tenants)
        self.topics = TopicAccess(broker, self.namespaces)

    async def bootstrap(self) -> None:
        """The local cluster and the default tenants and namespaces exist from the first start
        (and, for a data directory of an older version, from this one)."""
        await self.clusters.ensure_local()
        await self.tenants.ensure_defaults()
        await self.namespaces.ensure_defaults()
        if self.broker.transactions is not None:   # standalone: 1 coordinator; a cluster: 16
            await self.broker.transactions.create_assign_topic(
                STANDALONE_COORDINATORS if self.broker.served is None else CLUSTER_COORDINATORS)


def admin_routes(broker: BrokerService, resources: AdminResources) -> list[RouteDef]:
    return [
        *brokers.routes(broker, resources.topics),
        *health_check.routes(broker),
        *clusters.routes(resources.clusters, resources.tenants.using_cluster),
        *tenants.routes(resources.tenants),
        *namespaces.routes(resources.namespaces),
        *resource_groups.routes(broker, resources.namespaces),
        *permissions.routes(resources.namespaces, resources.topics),
        *schemas.routes(broker.schemas, resources.namespaces),
        *subscriptions.routes(resources.topics),
        *topics.routes(resources.topics),
        *topic_policies.routes(resources.topics),
        *transactions.routes(broker, resources.topics),
    ]
