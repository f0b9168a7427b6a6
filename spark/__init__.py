"""Spark pipelines over pulsard through the stock pulsar-spark connector."""
