"""What a bundle holds on this broker: its loaded topics, and the transaction coordinators whose
assign-topic partition falls in it. Releasing a bundle (unload, split, lost session) closes
those coordinators as it unloads the topics, so the next owner recovers from a log nobody
writes any more."""

from __future__ import annotations

from server.broker_service import BrokerService
from server.topics.topic_name import TopicName


class BundleUnits:
    def __init__(self, broker: BrokerService) -> None:
        self._broker = broker

    def loaded_topic_names(self) -> list[TopicName]:
        coordinators = self._broker.transactions
        served = coordinators.served_partitions() if coordinators is not None else []
        return [*self._broker.loaded_topic_names(), *served]

    async def unload_topic(self, name: TopicName) -> bool:
        coordinators = self._broker.transactions
        if coordinators is not None and await coordinators.close_coordinator(name):
            return True
        return await self._broker.unload_topic(name)
