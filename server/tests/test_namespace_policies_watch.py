"""NamespacePolicies keeps decoded documents; NamespacePoliciesWatch finds the ones changed
elsewhere, and a namespace's changed Policies reach its loaded topics, and only its; an
unchanged one costs no pass over the topics."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace

from server.policies.applied import NamespacePoliciesWatch
from server.policies.namespace_policies import NamespacePolicies
from server.topics.topic_name import TopicName


class CountingStore:
    """The metadata store's get/put/delete over a dict, counting reads."""

    def __init__(self) -> None:
        self.nodes: dict[str, tuple[bytes, int]] = {}
        self.reads = 0

    async def get(self, path: str) -> tuple[bytes, int] | None:
        self.reads += 1
        return self.nodes.get(path)

    async def put(self, path: str, value: bytes, expected_version: int | None = None) -> int:
        version = self.nodes[path][1] + 1 if path in self.nodes else 0
        self.nodes[path] = (value, version)
        return version

    async def delete(self, path: str, expected_version: int | None = None) -> None:
        del self.nodes[path]

    def write_elsewhere(self, namespace: str, document: dict) -> None:
        """As another broker or the namespace-policies tool would: not through this broker."""
        self.nodes[f"/admin/policies/{namespace}"] = (json.dumps(document).encode(), 9)


class FakeBroker:
    def __init__(self, names: list[str]) -> None:
        self.store = CountingStore()
        for namespace in ("public/a", "public/b"):
            self.store.write_elsewhere(namespace, {"message_ttl_in_seconds": 1})
        self.policies = NamespacePolicies(self.store)
        self._topics = [SimpleNamespace(name=TopicName.parse(name)) for name in names]
        self.refreshed: list[str] = []
        self.passes = 0

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
    broker.store.write_elsewhere("public/b", {"message_ttl_in_seconds": 2})
    await watch.check()
    assert broker.refreshed == ["persistent://public/b/t3"]


async def test_a_namespace_without_a_document_costs_no_pass_each_round() -> None:
    """As this broker's heartbeat namespace, which has no Policies: nothing changes there."""
    broker = FakeBroker(["public/none/t1"])
    watch = NamespacePoliciesWatch(broker)
    await watch.check()
    await watch.check()
    assert broker.refreshed == [] and broker.passes == 0


async def test_shared_documents_are_read_once_and_dropped_by_a_change() -> None:
    broker = FakeBroker([])
    policies = broker.policies
    first = await policies.shared("public/a")
    reads = broker.store.reads
    assert await policies.shared("public/a") is first and broker.store.reads == reads
    await policies.update("public/a", message_ttl_in_seconds=5)
    assert (await policies.shared("public/a"))["message_ttl_in_seconds"] == 5
    broker.store.write_elsewhere("public/a", {"message_ttl_in_seconds": 7})
    assert (await policies.shared("public/a"))["message_ttl_in_seconds"] == 5   # until the watch
    await NamespacePoliciesWatch(broker).check()
    assert (await policies.shared("public/a"))["message_ttl_in_seconds"] == 7
    await policies.delete("public/a")
    assert await policies.shared("public/a") is None
    assert await policies.shared("public/none") is None and await policies.shared("public/none") is None


class SlowStore(CountingStore):
    """Reads of public/a wait for `answer`: loads arriving together find a read in flight."""

    def __init__(self) -> None:
        super().__init__()
        self.answer = asyncio.Event()
        self.waiting = 0

    async def get(self, path: str) -> tuple[bytes, int] | None:
        if path.endswith("/public/a"):
            self.waiting += 1
            await self.answer.wait()
        return await super().get(path)


async def test_loads_arriving_together_share_one_read_unless_a_write_came_between() -> None:
    store = SlowStore()
    store.write_elsewhere("public/a", {"message_ttl_in_seconds": 1})
    policies = NamespacePolicies(store)
    together = [asyncio.ensure_future(policies.shared("public/a")) for _ in range(50)]
    while not store.waiting:
        await asyncio.sleep(0)
    together[0].cancel()   # one gives up: the others still get the read
    store.write_elsewhere("public/b", {"message_ttl_in_seconds": 2})
    await policies.update("public/b", message_ttl_in_seconds=3)   # a write: later loads read afresh
    later = asyncio.ensure_future(policies.shared("public/a"))
    while store.waiting < 2:
        await asyncio.sleep(0)
    store.answer.set()
    documents = await asyncio.gather(*together[1:], later)
    assert all(d == {"message_ttl_in_seconds": 1} for d in documents) and together[0].cancelled()
    assert store.reads == 3   # the shared read, the update's own, and the read begun after it
    assert await policies.shared("public/a") is documents[-1] and store.reads == 3
