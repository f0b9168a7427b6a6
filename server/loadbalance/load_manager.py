"""The leader's load manager (Pulsar's ModularLoadManagerImpl): it reads every broker's load
report, keeps each bundle's traffic means, places unowned bundles, and, while this broker
leads, splits bundles grown too big (every loadBalancerSplitIntervalMinutes), sheds load off
overloaded brokers (every loadBalancerSheddingIntervalMinutes) and stores the bundle means
where Pulsar keeps them (every loadBalancerResourceQuotaUpdateIntervalMinutes) so the next
leader starts from them.

A split or an unload is asked of the cluster through `ClusterActions` (the admin API, as
Pulsar's leader uses its admin client): the bundle's owner does it.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import time
from typing import Any, Awaitable, Callable, Protocol

from managed_ledger.errors import MetadataNotFoundError, MetadataStoreError

from server.policies.periodic import PeriodicTask

from .bundle_split import BundleSplitter
from .config import LoadBalancerConfig
from .load_data import BrokerLoad, BundleData, LoadData, broker_time_average, namespace_of
from .placement import forget_placements, select_broker
from .shedder import ThresholdShedder

log = logging.getLogger(__name__)

BROKERS_ROOT = "/loadbalance/brokers"
BUNDLE_DATA_ROOT = "/loadbalance/bundle-data"
BROKER_TIME_AVERAGE_ROOT = "/loadbalance/broker-time-average"
#: Placements re-read the reports at most this often (a burst shares one reading).
REFRESH_S = 1.0


class ClusterActions(Protocol):
    async def split(self, bundle: str, unload: bool) -> None: ...

    async def unload(self, bundle: str) -> None: ...

    async def bundle_count(self, namespace: str) -> int: ...


class LoadManager:
    def __init__(self, store: Any, config: LoadBalancerConfig, actions: ClusterActions) -> None:
        self._store = store
        self._config = config
        self._actions = actions
        self.data = LoadData()
        self._sampled: dict[str, int] = {}   # broker -> lastUpdate of its report already sampled
        self._refreshed = -REFRESH_S
        self._reading = asyncio.Lock()
        self._splitter = BundleSplitter()
        self._shedder = ThresholdShedder()
        self._tasks = [PeriodicTask(name, minutes * 60, functools.partial(self._round, name, chore))
                       for name, minutes, chore in (
            ("bundle split", config.split_interval_minutes, self._split_round),
            ("load shedding", config.shedding_interval_minutes, self._shed_round),
            ("bundle data", config.resource_quota_update_interval_minutes, self._store_bundle_data))]

    def leadership_changed(self, leading: bool) -> None:
        for task in self._tasks:
            if leading:
                task.start()
            else:
                asyncio.get_running_loop().create_task(task.stop())

    async def stop(self) -> None:
        for task in self._tasks:
            await task.stop()

    async def choose(self, bundle: str) -> str | None:
        """The broker (id host:webPort) to own the unowned bundle; None when none reported."""
        await self.refresh(REFRESH_S)
        return select_broker(self.data, bundle, self._config.overloaded_threshold_percentage / 100.0,
                             time.monotonic())

    async def refresh(self, max_age_s: float = 0.0) -> None:
        """Read every broker's report; each new report adds a sample to its bundles' means."""
        async with self._reading:
            if time.monotonic() - self._refreshed < max_age_s:
                return
            brokers: dict[str, BrokerLoad] = {}
            for broker in await self._store.children(BROKERS_ROOT):
                stored = await self._store.get(f"{BROKERS_ROOT}/{broker}")
                if stored is not None:
                    brokers[broker] = load = BrokerLoad.from_json(broker, json.loads(stored[0]))
                    if self._sampled.get(broker) != load.last_update:
                        self._sampled[broker] = load.last_update
                        for bundle, stats in load.last_stats.items():
                            (await self._bundle_data(bundle)).update(stats)
            self.data.brokers = brokers
            self._sampled = {b: v for b, v in self._sampled.items() if b in brokers}
            forget_placements(self.data, time.monotonic())
            self._refreshed = time.monotonic()

    async def _bundle_data(self, bundle: str) -> BundleData:
        """The bundle's means: known here, or stored by an earlier leader, or new."""
        if bundle not in self.data.bundles:
            stored = await self._store.get(f"{BUNDLE_DATA_ROOT}/{bundle}")
            self.data.bundles[bundle] = BundleData.from_json(json.loads(stored[0])) if stored else BundleData()
        return self.data.bundles[bundle]

    @staticmethod
    async def _round(name: str, chore: Callable[[], Awaitable[None]]) -> None:
        try:
            await chore()
        except MetadataStoreError as exc:   # ZooKeeper away: the next round runs anyway
            log.warning("%s round skipped: %s", name, exc)

    async def _split_round(self) -> None:
        if not self._config.auto_bundle_split_enabled:
            return
        await self.refresh()
        counts = {namespace_of(b): 0 for load in self.data.brokers.values() for b in load.last_stats}
        for namespace in counts:
            counts[namespace] = await self._actions.bundle_count(namespace)
        for bundle in self._splitter.find(self.data, self._config, counts.__getitem__):
            self.data.bundles.pop(bundle, None)   # not chosen again before its owner reports
            for load in self.data.brokers.values():
                load.last_stats.pop(bundle, None)
            await self._delete(f"{BUNDLE_DATA_ROOT}/{bundle}")
            try:
                await self._actions.split(bundle, self._config.auto_unload_split_bundles_enabled)
            except Exception as exc:  # noqa: BLE001 - the next round sees the bundle again
                log.warning("splitting bundle %s failed: %s", bundle, exc)

    async def _shed_round(self) -> None:
        if not self._config.shedding_enabled:
            return
        await self.refresh()
        now = time.monotonic()
        grace_s = self._config.shedding_grace_period_minutes * 60
        self.data.recently_unloaded = {b: at for b, at in self.data.recently_unloaded.items() if now - at < grace_s}
        overloaded = self._config.overloaded_threshold_percentage / 100.0
        for broker, bundles in self._shedder.find(self.data, self._config).items():
            for bundle in bundles:
                destination = select_broker(self.data, bundle, overloaded, now)
                if destination is None or destination == broker:
                    log.info("not unloading bundle %s: no broker better than its owner %s", bundle, broker)
                    continue
                log.info("ThresholdShedder: unloading bundle %s from broker %s to broker %s", bundle, broker,
                         destination)
                try:
                    await self._actions.unload(bundle)
                except Exception as exc:  # noqa: BLE001 - the next round tries again
                    log.warning("unloading bundle %s failed: %s", bundle, exc)
                    self.data.preallocated.pop(bundle, None)
                    continue
                self.data.recently_unloaded[bundle] = now

    async def _store_bundle_data(self) -> None:
        """BundleData at /loadbalance/bundle-data/<bundle>, TimeAverageBrokerData at
        /loadbalance/broker-time-average/<broker>."""
        await self.refresh()
        for bundle, data in list(self.data.bundles.items()):
            await self._store.put(f"{BUNDLE_DATA_ROOT}/{bundle}", json.dumps(data.to_json()).encode())
        for broker, load in self.data.brokers.items():
            average = broker_time_average([self.data.bundle(b) for b in load.bundles])
            await self._store.put(f"{BROKER_TIME_AVERAGE_ROOT}/{broker}", json.dumps(average).encode())

    async def _delete(self, path: str) -> None:
        try:
            await self._store.delete(path)
        except MetadataNotFoundError:
            pass
