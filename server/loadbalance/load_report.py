"""Each broker's load report: Pulsar's LocalBrokerData fields (resource usage, traffic totals,
per-bundle NamespaceBundleStats as lastStats, the owned bundles), written to the broker's
``/loadbalance/brokers/<host:webPort>`` node.

The report is checked every loadBalancerReportUpdateMinIntervalMillis and written when it
moved by more than loadBalancerReportUpdateThresholdPercentage (busiest resource, message rate,
throughput or bundle count) or is older than loadBalancerReportUpdateMaxIntervalMinutes, as
Pulsar decides; a change of the owned bundles is written at once.

Resources as a Python process has them: cpu is this process's CPU time (100 = one core, limit
100 x cores), memory its resident set (MB, limit the machine's memory), directMemory none.
Bandwidth is the broker's message throughput in kbit/s against
loadBalancerOverrideBrokerNicSpeedGbps (unset: no limit, so it weighs nothing).
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any, Awaitable, Callable, Protocol

from server.policies.periodic import PeriodicTask

from .config import LoadBalancerConfig
from .load_data import BrokerLoad, BundleStats, ResourceUsage

log = logging.getLogger(__name__)

_MB = 1024 * 1024
_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


class LocalBundles(Protocol):
    def bundle_stats(self) -> dict[str, BundleStats]:
        """NamespaceBundleStats of every bundle this broker owns, by bundle name."""


class SystemUsage:
    """CPU since the previous sample, resident memory and the machine's memory."""

    def __init__(self) -> None:
        self._cpus = os.cpu_count() or 1
        self._memory_limit = os.sysconf("SC_PHYS_PAGES") * _PAGE_SIZE / _MB
        self._last = (time.monotonic(), _cpu_seconds())

    def sample(self) -> tuple[ResourceUsage, ResourceUsage, ResourceUsage]:
        now, cpu = time.monotonic(), _cpu_seconds()
        then, cpu_then = self._last
        self._last = (now, cpu)
        busy = 100.0 * (cpu - cpu_then) / (now - then) if now > then else 0.0
        return (ResourceUsage(busy, 100.0 * self._cpus), ResourceUsage(_resident_mb(), self._memory_limit),
                ResourceUsage(0.0, self._memory_limit))


def _cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


def _resident_mb() -> float:
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * _PAGE_SIZE / _MB
    except OSError:
        return 0.0


def percent_change(old: float, new: float) -> float:
    if old == 0:
        return 0.0 if new == 0 else float("inf")
    return 100.0 * abs(new - old) / old


class LoadReporter:
    def __init__(self, bundles: LocalBundles, config: LoadBalancerConfig,
                 write: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
        self._bundles = bundles
        self._config = config
        self._write = write
        self._usage = SystemUsage()
        self._written: dict[str, Any] | None = None
        self._task = PeriodicTask("load report", config.report_update_min_interval_millis / 1000, self._check)

    def start(self) -> None:
        self._task.start()

    async def stop(self) -> None:
        await self._task.stop()

    def current(self) -> dict[str, Any]:
        """The LocalBrokerData load fields as of now."""
        stats = self._bundles.bundle_stats()
        cpu, memory, direct = self._usage.sample()
        total = {name: sum(getattr(s, name) for s in stats.values())
                 for name in ("msgThroughputIn", "msgThroughputOut", "msgRateIn", "msgRateOut")}
        nic_limit = self._config.nic_speed_gbps * 1024 * 1024 if self._config.nic_speed_gbps > 0 else -1.0
        written = set(self._written["bundles"]) if self._written else set()
        return {
            "cpu": cpu.to_json(), "memory": memory.to_json(), "directMemory": direct.to_json(),
            "bandwidthIn": ResourceUsage(total["msgThroughputIn"] * 8 / 1024, nic_limit).to_json(),
            "bandwidthOut": ResourceUsage(total["msgThroughputOut"] * 8 / 1024, nic_limit).to_json(),
            **total,
            "lastUpdate": int(time.time() * 1000),
            "lastStats": {name: s.to_json() for name, s in sorted(stats.items())},
            "numTopics": sum(s.topics for s in stats.values()), "numBundles": len(stats),
            "numConsumers": sum(s.consumerCount for s in stats.values()),
            "numProducers": sum(s.producerCount for s in stats.values()),
            "bundles": sorted(stats), "lastBundleGains": sorted(set(stats) - written),
            "lastBundleLosses": sorted(written - set(stats)),
            "loadReportType": "LocalBrokerData",
        }

    async def write_now(self) -> None:
        report = self.current()
        await self._write(report)
        self._written = report

    async def _check(self) -> None:
        report = self.current()
        reason = self._update_reason(report)
        if reason:
            log.debug("writing the load report: %s", reason)
            await self._write(report)
            self._written = report

    def _update_reason(self, report: dict[str, Any]) -> str:
        """Why the report is to be written now ('' when it is not)."""
        last = self._written
        if last is None:
            return "first report"
        if report["lastUpdate"] - last["lastUpdate"] > self._config.report_update_max_interval_minutes * 60_000:
            return "loadBalancerReportUpdateMaxIntervalMinutes passed"
        before, now = BrokerLoad.from_json("", last), BrokerLoad.from_json("", report)
        change = max(100.0 * abs(before.max_usage() - now.max_usage()),
                     percent_change(last["msgRateIn"] + last["msgRateOut"], report["msgRateIn"] + report["msgRateOut"]),
                     percent_change(last["msgThroughputIn"] + last["msgThroughputOut"],
                                    report["msgThroughputIn"] + report["msgThroughputOut"]),
                     percent_change(last["numBundles"], report["numBundles"]))
        if change > self._config.report_update_threshold_percentage:
            return f"changed by {change:.0f} %"
        return ""
