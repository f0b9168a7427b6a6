"""NamespacePoliciesWatch: a namespace's changed Policies reach its loaded topics, and only
its; an unchanged one costs no pass over the topics."""

from __future__ import annotations

from types import SimpleNamespace

from server.policies.applied import NamespacePoliciesWatch
from server.topics.topic_name import TopicName


class FakeBroker:
    def __init__(self, names: list[str]) -> None:
        self.stamps = {"public/a": b"1", "public/b": b"1"}
        self.policies = SimpleNamespace(stamp=self._stamp)
        self._topics = [SimpleNamespace(name=TopicName.parse(name)) for name in names]
        self.refreshed: list[str] = []
        self.passes = 0

    async def _stamp(self, namespace: str) -> bytes:
        return self.stamps[namespace]

    def loaded_namespaces(self) -> set[str]:
        return {topic.name.namespace for topic in self._topics}

    @property
    def topics(self) -> list:
        self.passes += 1
        return self._topics

    non_persistent_topics: list = []

    async def refresh_policies(self, topic) -> None:
        self.refreshed.append(str(topic.name))


async def test_only_a_changed_namespace_refreshes_its_topics() -> None:
    broker = FakeBroker(["public/a/t1", "public/a/t2", "public/b/t3"])
    watch = NamespacePoliciesWatch(broker)
    await watch.check()   # first sight of each namespace: its topics take the policies
    assert sorted(broker.refreshed) == ["persistent://public/a/t1", "persistent://public/a/t2",
                                        "persistent://public/b/t3"]
    broker.refreshed.clear()
    passes = broker.passes
    await watch.check()
    assert broker.refreshed == [] and broker.passes == passes   # nothing changed: no pass
    broker.stamps["public/b"] = b"2"
    await watch.check()
    assert broker.refreshed == ["persistent://public/b/t3"]
