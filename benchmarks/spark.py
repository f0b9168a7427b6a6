"""Rows per second of the Spark pipelines (spark/pipelines.py) against a fresh pulsard.

    python benchmarks/spark.py [--rows 200000]

(Spark resolves the pinned connector, 3.1.1.4, from Maven Central; PULSARD_SPARK_CONNECTOR
names another coordinate or a jar file)

- batch read: `read_range` of the whole topic collected to the driver, wall time from the
  query's start (planning, offset lookups and the read itself); the first read in a fresh JVM
  (mostly the connector's Scala reflection over its config classes, ~20 s on 2 busy cores)
  and a second one are shown apart;
- streaming: `windowed_counts` from a checkpoint-less start to processAllAvailable(), i.e.
  the source read, the aggregation and the sink's writes of the updated counts.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pulsar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from compat_tests.broker import Broker  # noqa: E402
from spark.pipelines import Pulsar, read_range, windowed_counts  # noqa: E402
from spark.session import connector, pulsar_session  # noqa: E402

KEYS = 10


def produce(service_url: str, topic: str, rows: int) -> None:
    client = pulsar.Client(service_url)
    producer = client.create_producer(topic, schema=pulsar.schema.StringSchema(), batching_enabled=True,
                                      batching_max_messages=1000, block_if_queue_full=True)
    for i in range(rows):
        producer.send_async(f"event-{i}", None, partition_key=f"k{i % KEYS}",
                            event_timestamp=1_700_000_000_000 + i)
    producer.flush()
    client.close()


def batch_read(spark, pulsar_at: Pulsar, topic: str, rows: int) -> float:
    """Seconds to collect the whole topic's values to the driver."""
    started = time.perf_counter()
    got = len(read_range(spark, pulsar_at, topic).select("value").collect())
    assert got == rows, f"read {got} of {rows} rows"
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="pulsard-spark-bench-"))
    broker = Broker(work, {})
    broker.start()
    spark = pulsar_session("pulsard-spark-benchmark")
    try:
        pulsar_at = Pulsar(broker.service_url, broker.web_url)
        topic = "persistent://public/default/spark-bench"
        produce(broker.service_url, topic, args.rows)
        first_s, batch_s = (batch_read(spark, pulsar_at, topic, args.rows) for _ in range(2))
        started = time.perf_counter()
        query = windowed_counts(spark, pulsar_at, topic, topic + "-counts", str(work / "checkpoint"))
        query.processAllAvailable()
        stream_s = time.perf_counter() - started
        query.stop()
        print(f"connector: {connector()}; pyspark {spark.version}; {args.rows} rows of ~20 bytes")
        print(f"batch read, first: {args.rows / first_s:10,.0f} rows/s ({first_s:.2f} s, a fresh JVM)")
        print(f"batch read:        {args.rows / batch_s:10,.0f} rows/s ({batch_s:.2f} s)")
        print(f"streaming:         {args.rows / stream_s:10,.0f} rows/s ({stream_s:.2f} s, windowed counts to a topic)")
    finally:
        spark.stop()
        broker.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
