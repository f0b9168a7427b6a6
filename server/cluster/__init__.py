"""Cluster mode: several pulsard brokers on one ZooKeeper + BookKeeper cluster, namespace
bundles owned through ephemeral ZooKeeper nodes laid out as Pulsar lays them out."""
