"""A local Spark session with the pulsar-spark connector on its classpath.

Spark resolves the connector itself from Maven Central (spark.jars.packages with
ivysettings.xml, into the Ivy cache ~/.ivy2) under the coordinate pinned here: 3.1.1.4, the newest release Maven Central serves,
which runs on pyspark 3.4.x (pyproject's "spark" extra). PULSARD_SPARK_CONNECTOR names another
coordinate or a jar file instead, e.g. io.streamnative.connectors:pulsar-spark-connector_2.13:4.1.1.0
with pyspark 4.1 where a repository serves that line.
"""

from __future__ import annotations

import os
from pathlib import Path

from pyspark.sql import SparkSession

#: The connector release that pairs with the pinned pyspark 3.4.x (Scala 2.12).
CONNECTOR_PACKAGE = "io.streamnative.connectors:pulsar-spark-connector_2.12:3.1.1.4"
CONNECTOR_ENV = "PULSARD_SPARK_CONNECTOR"
#: Maven Central alone, never ~/.m2 (see the file).
IVY_SETTINGS = Path(__file__).with_name("ivysettings.xml")
#: Where Spark's Ivy resolution keeps the jars it fetched (spark.jars.ivy left at its default).
IVY_JARS = Path.home() / ".ivy2" / "jars"


def connector() -> str:
    return os.environ.get(CONNECTOR_ENV) or CONNECTOR_PACKAGE


def cached_jar(coordinate: str) -> Path:
    """The file Ivy stores a group:artifact:version under (it exists once resolved)."""
    group, artifact, version = coordinate.split(":")
    return IVY_JARS / f"{group}_{artifact}-{version}.jar"


def pulsar_session(app_name: str, master: str = "local[2]") -> SparkSession:
    """Window starts and other timestamps print in UTC (spark.sql.session.timeZone)."""
    source = connector()
    builder = SparkSession.builder.master(master).appName(app_name)
    if source.endswith(".jar"):
        builder = builder.config("spark.jars", source)
    else:
        builder = (builder.config("spark.jars.packages", source)
                   .config("spark.jars.ivySettings", str(IVY_SETTINGS)))
    session = (
        builder
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("WARN")
    return session
