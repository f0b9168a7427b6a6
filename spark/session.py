"""A local Spark session with the pulsar-spark connector on its classpath.

The connector is resolved by Spark itself from Maven Central (spark.jars.packages) under the
coordinate pinned here, or taken from a jar file named by PULSARD_SPARK_CONNECTOR (a path or
another coordinate), e.g. where Maven Central cannot serve it.
"""

from __future__ import annotations

import os

from pyspark.sql import SparkSession

#: The connector release that pairs with the pinned pyspark (pyproject's "spark" extra).
CONNECTOR_PACKAGE = "io.streamnative.connectors:pulsar-spark-connector_2.13:4.1.1.0"
CONNECTOR_ENV = "PULSARD_SPARK_CONNECTOR"


def connector() -> str:
    return os.environ.get(CONNECTOR_ENV) or CONNECTOR_PACKAGE


def pulsar_session(app_name: str, master: str = "local[2]") -> SparkSession:
    source = connector()
    option = "spark.jars" if source.endswith(".jar") else "spark.jars.packages"
    session = (
        SparkSession.builder.master(master).appName(app_name)
        .config(option, source)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("WARN")
    return session
