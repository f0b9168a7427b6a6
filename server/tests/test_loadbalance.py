"""The load balancer's decisions on made-up load data: placement (LeastLongTermMessageRate with
the namespace spread and pending placements), which bundles split and where, ThresholdShedder,
when a load report is written. Real brokers: compat_tests/test_cluster_loadbalance.py."""

from __future__ import annotations

import dataclasses

from server.loadbalance.bundle_split import MB, BundleSplitter, split_point
from server.loadbalance.config import LoadBalancerConfig
from server.loadbalance.load_data import BrokerLoad, BundleData, BundleStats, LoadData, ResourceUsage
from server.loadbalance.load_report import LoadReporter, percent_change
from server.loadbalance.placement import PREALLOCATION_TTL_S, forget_placements, select_broker
from server.loadbalance.shedder import ThresholdShedder

CONFIG = LoadBalancerConfig()


def bundle_data(rate: float, throughput: float = 0.0, topics: int = 1) -> BundleData:
    data = BundleData()
    data.update(BundleStats(msgRateIn=rate, msgThroughputIn=throughput, topics=topics))
    return data


def load_data(**brokers: list[str]) -> LoadData:
    return LoadData({name: BrokerLoad(name, bundles=set(bundles)) for name, bundles in brokers.items()})


def test_placement_spreads_a_namespace_then_prefers_the_lowest_long_term_rate():
    data = load_data(a=["t/ns/0x0_0x1", "t/other/0x0_0x1"], b=[], c=["t/other/0x1_0x2"])
    data.bundles = {"t/other/0x0_0x1": bundle_data(10), "t/other/0x1_0x2": bundle_data(500)}
    # b and c serve no bundle of t/ns; c carries more traffic than b
    assert select_broker(data, "t/ns/0x1_0x2", 0.85, now=0) == "b"
    assert data.preallocated["t/ns/0x1_0x2"] == ("b", 0)
    # now only c serves none of t/ns, however busy it is
    assert select_broker(data, "t/ns/0x2_0x3", 0.85, now=0) == "c"
    # asked again before the chosen broker reported it: the same broker
    assert select_broker(data, "t/ns/0x1_0x2", 0.85, now=1) == "b"


def test_an_overloaded_broker_is_chosen_last_and_placements_are_forgotten_once_reported():
    data = load_data(a=[], b=[])
    data.brokers["a"].cpu = ResourceUsage(95, 100)
    assert select_broker(data, "t/ns/0x0_0x1", 0.85, now=0) == "b"
    data.brokers["b"].bundles.add("t/ns/0x0_0x1")   # b reported taking it
    assert select_broker(data, "t/other/0x0_0x1", 0.85, now=0) == "b"
    # the namespace spread comes first (as in Pulsar): a serves none of t/ns
    assert select_broker(data, "t/ns/0x1_0x2", 0.85, now=0) == "a"
    forget_placements(data, now=1)
    assert list(data.preallocated) == ["t/other/0x0_0x1", "t/ns/0x1_0x2"]
    forget_placements(data, now=PREALLOCATION_TTL_S + 1)   # never taken
    assert data.preallocated == {}


def test_pending_placements_count_at_the_default_rate_so_a_burst_spreads():
    data = load_data(a=[], b=[])
    chosen = [select_broker(data, f"t/ns{i}/0x0_0x1", 0.85, now=0) for i in range(6)]
    assert sorted(chosen) == ["a"] * 3 + ["b"] * 3


def test_bundles_split_past_the_topic_count_or_the_traffic_limits_up_to_the_maximum():
    config = dataclasses.replace(CONFIG, namespace_bundle_max_topics=5, namespace_maximum_bundles=3)
    data = load_data(a=["t/ns/0x0_0x1", "t/ns/0x1_0x2", "t/ns/0x2_0x3", "t/hot/0x0_0x1", "t/one/0x0_0x1"])
    stats = data.brokers["a"].last_stats
    stats.update({"t/ns/0x0_0x1": BundleStats(topics=6), "t/ns/0x1_0x2": BundleStats(topics=9),
                  "t/ns/0x2_0x3": BundleStats(topics=2), "t/hot/0x0_0x1": BundleStats(topics=2),
                  "t/one/0x0_0x1": BundleStats(topics=1)})
    data.bundles["t/hot/0x0_0x1"] = bundle_data(10, throughput=101 * MB, topics=2)
    data.bundles["t/one/0x0_0x1"] = bundle_data(40000, topics=1)   # one topic: never split
    counts = {"t/ns": 2, "t/hot": 1, "t/one": 1}
    # t/ns may grow by one bundle only
    assert BundleSplitter().find(data, config, counts.__getitem__) == ["t/ns/0x0_0x1", "t/hot/0x0_0x1"]


def test_split_points():
    assert split_point("range_equally_divide", 0, 0xFFFFFFFF, []) == 0x7FFFFFFF
    assert split_point("range_equally_divide", 5, 6, []) is None
    assert split_point("topic_count_equally_divide", 0, 1000, [100, 300, 200, 900]) == 250
    assert split_point("topic_count_equally_divide", 0, 1000, [100]) is None
    assert split_point("topic_count_equally_divide", 100, 1000, [100, 100]) is None   # no cut inside


def test_threshold_shedder_takes_the_hottest_bundles_off_the_broker_above_the_mean():
    config = dataclasses.replace(CONFIG, bundle_unload_min_throughput_threshold_mbytes=1)
    data = load_data(a=["t/ns/1", "t/ns/2", "t/ns/3"], b=["t/ns/4"], c=[])
    data.brokers["a"].bandwidthIn = ResourceUsage(90, 100)
    data.brokers["a"].last_stats = {f"t/ns/{i}": BundleStats(msgThroughputIn=tp * MB)
                                    for i, tp in ((1, 2), (2, 30), (3, 10))}
    data.bundles = {f"t/ns/{i}": bundle_data(1, throughput=tp * MB) for i, tp in ((1, 2), (2, 30), (3, 10))}
    # mean 30 %: a is 60 % over it, less the 10 % threshold, plus 5 %: 55 % of 42 MB/s to go
    assert ThresholdShedder().find(data, config) == {"a": ["t/ns/2"]}
    data.recently_unloaded["t/ns/2"] = 0
    assert ThresholdShedder().find(data, config) == {"a": ["t/ns/3", "t/ns/1"]}
    data.brokers["a"].bundles = {"t/ns/3"}   # a sole bundle is not shed
    assert ThresholdShedder().find(data, config) == {}
    config = dataclasses.replace(config, bundle_unload_min_throughput_threshold_mbytes=100)
    data.brokers["a"].bundles = {"t/ns/1", "t/ns/3"}
    assert ThresholdShedder().find(data, config) == {}   # too little traffic to bother


def test_usage_history_smooths_a_spike():
    config = dataclasses.replace(CONFIG, bundle_unload_min_throughput_threshold_mbytes=0)
    data = load_data(a=["t/ns/1", "t/ns/2"], b=[])
    data.bundles = {"t/ns/1": bundle_data(1, MB), "t/ns/2": bundle_data(1, MB)}
    data.brokers["a"].last_stats = {"t/ns/1": BundleStats(msgThroughputIn=MB)}
    shedder = ThresholdShedder()
    data.brokers["a"].cpu = data.brokers["b"].cpu = ResourceUsage(10, 100)
    assert shedder.find(data, config) == {}
    data.brokers["a"].cpu = ResourceUsage(90, 100)   # one report: 0.9 * 10 % + 0.1 * 90 % = 18 %
    assert shedder.find(data, config) == {}


def test_a_load_report_is_written_when_it_moved_past_the_threshold():
    assert percent_change(0, 0) == 0 and percent_change(0, 1) == float("inf") and percent_change(10, 12) == 20

    class Bundles:
        stats = {"t/ns/0x0_0x1": BundleStats(msgRateIn=100, topics=1)}

        def bundle_stats(self):
            return dict(self.stats)

    reporter = LoadReporter(Bundles(), CONFIG, write=None)
    first = reporter.current()
    assert first["numBundles"] == 1 and first["msgRateIn"] == 100 and first["bundles"] == ["t/ns/0x0_0x1"]
    assert first["lastStats"]["t/ns/0x0_0x1"]["msgRateIn"] == 100 and first["loadReportType"] == "LocalBrokerData"
    assert reporter._update_reason(first) == "first report"
    reporter._written = first
    Bundles.stats["t/ns/0x0_0x1"].msgRateIn = 105
    assert reporter._update_reason(reporter.current()) == ""
    Bundles.stats["t/ns/0x0_0x1"].msgRateIn = 150
    assert reporter._update_reason(reporter.current()) == "changed by 50 %"
    Bundles.stats["t/ns/0x0_0x1"].msgRateIn = 100
    later = {**reporter.current(), "lastUpdate": first["lastUpdate"] + 16 * 60_000}
    assert reporter._update_reason(later) == "loadBalancerReportUpdateMaxIntervalMinutes passed"
