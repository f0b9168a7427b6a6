"""Write latency buckets: each add lands in exactly one non-cumulative bucket, as Pulsar's; a
run of adds counts as that many adds of its latency."""

from managed_ledger.latency import WRITE_LATENCY_BOUNDS_MS, LatencyHistogram


def test_each_latency_lands_in_the_first_bucket_that_holds_it():
    histogram = LatencyHistogram()
    for latency in (0.1, 0.5, 0.7, 3.0, 10.0, 999.0, 1000.0, 2500.0):
        histogram.record(latency, 1)
    by_bound = dict(zip([*WRITE_LATENCY_BOUNDS_MS, "overflow"], histogram.counts))
    assert by_bound == {0.5: 2, 1.0: 1, 5.0: 1, 10.0: 1, 20.0: 0, 50.0: 0, 100.0: 0, 200.0: 0, 1000.0: 2,
                        "overflow": 1}
    assert histogram.count == 8
    assert histogram.total_ms == 0.1 + 0.5 + 0.7 + 3.0 + 10.0 + 999.0 + 1000.0 + 2500.0


def test_a_run_counts_as_many_adds():
    histogram = LatencyHistogram()
    histogram.record(0.7, 5)
    histogram.record(30.0, 1)
    assert histogram.counts[1] == 5 and histogram.counts[5] == 1
    assert histogram.count == 6
    assert histogram.total_ms == 0.7 * 5 + 30.0
