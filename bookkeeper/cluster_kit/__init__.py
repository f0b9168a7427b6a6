"""A local ZooKeeper + BookKeeper cluster of real Java processes (tests, and users trying
cluster mode): ``python -m bookkeeper.cluster_kit --bookies 3``."""

from .cluster import LocalCluster
from .jars import ToolchainError, ensure_jars

__all__ = ["LocalCluster", "ToolchainError", "ensure_jars"]
