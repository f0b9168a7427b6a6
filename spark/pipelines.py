"""Three pipelines over pulsard through the connector's "pulsar" data source:

- export: a batch read of a topic range (offsets "earliest"/"latest" or per-topic JSON ids, or
  a starting publish time in ms) into a DataFrame, written as Parquet;
- aggregate: a Structured Streaming job counting events per key in event-time windows and
  writing each updated count, as JSON, to another topic through the connector's sink;
- publish: a DataFrame of rows with a key, properties and an event time written to a topic.

The sink is always given its topic as a `__topic` column: connector 3.1.1.4's `topic` option
fails on Spark 3.2+ ("Literal must have a corresponding value to string").

Run one with `python -m spark.pipelines {export,aggregate,publish} --help`.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession, functions as F
from pyspark.sql.streaming import StreamingQuery

from .session import pulsar_session


@dataclass(frozen=True)
class Pulsar:
    """Where the broker is: its binary service URL and its HTTP (admin) URL."""

    service_url: str = "pulsar://127.0.0.1:6650"
    admin_url: str = "http://127.0.0.1:8080"

    def options(self) -> dict[str, str]:
        return {"service.url": self.service_url, "admin.url": self.admin_url}


def topic_option(topic: str) -> dict[str, str]:
    """One topic, a comma-separated list, or a pattern (a name holding a regex character)."""
    if any(ch in topic for ch in "*[]()|"):
        return {"topicsPattern": topic}
    return {"topics" if "," in topic else "topic": topic}


def read_range(spark: SparkSession, pulsar: Pulsar, topic: str, starting: str = "earliest",
               ending: str = "latest", starting_time: int | None = None) -> DataFrame:
    """Messages of topic from an offset (or a publish time, in ms since the epoch) to an
    offset: the payload's columns plus __key, __topic, __messageId, __publishTime, __eventTime
    and __messageProperties. (Connector 3.1.1.4 knows no endingTime.)"""
    reader = spark.read.format("pulsar").options(**pulsar.options(), **topic_option(topic))
    reader = reader.option("startingTime", str(starting_time)) if starting_time is not None \
        else reader.option("startingOffsets", starting)
    return reader.option("endingOffsets", ending).option("failOnDataLoss", "true").load()


def export(spark: SparkSession, pulsar: Pulsar, topic: str, parquet_dir: str, **bounds) -> int:
    """Write a topic range as Parquet; returns the rows written."""
    frame = read_range(spark, pulsar, topic, **bounds)
    frame.write.mode("overwrite").parquet(parquet_dir)
    return spark.read.parquet(parquet_dir).count()


def windowed_counts(spark: SparkSession, pulsar: Pulsar, source: str, sink: str,
                    checkpoint_dir: str, window: str = "1 minute",
                    trigger: str = "1 second") -> StreamingQuery:
    """Count events per key and event-time window, publishing every updated count to sink as
    {"key", "window_start", "count"} (window_start in UTC) keyed by "key@window_start"; resumes
    from checkpoint_dir."""
    events = (spark.readStream.format("pulsar").options(**pulsar.options(), **topic_option(source))
              .option("startingOffsets", "earliest").option("failOnDataLoss", "true").load())
    key = F.col("__key").cast("string")
    counts = events.groupBy(key.alias("key"), F.window("__eventTime", window).alias("window")).count()
    window_start = F.date_format("window.start", "yyyy-MM-dd'T'HH:mm:ss")
    updates = counts.select(
        F.lit(sink).alias("__topic"),
        F.concat_ws("@", "key", window_start).alias("__key"),
        F.to_json(F.struct("key", window_start.alias("window_start"), "count")).alias("value"),
    )
    return (updates.writeStream.outputMode("update").format("pulsar").options(**pulsar.options())
            .option("checkpointLocation", checkpoint_dir)
            .trigger(processingTime=trigger).start())


def publish(frame: DataFrame, pulsar: Pulsar, topic: str) -> None:
    """Write rows to topic: `value` is the payload, optional `__key` (string or binary),
    `__eventTime` (ms since the epoch, a long: 3.1.1.4 would send a timestamp column's
    microseconds) and `__messageProperties` (map<string,string>, written by the 4.x connectors;
    3.1.1.4 drops it) its metadata."""
    (frame.withColumn("__topic", F.lit(topic))
     .write.format("pulsar").options(**pulsar.options()).save())


#: What `publish` reads from each JSON line.
JSON_LINE = "value STRING, key STRING, properties MAP<STRING, STRING>"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m spark.pipelines", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--service-url", default=Pulsar.service_url)
    parser.add_argument("--admin-url", default=Pulsar.admin_url)
    jobs = parser.add_subparsers(dest="job", required=True)
    exporting = jobs.add_parser("export", help="a topic range to Parquet")
    exporting.add_argument("topic")
    exporting.add_argument("parquet_dir")
    exporting.add_argument("--starting", default="earliest", help="earliest, latest or JSON ids")
    exporting.add_argument("--ending", default="latest", help="earliest, latest or JSON ids")
    exporting.add_argument("--starting-time", type=int, help="publish time (ms), instead of --starting")
    aggregating = jobs.add_parser("aggregate", help="windowed counts per key, to another topic")
    aggregating.add_argument("source")
    aggregating.add_argument("sink")
    aggregating.add_argument("checkpoint_dir")
    aggregating.add_argument("--window", default="1 minute")
    publishing = jobs.add_parser("publish", help="JSON lines (value, key, properties) to a topic")
    publishing.add_argument("json_lines")
    publishing.add_argument("topic")
    return parser


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    pulsar = Pulsar(args.service_url, args.admin_url)
    spark = pulsar_session(f"pulsard-{args.job}")
    try:
        if args.job == "export":
            rows = export(spark, pulsar, args.topic, args.parquet_dir, starting=args.starting,
                          ending=args.ending, starting_time=args.starting_time)
            print(f"{rows} rows written to {args.parquet_dir}")
        elif args.job == "aggregate":
            windowed_counts(spark, pulsar, args.source, args.sink, args.checkpoint_dir,
                            args.window).awaitTermination()
        else:
            lines = spark.read.schema(JSON_LINE).json(args.json_lines)
            publish(lines.select("value", F.col("key").alias("__key"),
                                 F.expr("unix_millis(current_timestamp())").alias("__eventTime"),
                                 F.col("properties").alias("__messageProperties")),
                    pulsar, args.topic)
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
