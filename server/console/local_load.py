"""A standalone broker's load report for the console's cluster page: the LocalBrokerData fields
a cluster broker publishes (server/loadbalance/load_report.py), from the topics it has loaded.
It owns every namespace, so it lists no bundles."""

from __future__ import annotations

from typing import Any, Callable, Iterable, Protocol

from server.loadbalance.load_report import SystemUsage


class LoadedTopics(Protocol):
    config: Any

    @property
    def topics(self) -> Iterable[Any]: ...

    @property
    def non_persistent_topics(self) -> Iterable[Any]: ...


class LocalLoad:
    def __init__(self, broker: LoadedTopics, version: Callable[[], str]) -> None:
        """`version` is asked when the page is: reading the package's costs the start 15 ms."""
        self._broker = broker
        self._version = version
        self._usage = SystemUsage()   # CPU between two views of the page

    async def reports(self) -> list[dict[str, Any]]:
        config = self._broker.config
        topics = [*self._broker.topics, *self._broker.non_persistent_topics]
        rates = [topic.stats.rates(config.stats_update_frequency_in_secs) for topic in topics]
        subscriptions = [sub for topic in topics for sub in topic.subscriptions.values()]
        cpu, memory, _ = self._usage.sample()
        return [{
            "webServiceUrl": f"http://{config.advertised_host}:{config.web_service_port}",
            "pulsarServiceUrl": config.service_url, "brokerVersionString": self._version(),
            "cpu": cpu.to_json(), "memory": memory.to_json(),
            "msgRateIn": sum(r.msg_rate_in for r in rates), "msgRateOut": sum(r.msg_rate_out for r in rates),
            "msgThroughputIn": sum(r.msg_throughput_in for r in rates),
            "msgThroughputOut": sum(r.msg_throughput_out for r in rates),
            "numTopics": len(topics), "numProducers": sum(len(topic.producers) for topic in topics),
            "numConsumers": sum(len(sub.consumers) for sub in subscriptions), "numBundles": 0, "bundles": [],
        }]
